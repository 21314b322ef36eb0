#include "model/kv_cache_spec.h"

#include <algorithm>

namespace kv {
namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

const char* to_string(AttentionType type) {
  switch (type) {
    case AttentionType::kFullAttention: return "full";
    case AttentionType::kSlidingWindow: return "sliding_window";
    case AttentionType::kChunkedLocalAttention: return "chunked_local";
    case AttentionType::kMamba: return "mamba";
    case AttentionType::kCrossAttention: return "cross_attention";
  }
  return "unknown";
}

std::int64_t KvCacheSpec::page_size_bytes() const {
  return std::int64_t{block_size} * num_kv_heads * (head_size + head_size_v) * dtype_bytes;
}

std::int64_t KvCacheSpec::num_skipped_tokens(std::int64_t num_computed_tokens) const {
  switch (type) {
    case AttentionType::kSlidingWindow:
      return std::max<std::int64_t>(0, num_computed_tokens - window + 1);
    case AttentionType::kChunkedLocalAttention:
      return num_computed_tokens / chunk * chunk;
    default:
      return 0;
  }
}

std::int64_t KvCacheSpec::max_blocks_per_request(std::int64_t max_model_len,
                                                 std::int64_t max_in_flight_tokens) const {
  switch (type) {
    case AttentionType::kSlidingWindow:
      return ceil_div(std::min(window - 1 + max_in_flight_tokens, max_model_len), block_size) + 1;
    case AttentionType::kChunkedLocalAttention:
      return ceil_div(std::min(chunk + max_in_flight_tokens, max_model_len), block_size);
    default:
      return ceil_div(max_model_len, block_size);
  }
}

Status validate_spec(const KvCacheSpec& spec) {
  if (spec.type == AttentionType::kMamba || spec.type == AttentionType::kCrossAttention) {
    return Status::error(std::string("attention type ") + to_string(spec.type) +
                         " is not supported by kvsim's KV-cache manager yet");
  }
  if (spec.block_size <= 0 || spec.num_kv_heads <= 0 || spec.head_size <= 0 ||
      spec.head_size_v <= 0 || spec.dtype_bytes <= 0) {
    return Status::error("block_size, num_kv_heads, head_size, head_size_v and dtype_bytes "
                         "must be positive in " + describe(spec));
  }
  const bool sliding = spec.type == AttentionType::kSlidingWindow;
  const bool chunked = spec.type == AttentionType::kChunkedLocalAttention;
  if (sliding != (spec.window > 0) || chunked != (spec.chunk > 0) || spec.window < 0 ||
      spec.chunk < 0) {
    return Status::error("a sliding-window spec needs a window >= 1 and a chunked-local spec "
                         "a chunk >= 1 (and no other spec either), got " + describe(spec));
  }
  return Status();
}

std::string describe(const KvCacheSpec& spec) {
  std::string out = to_string(spec.type);
  if (spec.window > 0) out += "(" + std::to_string(spec.window) + ")";
  if (spec.chunk > 0) out += "(" + std::to_string(spec.chunk) + ")";
  return out;
}

}  // namespace kv
