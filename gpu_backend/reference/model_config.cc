#include "gpu_backend/reference/model_config.h"

#include "model/catalog/model_shape.h"

#include <cmath>

namespace kv::gpuref {

std::int64_t ModelConfig::num_params() const {
  const std::int64_t h = hidden;
  const std::int64_t per_layer =
      2 * h + static_cast<std::int64_t>(qkv_dim()) * h + h * q_dim() + 2LL * intermediate * h + h * intermediate;
  return per_layer * num_layers + 2LL * vocab * h + h;
}

Status ModelConfig::validate() const {
  auto bad = [&](const std::string& what) { return Status::error("model '" + name + "': " + what); };
  if (num_layers < 1 || hidden < 8 || num_heads < 1 || num_kv_heads < 1 || intermediate < 1 || vocab < 1) {
    return bad("every dimension must be positive");
  }
  if (num_heads % num_kv_heads != 0) return bad("num_heads must be a multiple of num_kv_heads");
  if (head_dim % 8 != 0 || head_dim > 256) return bad("head_dim must be a multiple of 8, <= 256");
  if (hidden % 8 != 0 || intermediate % 8 != 0) {
    return bad("hidden and intermediate must be multiples of 8");
  }
  if (!(rms_eps > 0.0f) || !(rope_theta > 1.0)) return bad("rms_eps and rope_theta must be > 0");
  return Status();
}

StatusOr<ModelConfig> model_preset(const std::string& name) {
  auto shape = find_model_shape(name);
  if (!shape.ok()) return shape.status();
  ModelConfig c;
  c.name = name;
  c.num_layers = shape->layers;
  c.hidden = shape->hidden;
  c.num_heads = shape->heads;
  c.num_kv_heads = shape->kv_heads;
  c.head_dim = shape->head_dim;
  c.intermediate = shape->intermediate;
  c.vocab = shape->vocab;
  return c;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const ModelShape& s : model_shapes()) names.push_back(s.name);
  return names;
}

std::uint32_t tensor_id(TensorKind kind, int layer) {
  const auto k = static_cast<std::uint32_t>(kind);
  return k < 16 ? k : k + 16u * static_cast<std::uint32_t>(layer);
}

float uniform_scale(int fan_in) { return static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in))); }

std::vector<float> rope_inv_freq(const ModelConfig& config) {
  std::vector<float> inv(static_cast<std::size_t>(config.head_dim / 2));
  for (std::size_t i = 0; i < inv.size(); ++i) {
    const double exponent = 2.0 * static_cast<double>(i) / config.head_dim;
    inv[i] = static_cast<float>(1.0 / std::pow(config.rope_theta, exponent));
  }
  return inv;
}

}  // namespace kv::gpuref
