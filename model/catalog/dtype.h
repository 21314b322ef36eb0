// DType: the number formats a model's weights, compute and KV cache use, named as vLLM's
// `--dtype` and `--kv-cache-dtype` name them (bf16 = bfloat16, fp16 = float16, fp8 = e4m3,
// fp4 = nvfp4/mxfp4). Sizes are in bits so that fp4 (half a byte) stays exact: callers multiply
// element counts by bits() and divide by 8 once, at the end.
// Invariants:
//   1. bits() is 16, 16, 8 or 4; names round-trip through parse_dtype().
//   2. parse_dtype() never throws; an unknown name is a Status listing the valid ones.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/util/status.h"

namespace kv {

enum class DType { kBf16, kFp16, kFp8, kFp4 };

inline constexpr int dtype_bits(DType d) {
  switch (d) {
    case DType::kBf16:
      return 16;
    case DType::kFp16:
      return 16;
    case DType::kFp8:
      return 8;
    case DType::kFp4:
      return 4;
  }
  return 16;
}

inline const char* to_string(DType d) {
  switch (d) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
    case DType::kFp4:
      return "fp4";
  }
  return "?";
}

// Bytes of `elements` values of `d`, rounded up to a whole byte.
inline constexpr std::int64_t dtype_bytes_of(DType d, std::int64_t elements) {
  return (elements * dtype_bits(d) + 7) / 8;
}

// "bf16" (also "bfloat16"), "fp16" ("float16", "half"), "fp8" ("fp8_e4m3"), "fp4" ("nvfp4").
inline StatusOr<DType> parse_dtype(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return DType::kBf16;
  if (name == "fp16" || name == "float16" || name == "half") return DType::kFp16;
  if (name == "fp8" || name == "fp8_e4m3") return DType::kFp8;
  if (name == "fp4" || name == "nvfp4") return DType::kFp4;
  return Status::error("unknown dtype '" + std::string(name) + "' (valid: bf16, fp16, fp8, fp4)");
}

}  // namespace kv
