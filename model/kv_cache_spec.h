// KvCacheSpec: what one attention layer needs from the KV cache, as vLLM's KVCacheSpec family
// (FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec). A spec is plain data:
// the attention type, its token reach (window or chunk), the block size and the per-token
// layout that fixes the size of one block (page).
// Invariants (validate_spec):
//   1. block_size, num_kv_heads, head_size, head_size_v and dtype_bytes are positive.
//   2. A sliding-window spec has window >= 1, a chunked-local spec chunk >= 1; the other
//      spec kinds carry 0 in both.
//   3. Kinds kvsim does not manage yet (Mamba-style state, cross attention) are named, so that
//      a model using them is refused with a Status instead of being treated as full attention.
// Two specs are equal exactly when vLLM would put their layers in one bucket.
#pragma once

#include <cstdint>
#include <string>

#include "model/util/status.h"

namespace kv {

enum class AttentionType {
  kFullAttention,
  kSlidingWindow,
  kChunkedLocalAttention,
  kMamba,           // recurrent state, one slot per request: not managed yet
  kCrossAttention,  // encoder-decoder cross attention: not managed yet
};

const char* to_string(AttentionType type);

struct KvCacheSpec {
  AttentionType type = AttentionType::kFullAttention;
  int block_size = 16;
  int num_kv_heads = 1;
  int head_size = 64;
  int head_size_v = 64;
  int dtype_bytes = 2;
  int window = 0;  // sliding window in tokens (kSlidingWindow only)
  int chunk = 0;   // attention chunk in tokens (kChunkedLocalAttention only)

  // Bytes of one block in one layer: block_size * heads * (head_size + head_size_v) * dtype.
  std::int64_t page_size_bytes() const;
  // Tokens before position `num_computed_tokens` that the layer never reads again (vLLM
  // get_num_skipped_tokens): full 0, sliding n - window + 1, chunked the start of n's chunk.
  std::int64_t num_skipped_tokens(std::int64_t num_computed_tokens) const;
  // The most blocks one request can hold real at once (vLLM max_memory_usage_bytes / page):
  // full ceil(max_model_len / block); sliding ceil(min(window - 1 + in_flight, len) / block) + 1;
  // chunked ceil(min(chunk + in_flight, len) / block).
  std::int64_t max_blocks_per_request(std::int64_t max_model_len,
                                      std::int64_t max_in_flight_tokens) const;
  std::int64_t max_memory_usage_bytes(std::int64_t max_model_len,
                                      std::int64_t max_in_flight_tokens) const {
    return max_blocks_per_request(max_model_len, max_in_flight_tokens) * page_size_bytes();
  }

  friend bool operator==(const KvCacheSpec&, const KvCacheSpec&) = default;
};

// Ok for a spec kvsim can manage; otherwise a Status naming the problem (bad sizes, a missing
// window or chunk, or an attention type not supported yet).
Status validate_spec(const KvCacheSpec& spec);

// "full", "sliding_window(32)", "chunked_local(64)", ... for messages and tests.
std::string describe(const KvCacheSpec& spec);

}  // namespace kv
