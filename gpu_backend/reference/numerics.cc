#include "gpu_backend/reference/numerics.h"

#include <bit>
#include <cmath>
#include <limits>

namespace kv::gpuref {

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
      return "fp32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
  }
  return "?";
}

bool parse_dtype(const std::string& text, DType* out) {
  if (text == "fp32") {
    *out = DType::kFp32;
    return true;
  }
  if (text == "bf16") {
    *out = DType::kBf16;
    return true;
  }
  if (text == "fp16") {
    *out = DType::kFp16;
    return true;
  }
  return false;
}

int dtype_bytes(DType dtype) { return dtype == DType::kFp32 ? 4 : 2; }

std::uint16_t bf16_bits(float x) {
  const auto u = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  const std::uint32_t lsb = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

float bf16_from_bits(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

float round_bf16(float x) { return bf16_from_bits(bf16_bits(x)); }

std::uint16_t fp16_bits(float x) {
  const auto u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);   // NaN
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow -> inf
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp >= -14) {  // normal half
    std::uint32_t mant = abs & 0x7FFFFFu;
    std::uint32_t half = (static_cast<std::uint32_t>(exp + 15) << 10) | (mant >> 13);
    const std::uint32_t rest = mant & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into exponent
    return static_cast<std::uint16_t>(sign | half);
  }
  if (exp < -25) return static_cast<std::uint16_t>(sign);  // below half the smallest subnormal
  // Subnormal half: value = m * 2^-24 with m = round(|x| * 2^24).
  const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;  // 24-bit significand, 1.f * 2^exp
  const int shift = -exp - 14 + 13;                          // bits dropped from mant
  std::uint32_t half = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

float fp16_from_bits(std::uint16_t bits) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x8000u) << 16;
  const int exp = (bits >> 10) & 0x1F;
  const std::uint32_t mant = bits & 0x3FFu;
  float value;
  if (exp == 0) {
    value = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    value = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    value = std::ldexp(static_cast<float>(mant | 0x400u), exp - 25);
  }
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(value) | sign);
}

float round_fp16(float x) { return fp16_from_bits(fp16_bits(x)); }

}  // namespace kv::gpuref
