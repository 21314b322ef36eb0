// Request: one sequence as the core sees it, as vLLM's Request.
// Holds the tokens (prompt, then outputs as they are appended), the per-request hash inputs
// (salt, LoRA, multimodal items), the hashes of its full blocks and the scheduling state.
// Invariants:
//   1. block_hashes() holds exactly one hash per full block of tokens() when the request has
//      a hasher (prefix caching on), and none otherwise; hashes are computed once, as tokens
//      are appended, after the prompt's first ones when the caller gave them (made with the
//      same hasher and block size: a fleet's router hashed the prompt already).
//   2. 0 <= num_computed_tokens <= num_tokens, except between schedule() and
//      update_from_output() of a step that scheduled drafts: then up to num_tokens + drafts.
//   3. spec_token_ids is empty unless speculative decoding is on, and for a request that is
//      waiting or still prefilling.
//   4. A request built from a DeferredPrompt holds neither its tokens nor its hashes until the
//      first tokens(), block_hashes() or append_tokens(), or until prepare() expands them; from
//      then on it is exactly the request built from the expanded prompt. num_tokens() never
//      expands.
//   5. Threads: prepare() (or its halves) may run on one other thread while the owner uses the request; the
//      expansion happens exactly once, by whichever side claims it first, and the owner's
//      first read waits for a claimed expansion to finish. Everything else, and destruction,
//      belongs to the owner's thread (the owner keeps prepare() off a request it destroys:
//      model/prompt_preparer.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/block_hasher.h"
#include "model/deferred_prompt.h"
#include "model/policies/block_retention.h"
#include "model/types.h"

namespace kv {

enum class RequestStatus {
  kWaiting,
  kRunning,
  kPreempted,
  kFinishedLength,   // reached its output length
  kFinishedMaxLen,   // reached max_model_len
  kFinishedStopped,  // appended one of its stop tokens
  kFinishedAborted,
  kRejected,  // could never run (empty prompt, longer than max_model_len)
};

const char* to_string(RequestStatus s);
inline bool is_finished(RequestStatus s) {
  return s == RequestStatus::kFinishedLength || s == RequestStatus::kFinishedMaxLen ||
         s == RequestStatus::kFinishedStopped || s == RequestStatus::kFinishedAborted || s == RequestStatus::kRejected;
}

class Request {
 public:
  // hasher == nullptr: no block hashes (prefix caching off; prompt_hashes are dropped).
  // prompt_hashes: the hashes of the prompt's first full blocks, if the caller has them
  // (invariant 1); the rest are computed.
  Request(RequestId id, std::vector<TokenId> prompt, HashExtras extras, const BlockHasher* hasher, int block_size,
          std::vector<BlockHash> prompt_hashes = {});
  // The prompt is expanded, and its remaining blocks hashed, on first use (invariant 4).
  Request(RequestId id, DeferredPrompt prompt, HashExtras extras, const BlockHasher* hasher, int block_size,
          std::vector<BlockHash> prompt_hashes = {});
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  const RequestId& id() const { return id_; }
  std::span<const TokenId> tokens() const {
    expand_if_deferred();
    return tokens_;
  }
  std::int64_t num_tokens() const {
    return expanded() ? static_cast<std::int64_t>(tokens_.size()) : num_prompt_tokens_;
  }
  std::int64_t num_prompt_tokens() const { return num_prompt_tokens_; }
  std::int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }
  const HashExtras& extras() const { return extras_; }
  const std::vector<BlockHash>& block_hashes() const {
    expand_if_deferred();
    return block_hashes_;
  }

  // Appends output tokens; hashes every block they complete.
  void append_tokens(std::span<const TokenId> tokens);
  // Whether the prompt is still deferred and nobody has begun expanding it.
  bool deferred() const { return state_.load(std::memory_order_acquire) == kDeferred; }
  // Expands a deferred prompt and hashes its blocks now, on the calling thread, unless
  // that has begun already; returns whether this call did it. The one call another thread may
  // make (invariant 5).
  bool prepare() const;
  // prepare() in two halves, so that a worker can hash several prompts in lockstep
  // (model/prompt_preparer.h): begin_prepare() claims a deferred request and expands its tokens
  // (false if another thread began first); the caller then hashes the job of hash_job()
  // (BlockHasher::extend_stream; nothing to do without a hasher) and calls finish_prepare().
  bool begin_prepare() const;
  HashJob hash_job() const;
  void finish_prepare() const;
  const BlockHasher* hasher() const { return hasher_; }

  // Scheduling state, owned by whoever drives the request (the scheduler or a test).
  std::int64_t num_computed_tokens = 0;
  RequestStatus status = RequestStatus::kWaiting;
  int priority = 0;  // lower runs first (vLLM's priority policy)
  std::int64_t arrival_time_us = 0;
  std::int64_t max_output_tokens = 0;  // finish after this many outputs
  int num_preemptions = 0;
  std::int64_t num_cached_tokens = -1;  // prefix-cache hit tokens when first scheduled
  BlockRetention retention;             // how long its blocks should stay cached (priority policy)
  // Speculative decoding (docs/semantics.md §5.9): the drafts proposed after its last token,
  // held for its next step, where they follow tokens().
  std::vector<TokenId> spec_token_ids;
  // Set each time it is scheduled: num_computed_tokens < num_tokens once the step is counted
  // (a prefill goes on in a later step). Such a request is handed no drafts.
  bool is_prefill_chunk = false;
  // Mamba align mode: the lookup's shared-prefix boundary (CacheHit::shared_prefix_boundary)
  // at its last lookup; prefill chunks are cut at the last block boundary before it.
  std::int64_t shared_prefix_boundary = 0;
  // Encoder-decoder models: the encoder input positions (Whisper: 1500 per 30-s audio input),
  // run in the step that admits it (again after a preemption); 0 for a decoder-only model.
  std::int64_t num_encoder_tokens = 0;

 private:
  // kExpanded: tokens_ and block_hashes_ are whole. kDeferred: only deferred_ holds the prompt.
  // kExpanding: one thread is expanding it (then kExpanded, with release order).
  enum State : std::uint8_t { kExpanded, kDeferred, kExpanding };
  bool expanded() const { return state_.load(std::memory_order_acquire) == kExpanded; }
  void expand_if_deferred() const {
    if (!expanded()) [[unlikely]]
      expand_or_wait();
  }
  void expand_or_wait() const;
  // Fills tokens_ and drops deferred_.
  void expand_tokens() const;
  // Takes the constructors' prompt_hashes as the first block hashes (invariant 1).
  void adopt_prompt_hashes(std::vector<BlockHash> hashes);

  RequestId id_;
  // Empty while deferred_ is set; mutable so that the first read can expand the prompt.
  mutable std::vector<TokenId> tokens_;
  std::int64_t num_prompt_tokens_;
  HashExtras extras_;
  const BlockHasher* hasher_;
  int block_size_;
  mutable std::vector<BlockHash> block_hashes_;
  mutable DeferredPrompt deferred_;  // set until the prompt is expanded
  mutable std::atomic<State> state_{kExpanded};
};

}  // namespace kv
