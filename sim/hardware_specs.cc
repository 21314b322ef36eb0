#include "sim/hardware_specs.h"

namespace kv::sim {

const std::vector<ModelSpec>& model_presets() {
  static const std::vector<ModelSpec> presets = {
      // name, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, dtype bytes
      {"tiny", 2, 256, 4, 2, 64, 512, 1024, 2},
      {"llama3-8b", 32, 4096, 32, 8, 128, 14336, 128256, 2},
      {"llama3-70b", 80, 8192, 64, 8, 128, 28672, 128256, 2},
  };
  return presets;
}

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = [] {
    GpuSpec h100;
    h100.name = "h100-sxm";
    h100.peak_flops = 989'000'000'000'000;
    h100.hbm_bytes_per_s = 3'350'000'000'000;
    h100.memory_bytes = 80LL << 30;
    h100.sm_count = 132;
    h100.clock_mhz = 1980;
    GpuSpec h200 = h100;
    h200.name = "h200";
    h200.hbm_bytes_per_s = 4'800'000'000'000;
    h200.memory_bytes = 141'000'000'000;
    return std::vector<GpuSpec>{h100, h200};
  }();
  return presets;
}

namespace {
template <typename Spec>
StatusOr<Spec> find_by_name(const std::vector<Spec>& presets, std::string_view name,
                            const char* what) {
  std::string valid;
  for (const Spec& s : presets) {
    if (s.name == name) return s;
    valid += valid.empty() ? "" : ", ";
    valid += s.name;
  }
  return Status::error(std::string("unknown ") + what + " '" + std::string(name) +
                       "' (valid: " + valid + ")");
}
}  // namespace

StatusOr<ModelSpec> find_model_spec(std::string_view name) {
  return find_by_name(model_presets(), name, "model");
}

StatusOr<GpuSpec> find_gpu_spec(std::string_view name) {
  return find_by_name(gpu_presets(), name, "gpu");
}

}  // namespace kv::sim
