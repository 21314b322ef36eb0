// Kernel: the kernels one step launches, named exactly as in profile CSVs
// (sim/profile_format.md) and in the GPU backend's timings.
// Per step: slot_mapping once; per layer rmsnorm, qkv_proj, rotary, cache_write, attention,
// o_proj, rmsnorm, gate_up_proj, silu_mul, down_proj; then rmsnorm (final norm) and lm_head on
// the sampled tokens only.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace kv::sim {

enum class Kernel {
  kSlotMapping,
  kRmsnorm,
  kQkvProj,
  kRotary,
  kCacheWrite,
  kAttention,
  kOProj,
  kGateUpProj,
  kSiluMul,
  kDownProj,
  kLmHead,
};
inline constexpr int kNumKernels = 11;

inline constexpr std::array<std::string_view, kNumKernels> kKernelNames = {
    "slot_mapping", "rmsnorm",      "qkv_proj", "rotary",    "cache_write", "attention",
    "o_proj",       "gate_up_proj", "silu_mul", "down_proj", "lm_head"};

inline std::string_view kernel_name(Kernel k) { return kKernelNames[static_cast<int>(k)]; }

inline std::optional<Kernel> parse_kernel(std::string_view name) {
  for (int i = 0; i < kNumKernels; ++i) {
    if (kKernelNames[i] == name) return static_cast<Kernel>(i);
  }
  return std::nullopt;
}

}  // namespace kv::sim
