#include "gpu_backend/reference/model_config.h"

#include <cmath>

namespace kv::gpuref {

std::int64_t ModelConfig::num_params() const {
  const std::int64_t h = hidden;
  const std::int64_t per_layer = 2 * h + static_cast<std::int64_t>(qkv_dim()) * h +
                                 h * q_dim() + 2LL * intermediate * h + h * intermediate;
  return per_layer * num_layers + 2LL * vocab * h + h;
}

Status ModelConfig::validate() const {
  auto bad = [&](const std::string& what) {
    return Status::error("model '" + name + "': " + what);
  };
  if (num_layers < 1 || hidden < 8 || num_heads < 1 || num_kv_heads < 1 || intermediate < 1 ||
      vocab < 1) {
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
  ModelConfig c;
  c.name = name;
  if (name == "tiny") {
    return c;  // the defaults
  }
  if (name == "small") {
    c.num_layers = 4;
    c.hidden = 1024;
    c.num_heads = 8;
    c.num_kv_heads = 2;
    c.head_dim = 128;
    c.intermediate = 2816;
    c.vocab = 32000;
    return c;
  }
  if (name == "llama3-1b") {
    c.num_layers = 16;
    c.hidden = 2048;
    c.num_heads = 32;
    c.num_kv_heads = 8;
    c.head_dim = 64;
    c.intermediate = 8192;
    c.vocab = 128256;
    return c;
  }
  if (name == "llama3-8b") {
    c.num_layers = 32;
    c.hidden = 4096;
    c.num_heads = 32;
    c.num_kv_heads = 8;
    c.head_dim = 128;
    c.intermediate = 14336;
    c.vocab = 128256;
    return c;
  }
  return Status::error("unknown model preset '" + name + "' (known: tiny, small, llama3-1b, llama3-8b)");
}

std::vector<std::string> model_preset_names() { return {"tiny", "small", "llama3-1b", "llama3-8b"}; }

std::uint32_t tensor_id(TensorKind kind, int layer) {
  const auto k = static_cast<std::uint32_t>(kind);
  return k < 16 ? k : k + 16u * static_cast<std::uint32_t>(layer);
}

float uniform_scale(int fan_in) {
  return static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in)));
}

std::vector<float> rope_inv_freq(const ModelConfig& config) {
  std::vector<float> inv(static_cast<std::size_t>(config.head_dim / 2));
  for (std::size_t i = 0; i < inv.size(); ++i) {
    const double exponent = 2.0 * static_cast<double>(i) / config.head_dim;
    inv[i] = static_cast<float>(1.0 / std::pow(config.rope_theta, exponent));
  }
  return inv;
}

}  // namespace kv::gpuref
