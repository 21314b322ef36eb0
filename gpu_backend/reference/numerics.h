// Rounding emulation for the CPU reference: what storing an fp32 value as bf16 or fp16 does
// on the GPU (round to nearest, ties to even; NaN stays NaN; fp16 overflows to infinity and
// keeps subnormals). Element type of every stored activation, weight and KV-cache value.
#pragma once

#include <cstdint>
#include <string>

namespace kv::gpuref {

enum class DType {
  kFp32,  // no rounding (the pure fp32 reference)
  kBf16,  // 8-bit mantissa (7 stored): relative rounding error <= 2^-8
  kFp16,  // 11-bit mantissa (10 stored): relative rounding error <= 2^-11
};

const char* to_string(DType dtype);
bool parse_dtype(const std::string& text, DType* out);
int dtype_bytes(DType dtype);  // 4, 2, 2

float round_bf16(float x);
float round_fp16(float x);
inline float round_to(DType dtype, float x) {
  switch (dtype) {
    case DType::kBf16:
      return round_bf16(x);
    case DType::kFp16:
      return round_fp16(x);
    case DType::kFp32:
      break;
  }
  return x;
}

// Raw 16-bit encodings (for filling device buffers from the host and reading them back).
std::uint16_t bf16_bits(float x);
float bf16_from_bits(std::uint16_t bits);
std::uint16_t fp16_bits(float x);
float fp16_from_bits(std::uint16_t bits);

}  // namespace kv::gpuref
