// StepPlan: everything one engine step runs, as vLLM's SchedulerOutput; the only thing a
// Device sees. StepResult: what the device reports back.
// Invariants of a plan made by the Scheduler:
//   1. requests[i].token_ids are the tokens at positions [num_computed_tokens,
//      num_computed_tokens + token_ids.size()) of that request; the sum of their sizes is
//      total_tokens <= the token budget, and requests.size() <= max_num_seqs.
//   2. A request with is_new == true (first scheduled, or resumed after preemption) carries
//      its whole block table and the tokens before num_computed_tokens (context_token_ids);
//      a running one carries only the blocks allocated in this step.
//   3. Every block id is one the KV-cache manager gave the request; positions beyond the
//      request's table never appear.
//   4. Hybrid runs (several KV-cache groups): group_block_ids has one list per group, with the
//      meaning block_ids has for one group (0 = the null block in a whole table), block_ids is
//      empty, and group_windows names each group's reach. One group: both are empty.
//   5. Second-tier transfers (docs/tiers.md) are empty unless a KvConnector runs: a load fills
//      a block of a new request's table at index < ceil(num_computed_tokens / block_size),
//      with the tier entry stored under the hash of that block; stores_before are copied out
//      before any of the step's cache writes, stores_after once they are all done.
//   6. Speculative decoding: spec_token_ids are the drafts scheduled for verification; the
//      positions of token_ids past the request's known tokens hold their first ones (a padded
//      admission cut by the threshold carries more drafts than positions). A request with
//      drafts samples; StepResult::num_accepted says how many of them the sampler kept.
//   7. Encoder-decoder models: a new request's num_encoder_tokens are the encoder positions
//      run for it in this step (the sum over the plan is at most the scheduler's encoder
//      budget); its cross-attention tables cover them. Every other entry carries 0.
// A plan is plain data: it can be logged, hashed, serialized and replayed on any device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/block_hash.h"
#include "model/types.h"

namespace kv {

// The draft id of a padding slot (a new decode padded to 1 + K tokens): never accepted.
inline constexpr TokenId kPaddingDraft = -1;

struct ScheduledRequest {
  RequestId id;
  bool is_new = false;  // block_ids is the whole table (else: new blocks only)
  std::vector<BlockId> block_ids;
  std::vector<std::vector<BlockId>> group_block_ids;  // hybrid only: per group, as block_ids
  std::int64_t num_computed_tokens = 0;               // already in the KV cache before this step
  std::int64_t num_cached_tokens = 0;                 // of those, prefix-cache hits (new requests only)
  std::int64_t num_external_tokens = 0;               // of those, loaded from a second tier (new only)
  std::vector<TokenId> context_token_ids;             // is_new only: tokens [0, num_computed_tokens)
  std::vector<TokenId> token_ids;                     // computed this step
  std::int64_t num_prompt_tokens = 0;
  bool samples = false;                 // this step reaches the request's last known token
  TokenId next_token = 0;               // teacher-forced output after the known tokens
  std::vector<TokenId> spec_token_ids;  // drafts to verify (kPaddingDraft: a padding slot)
  // Speculation on and samples: the teacher-forced outputs from next_token on, 2K + 1 at most
  // (fewer at the end of the outputs): what the sampler samples after accepted drafts and what
  // a drafter that guesses right proposes next. Empty without speculation.
  std::vector<TokenId> next_tokens;
  std::string lora_name;
  std::string cache_salt;  // tenant; a device may check tenants never share KV
  // Encoder-decoder models, is_new only: the encoder positions run in this step before the
  // decoder's tokens; their K/V fill the request's cross-attention blocks (invariant 7).
  std::int64_t num_encoder_tokens = 0;
};

// A block a disaggregated prefill engine computed and the decode engine received before the
// request reached it (replay/fleet_replay.h): loaded into the decode engine's GPU block with no
// copy in the step (the fleet timed the transfer).
constexpr int kRemoteTier = 2;

// One block copied between GPU memory and a second KV-cache tier (host memory, disk), or
// received from a remote engine (kRemoteTier, loads only).
struct TierTransfer {
  BlockId block = kNoBlock;  // the GPU block
  BlockHash hash;            // the tier entry's key: the block's prefix-cache hash
  int tier = 0;              // 0: host memory, 1: disk, kRemoteTier: a remote engine
  RequestId request;         // loads: the request whose table holds `block`
  std::int64_t index = -1;   // loads: `block`'s index in that table
};

struct StepPlan {
  std::int64_t step = 0;
  int block_size = 16;
  std::vector<ScheduledRequest> requests;  // running requests first, then new ones
  std::vector<RequestId> preempted;        // preempted in this step (their blocks are freed)
  std::vector<RequestId> finished;         // finished after the previous step
  std::int64_t total_tokens = 0;
  int num_common_prefix_blocks = 0;  // cascade attention: blocks shared by all running
  // Hybrid only: per KV-cache group, the tokens one layer of it reads back before a query
  // position p (0 = every earlier token; w: positions (p - w, p]; chunked layers are not
  // windows: they carry -c, positions from the start of p's c-token chunk).
  std::vector<std::int64_t> group_windows;
  // Hybrid only: per KV-cache group, 0 for an attention group, the group's block size for a
  // Mamba group (its table holds one recurrent state per block, not per-token K/V).
  std::vector<int> group_state_block_sizes;
  // Hybrid only, empty without cross attention: per KV-cache group, true for a cross-attention
  // group (its table holds the encoder's K/V, written once at admission, read by every query).
  std::vector<bool> group_cross_attention;
  // Second-tier transfers (invariant 5), in the order the connector decided them.
  std::vector<TierTransfer> tier_stores_before;  // evicted blocks saved before being reused
  std::vector<TierTransfer> tier_loads;          // tier hits loaded into new requests' blocks
  std::vector<TierTransfer> tier_stores_after;   // blocks that became full, saved after the step
  std::vector<BlockHash> tier_dropped;           // entries no tier holds any more
};

struct DeviceCounters {
  std::int64_t tokens_computed = 0;         // tokens whose K/V were written this step
  std::int64_t prompt_tokens_computed = 0;  // of those, prompt positions
  std::int64_t kv_slots_read = 0;           // attention reads performed or verified
  std::int64_t kernels = 0;                 // kernel launches (or modelled launches)
  std::int64_t tier_load_ns = 0;            // second-tier loads: copy time of the step's loads
  std::int64_t tier_stall_ns = 0;           // what loads and saves added to the step's duration
};

struct StepResult {
  std::vector<std::pair<RequestId, TokenId>> sampled;  // one per request with samples == true
  // Speculative decoding: one per request with drafts, in plan order: how many of its drafts
  // were accepted (a prefix of them, padding never). Its sampled token follows those.
  std::vector<std::pair<RequestId, int>> num_accepted;
  // Speculative decoding: the drafter's proposals for the next step (vLLM's DraftTokenIds),
  // handed to Scheduler::update_draft_token_ids after update_from_output.
  std::vector<std::pair<RequestId, std::vector<TokenId>>> draft_token_ids;
  std::int64_t duration_ns = 0;   // device time of the step (what the clock advances by)
  std::int64_t measured_ns = -1;  // wall time measured on real hardware, -1 if none
  DeviceCounters counters;
  std::vector<std::string> violations;  // verification failures (step, request, position, ...)
};

}  // namespace kv
