// Seeded weight values: a counter-based hash turns (seed, tensor id, element index) into a
// uniform value in [-1, 1), so every weight of the synthetic model is a pure function of its
// coordinates. The same inline code runs on the host (CPU reference) and on the device
// (weight generation kernel), so both sides see bit-identical weights.
// Invariants:
//   1. seeded_uniform() returns k / 2^23 - 1 for an integer k in [0, 2^24): exact in fp32.
//   2. seeded_weight() is one fp32 multiply of that value; the device rounds it to bf16/fp16
//      with round-to-nearest-even, exactly as numerics.h does on the host.
// Plain C++: no CUDA header; under nvcc the functions are also __device__.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define KVG_HD __host__ __device__
#else
#define KVG_HD
#endif

namespace kv::gpuref {

KVG_HD inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

KVG_HD inline float seeded_uniform(std::uint64_t seed, std::uint32_t tensor_id, std::uint64_t index) {
  const std::uint64_t stream = mix64(seed * 0x100000001B3ull + tensor_id);
  const std::uint64_t h = mix64(stream ^ index);
  const auto k = static_cast<std::int32_t>(h >> 40);  // 24 bits
  return static_cast<float>(k) * (1.0f / 8388608.0f) - 1.0f;
}

// A weight of a tensor whose values are U(-scale, scale).
KVG_HD inline float seeded_weight(std::uint64_t seed, std::uint32_t tensor_id, std::uint64_t index, float scale) {
  return seeded_uniform(seed, tensor_id, index) * scale;
}

}  // namespace kv::gpuref
