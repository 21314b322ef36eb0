// Mamba align split: where a prefill chunk may end when a KV-cache group keeps a Mamba
// (recurrent) state per block and caches it only at block ends ("align" mode), as vLLM's
// scheduler cuts chunks for such a model (docs/semantics.md §5.9, "Chunks for Mamba align").
// A state can be hit later only if some chunk ended exactly where it was written, so a chunk
// ends on a block boundary, at the last position whose state may be cached, or at the last
// block boundary before the lookup's shared-prefix boundary (where the full-attention hit went
// further than any cached state: the next request with that prefix then finds one there).
// Invariants (of mamba_align_split):
//   1. The result is in [0, num_new_tokens]; 0 means the chunk cannot end anywhere allowed.
//   2. A decode, or a resumed request replaying only its last token (start >= max(prompt,
//      num_tokens - 1)), keeps num_new_tokens.
//   3. A pure function of its input.
#pragma once

#include <cstdint>

namespace kv {

struct AlignSplitInput {
  std::int64_t start = 0;           // the chunk's first position: computed tokens + hit
  std::int64_t num_new_tokens = 0;  // after the threshold, the budget and max_model_len
  std::int64_t num_prompt_tokens = 0;
  std::int64_t num_tokens = 0;              // prompt and outputs (drafts excluded)
  std::int64_t block_size = 16;             // the Mamba group's
  bool use_eagle = false;                   // the last cacheable block end moves one block back
  std::int64_t shared_prefix_boundary = 0;  // the request's last lookup's; 0: none
};

// The tokens of the chunk once cut (invariant 1).
std::int64_t mamba_align_split(const AlignSplitInput& in);

}  // namespace kv
