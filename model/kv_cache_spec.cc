#include "model/kv_cache_spec.h"

#include <algorithm>

#include "model/mamba_cache_mode.h"

namespace kv {
namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

const char* to_string(AttentionType type) {
  switch (type) {
    case AttentionType::kFullAttention:
      return "full";
    case AttentionType::kSlidingWindow:
      return "sliding_window";
    case AttentionType::kChunkedLocalAttention:
      return "chunked_local";
    case AttentionType::kMamba:
      return "mamba";
    case AttentionType::kCrossAttention:
      return "cross_attention";
    case AttentionType::kRSwa:
      return "rswa";
  }
  return "unknown";
}

const char* to_string(MambaCacheMode mode) {
  switch (mode) {
    case MambaCacheMode::kNone:
      return "none";
    case MambaCacheMode::kAlign:
      return "align";
    case MambaCacheMode::kAll:
      return "all";
  }
  return "unknown";
}

std::optional<MambaCacheMode> parse_mamba_cache_mode(std::string_view text) {
  for (MambaCacheMode mode : {MambaCacheMode::kNone, MambaCacheMode::kAlign, MambaCacheMode::kAll}) {
    if (text == to_string(mode)) return mode;
  }
  return std::nullopt;
}

std::int64_t KvCacheSpec::page_size_bytes() const {
  if (type == AttentionType::kMamba) {
    return mamba_page_bytes > 0 ? mamba_page_bytes : mamba_state_bytes;
  }
  return std::int64_t{block_size} * num_kv_heads * (head_size + head_size_v) * dtype_bytes;
}

std::int64_t KvCacheSpec::num_skipped_tokens(std::int64_t num_computed_tokens) const {
  switch (type) {
    case AttentionType::kSlidingWindow:
      return std::max<std::int64_t>(0, num_computed_tokens - window + 1);
    case AttentionType::kChunkedLocalAttention:
      return num_computed_tokens / chunk * chunk;
    case AttentionType::kMamba:
      return std::max<std::int64_t>(0, num_computed_tokens - 1);
    default:
      return 0;
  }
}

std::int64_t KvCacheSpec::max_blocks_per_request(std::int64_t max_model_len, std::int64_t max_in_flight_tokens) const {
  switch (type) {
    case AttentionType::kSlidingWindow:
      return ceil_div(std::min(window - 1 + max_in_flight_tokens, max_model_len), block_size) + 1;
    case AttentionType::kChunkedLocalAttention:
      return ceil_div(std::min(chunk + max_in_flight_tokens, max_model_len), block_size);
    case AttentionType::kMamba:
      switch (mamba_mode) {
        case MambaCacheMode::kNone:
          return 1 + num_speculative_blocks;
        case MambaCacheMode::kAlign:
          return 2 + num_speculative_blocks;
        case MambaCacheMode::kAll:
          break;
      }
      return ceil_div(max_model_len, block_size) + num_speculative_blocks;
    default:
      return ceil_div(max_model_len, block_size);
  }
}

namespace {

Status validate_reach(const KvCacheSpec& spec) {
  const bool windowed = spec.type == AttentionType::kSlidingWindow || spec.type == AttentionType::kRSwa;
  const bool chunked = spec.type == AttentionType::kChunkedLocalAttention;
  if (windowed != (spec.window > 0) || chunked != (spec.chunk > 0) || spec.window < 0 || spec.chunk < 0) {
    return Status::error(
        "a sliding-window or R-SWA spec needs a window >= 1 and a chunked-local "
        "spec a chunk >= 1 (and no other spec either), got " +
        describe(spec));
  }
  return Status();
}

Status validate_state(const KvCacheSpec& spec) {
  if (spec.type != AttentionType::kMamba) {
    if (spec.mamba_state_bytes != 0 || spec.mamba_page_bytes != 0 || spec.num_speculative_blocks != 0 ||
        spec.mamba_mode != MambaCacheMode::kNone) {
      return Status::error(
          "only a Mamba spec carries a state, a cache mode or speculative "
          "blocks, got " +
          describe(spec));
    }
    return Status();
  }
  if (spec.mamba_state_bytes <= 0) {
    return Status::error("a Mamba spec needs a state size > 0 bytes, got " + describe(spec));
  }
  if (spec.mamba_page_bytes != 0 && spec.mamba_page_bytes < spec.mamba_state_bytes) {
    return Status::error("a Mamba page of " + std::to_string(spec.mamba_page_bytes) +
                         " bytes cannot hold its state of " + std::to_string(spec.mamba_state_bytes) + " bytes");
  }
  if (spec.num_speculative_blocks < 0) {
    return Status::error("a Mamba spec needs num_speculative_blocks >= 0, got " +
                         std::to_string(spec.num_speculative_blocks));
  }
  return Status();
}

}  // namespace

Status validate_spec(const KvCacheSpec& spec) {
  if (spec.block_size <= 0 || spec.num_kv_heads <= 0 || spec.head_size <= 0 || spec.head_size_v <= 0 ||
      spec.dtype_bytes <= 0) {
    return Status::error(
        "block_size, num_kv_heads, head_size, head_size_v and dtype_bytes "
        "must be positive in " +
        describe(spec));
  }
  if (Status s = validate_reach(spec); !s.ok()) return s;
  return validate_state(spec);
}

std::string describe(const KvCacheSpec& spec) {
  std::string out = to_string(spec.type);
  if (spec.window > 0) out += "(" + std::to_string(spec.window) + ")";
  if (spec.chunk > 0) out += "(" + std::to_string(spec.chunk) + ")";
  if (spec.type == AttentionType::kMamba) {
    out += std::string("(") + to_string(spec.mamba_mode) + ", " + std::to_string(spec.mamba_state_bytes) + " B";
    if (spec.num_speculative_blocks > 0) {
      out += ", " + std::to_string(spec.num_speculative_blocks) + " speculative";
    }
    out += ")";
  }
  return out;
}

}  // namespace kv
