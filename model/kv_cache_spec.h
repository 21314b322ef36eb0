// KvCacheSpec: what one layer needs from the KV cache, as vLLM's KVCacheSpec family
// (FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec, MambaSpec,
// CrossAttentionSpec, RSWASpec). A spec is plain data: the layer type, its token reach
// (window or chunk), the block size and what fixes the size of one block (page): the per-token
// KV layout for attention, the padded state for Mamba.
// Invariants (validate_spec):
//   1. block_size, num_kv_heads, head_size, head_size_v and dtype_bytes are positive.
//   2. A sliding-window or R-SWA spec has window >= 1, a chunked-local spec chunk >= 1; the
//      other kinds carry 0 in both.
//   3. A Mamba spec has a positive state size and a page (mamba_page_bytes, 0 = the state
//      itself) at least as large; only Mamba carries a state, a mode other than kNone and
//      speculative blocks.
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
  kMamba,           // recurrent state: one state block per request position that keeps one
  kCrossAttention,  // encoder-decoder cross attention: blocks for the encoder tokens only
  kRSwa,            // full attention over the prompt and the last `window` tokens (R-SWA)
};

const char* to_string(AttentionType type);

// How a Mamba group keeps states (vLLM's mamba_cache_mode): kNone holds one state for the
// whole request (prefix caching off); kAlign keeps the states of block-aligned chunk ends;
// kAll keeps a state at every block boundary, then frees all but the last.
enum class MambaCacheMode { kNone, kAlign, kAll };

const char* to_string(MambaCacheMode mode);

struct KvCacheSpec {
  AttentionType type = AttentionType::kFullAttention;
  int block_size = 16;
  int num_kv_heads = 1;
  int head_size = 64;
  int head_size_v = 64;
  int dtype_bytes = 2;
  int window = 0;  // tokens: kSlidingWindow's window, kRSwa's reference window
  int chunk = 0;   // attention chunk in tokens (kChunkedLocalAttention only)
  // kMamba only.
  MambaCacheMode mamba_mode = MambaCacheMode::kNone;
  std::int64_t mamba_state_bytes = 0;  // one state of one layer (conv + ssm tensors)
  std::int64_t mamba_page_bytes = 0;   // the state padded to the pool's page; 0 = unpadded
  int num_speculative_blocks = 0;      // extra state blocks for draft tokens

  // Bytes of one block in one layer: block_size * heads * (head_size + head_size_v) * dtype
  // for attention; the (padded) state for Mamba.
  std::int64_t page_size_bytes() const;
  // Tokens before position `num_computed_tokens` that the layer never reads again (vLLM
  // get_num_skipped_tokens): full, cross and R-SWA 0, sliding n - window + 1, chunked the
  // start of n's chunk, Mamba n - 1 (only the last state is read). Never negative.
  std::int64_t num_skipped_tokens(std::int64_t num_computed_tokens) const;
  // The most blocks one request can hold real at once (vLLM max_memory_usage_bytes / page):
  // full ceil(max_model_len / block); sliding ceil(min(window - 1 + in_flight, len) / block) + 1;
  // chunked ceil(min(chunk + in_flight, len) / block); Mamba none 1 + s, align 2 + s, all
  // ceil(max_model_len / block) + s (s = speculative blocks).
  std::int64_t max_blocks_per_request(std::int64_t max_model_len, std::int64_t max_in_flight_tokens) const;
  std::int64_t max_memory_usage_bytes(std::int64_t max_model_len, std::int64_t max_in_flight_tokens) const {
    return max_blocks_per_request(max_model_len, max_in_flight_tokens) * page_size_bytes();
  }

  friend bool operator==(const KvCacheSpec&, const KvCacheSpec&) = default;
};

// Ok for a spec kvsim can manage; otherwise a Status naming the problem (bad sizes, a missing
// window, chunk or state, or a field the type does not carry).
Status validate_spec(const KvCacheSpec& spec);

// "full", "sliding_window(32)", "chunked_local(64)", "mamba(align, 2432 B)", ... for messages
// and tests.
std::string describe(const KvCacheSpec& spec);

}  // namespace kv
