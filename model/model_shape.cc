#include "model/model_shape.h"

namespace kv {

std::int64_t ModelShape::num_params() const {
  const std::int64_t h = hidden;
  const std::int64_t q = static_cast<std::int64_t>(heads) * head_dim;
  const std::int64_t kv = static_cast<std::int64_t>(kv_heads) * head_dim;
  const std::int64_t per_layer = 2 * h + (q + 2 * kv) * h + q * h + 3LL * intermediate * h;
  return per_layer * layers + 2LL * vocab * h + h;
}

const std::vector<ModelShape>& model_shapes() {
  static const std::vector<ModelShape> shapes = {
      // name, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, dtype bytes
      {"tiny", 2, 256, 4, 2, 64, 512, 1024, 2},
      {"small", 4, 1024, 8, 2, 128, 2816, 32000, 2},
      {"llama3-1b", 16, 2048, 32, 8, 64, 8192, 128256, 2},
      {"llama3-8b", 32, 4096, 32, 8, 128, 14336, 128256, 2},
      {"llama3-70b", 80, 8192, 64, 8, 128, 28672, 128256, 2},
  };
  return shapes;
}

StatusOr<ModelShape> find_model_shape(std::string_view name) {
  std::string valid;
  for (const ModelShape& s : model_shapes()) {
    if (s.name == name) return s;
    valid += valid.empty() ? "" : ", ";
    valid += s.name;
  }
  return Status::error("unknown model '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace kv
