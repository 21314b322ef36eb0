// Scheduler: vLLM v1's Scheduler.schedule() / update_from_output() over one KvCacheManager,
// whatever the model's KV-cache groups (docs/hybrid-groups.md, "The scheduler over several
// groups"): the scheduler never asks how many there are.
// One token budget per step; running requests first, in order, then waiting ones (only if no
// request was preempted in this step); chunked prefill; preemption by recompute; head-of-line
// admission (the first waiting request that does not fit stops admission); speculative
// decoding (docs/semantics.md §5.9): drafts verified beside each decode, rejected ones rolled
// back, new decodes padded to 1 + K tokens; encoder-decoder models (docs/semantics.md §5.10):
// a request's encoder input runs in the step that admits it, within an encoder budget.
// Invariants (check_invariants, on top of the manager's):
//   1. Every running request holds blocks for all its computed tokens; no waiting request
//      holds blocks; a request is in exactly one of waiting, running, or finished.
//   2. A plan's total tokens never exceed max_num_scheduled_tokens() (max_num_batched_tokens
//      without speculation) and it schedules at most max_num_seqs requests; no new request is
//      admitted in a step that preempted.
//   3. A preempted request has num_computed_tokens == 0, is at the front of the waiting
//      queue (FCFS) and resumes by recomputing (with whatever prefix-cache hits remain).
//   4. Every group's table of a running request covers its computed tokens (null entries
//      included; a cross-attention group's covers its encoder input instead); plans carry per-group block ids
//      (ScheduledRequest::group_block_ids) exactly when the manager's layout is hybrid, one flat table (block_ids)
//      otherwise.
//   5. Priority policy: the waiting queue is sorted by (priority, arrival time, id as a
//      string), the order vLLM's heap pops it.
//   6. With a KvConnector (set_connector; one full-attention group, as vLLM runs connectors
//      with its hybrid manager off), an admitted request's
//      computed tokens are its local hit plus the connector's match, which costs no token
//      budget; without one no connector call is made and every decision is as above.
//   7. Speculation off: no request ever holds or is scheduled drafts, and every decision is
//      the one made without speculative decoding. On: only a running request that is not
//      prefilling holds drafts; being scheduled (or preempted) drops them all.
//   8. Encoder-decoder: a step's encoder tokens (the admitted requests' num_encoder_tokens)
//      never exceed max_num_encoder_input_tokens; a request whose encoder input does not fit
//      stops admission, as a request whose blocks do not fit. Decoder-only: no encoder tokens.
// Deterministic: no clock, no randomness; the one hash map (live requests by id) is looked up,
// never iterated. With prepare_prompts_ahead a worker thread expands and hashes the prompts
// next in line (model/prompt_preparer.h): every hash, and so every decision, is the same.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/block_hasher.h"
#include "model/kv_cache_manager.h"
#include "model/prompt_preparer.h"
#include "model/request.h"
#include "model/sched/output_tokens.h"
#include "model/sched/speculative_config.h"
#include "model/sched/step_plan.h"
#include "model/tiers/kv_connector.h"
#include "model/util/status.h"

namespace kv {

enum class SchedulingPolicy { kFcfs, kPriority };

struct SchedulerConfig {
  // Blocks, block size, the model's KV-cache groups, caching, free order, ... (its
  // max_in_flight_tokens is taken from max_num_batched_tokens).
  KvCacheConfig cache;
  HashAlgo hash_algo = HashAlgo::kSha256Cbor;
  std::string hash_seed = std::string(kDefaultHashSeed);
  std::int64_t max_num_batched_tokens = 8192;
  int max_num_seqs = 256;
  bool enable_chunked_prefill = true;
  std::int64_t long_prefill_token_threshold = 0;  // 0 = no cap on one request's chunk
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  // Slots allocated beyond the scheduled tokens, without speculation (with it, the
  // speculative config's num_lookahead_tokens(); this field must then be 0 or equal).
  int num_lookahead_tokens = 0;
  // Speculative decoding (off by default, as in vLLM).
  SpeculativeConfig speculative;
  // vLLM's scheduler_reserve_full_isl: admit a waiting request only if blocks for its whole
  // current sequence (prompt and outputs so far) are free (avoids admitting work that must be
  // preempted before its prefill ends).
  bool full_sequence_gate = true;
  // Mamba align mode: also end a chunk at the last block before the lookup's shared-prefix
  // boundary (mamba_align_split.h), so that the next request with that prefix finds a state.
  // Off: vLLM before that rule, where a prefix shorter than the first chunk's aligned end never
  // gets a cached state (the hit-rate collapse of vLLM issue 45238).
  bool mamba_align_prefix_split = true;
  // vLLM's encoder compute budget per step (compute_encoder_budget): encoder input tokens one
  // step may run. vLLM sets it to the encoder length for an encoder-decoder model (Whisper:
  // 1500, so one audio input per step); 0: the model has no encoder.
  std::int64_t max_num_encoder_input_tokens = 0;
  // Expand and hash the deferred prompts of the requests next in line on a worker thread
  // (model/prompt_preparer.h), as vLLM's engine core builds requests on its input thread;
  // every decision is unchanged. Off: the scheduler's thread does it when it first needs them.
  bool prepare_prompts_ahead = false;
  // vLLM's start-up checks: refuses what vLLM refuses before scheduling anything (chunked
  // prefill off with a budget below max_model_len, a budget below max_num_seqs, a
  // long-prefill threshold above max_model_len, a pool that cannot hold one max_model_len
  // sequence), plus values no scheduler can run with. The Scheduler does not call it: tests
  // and tools may run configurations vLLM would refuse. With speculation it also refuses what
  // vLLM's speculative config refuses, a budget the drafter's slots take to 0 or below, and
  // lookahead or eagle settings that contradict the method.
  // vLLM's step budget: max_num_batched_tokens less the drafter's slots of every sequence.
  std::int64_t max_num_scheduled_tokens() const {
    return max_num_batched_tokens - static_cast<std::int64_t>(speculative.drafting_slots_per_seq()) * max_num_seqs;
  }
  // The lookahead slots allocate_slots is given: the speculative config's when it is on.
  int lookahead_tokens() const {
    return speculative.enabled() ? speculative.num_lookahead_tokens() : num_lookahead_tokens;
  }
  Status validate() const;
};

// What a request brings to the scheduler.
struct RequestSpec {
  RequestId id;
  std::vector<TokenId> prompt;
  // Set instead of `prompt` (which is then empty): expanded when the request is first looked
  // at, not when it arrives (model/deferred_prompt.h).
  DeferredPrompt deferred_prompt;
  OutputTokens outputs;  // teacher-forced output tokens; size = output length
  HashExtras extras;
  int priority = 0;
  std::int64_t arrival_time_us = 0;
  BlockRetention retention;             // for the priority eviction policy
  std::vector<TokenId> stop_token_ids;  // appending one of these finishes it (reason: stop)
  std::int64_t num_encoder_tokens = 0;  // encoder-decoder models: its encoder input positions
  std::string session_id;               // a fleet router's affinity key; the scheduler ignores it
  std::int64_t tag = -1;                // the caller's handle for it, echoed in its TokenEvents
  // When the client sent it, if before arrival_time_us (a disaggregated request reaching its
  // decode engine after its prefill); -1: at arrival_time_us. The scheduler ignores it.
  std::int64_t sent_at_us = -1;
  // The prompt's first full blocks hashed with this scheduler's hasher and block size, when the
  // caller has them (a fleet's KV-aware router hashed the prompt to route it): the request
  // hashes only the rest. Empty: it hashes every block.
  std::vector<BlockHash> prompt_hashes;

  std::int64_t num_prompt_tokens() const {
    return deferred_prompt.deferred() ? deferred_prompt.size : static_cast<std::int64_t>(prompt.size());
  }
};

// One output token produced by a step.
struct TokenEvent {
  RequestId id;
  std::int64_t tag = -1;          // the request's RequestSpec::tag
  std::int64_t output_index = 0;  // 0 = the first output token (time to first token)
  bool finished = false;
  RequestStatus status = RequestStatus::kRunning;
};

struct SchedulerStats {
  std::int64_t steps = 0;
  std::int64_t preemptions = 0;
  std::int64_t recomputed_tokens = 0;  // computed tokens thrown away by preemptions
  std::int64_t rejected = 0;
  std::int64_t finished = 0;
  std::int64_t scheduled_tokens = 0;
  std::int64_t max_waiting = 0, max_running = 0;
  // Speculative decoding, vLLM's SpecDecodingStats summed over the steps: requests whose
  // drafts were verified (one per request and step), drafts verified (padding included),
  // drafts accepted.
  std::int64_t spec_num_drafts = 0, spec_num_draft_tokens = 0, spec_num_accepted_tokens = 0;
  // Encoder-decoder models: encoder input tokens run (admissions, resumptions included).
  std::int64_t encoder_tokens = 0;
};

class Scheduler {
 public:
  explicit Scheduler(const SchedulerConfig& config);

  // Validates and enqueues a request. A request that can never run (empty prompt, no output,
  // a prompt not shorter than max_model_len (as vLLM's input processor), more blocks than the
  // pool holds, an encoder input larger than the step's encoder budget) is rejected: the Status says why and the
  // request is counted, nothing else changes.
  Status add_request(RequestSpec spec);

  StepPlan schedule();
  // Rolls back each request's rejected drafts, appends its accepted drafts and its sampled
  // token one by one (stopping at a stop token, max tokens or max_model_len), finishes and
  // frees requests that are done. One event per appended token.
  std::vector<TokenEvent> update_from_output(const StepPlan& plan, const StepResult& result);
  // vLLM update_draft_token_ids, after update_from_output of a step that scheduled tokens: the
  // request now holds exactly `drafts` (at most K), or none if it is still prefilling. A
  // request that finished or is not running is skipped.
  void update_draft_token_ids(const RequestId& id, std::span<const TokenId> drafts);
  // Finishes a waiting or running request now (its blocks are freed); false if unknown.
  bool abort(const RequestId& id);

  // Attaches a second-tier connector (model/tiers/kv_connector.h) before any request is added;
  // one full-attention group with prefix caching on only.
  void set_connector(std::unique_ptr<KvConnector> connector);
  const KvConnector* connector() const { return connector_.get(); }

  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
  std::size_t num_waiting() const { return waiting_.size(); }
  std::size_t num_running() const { return running_.size(); }
  std::vector<RequestId> waiting_ids() const;  // head first (the order admission tries them)
  std::vector<RequestId> running_ids() const;  // the running list, in order
  const Request* find(const RequestId& id) const;
  const SchedulerStats& stats() const { return stats_; }
  // Prompts the preparer's worker expanded (config_.prepare_prompts_ahead): depends on thread
  // timing, so for tests and diagnostics only, never a result.
  std::int64_t num_prepared_ahead() const { return preparer_ ? preparer_->num_prepared() : 0; }
  const SchedulerConfig& config() const { return config_; }
  const KvCacheManager& kv_cache() const { return kv_; }
  KvCacheManager& mutable_kv_cache() { return kv_; }
  std::vector<KvEvent> take_kv_events() { return kv_.take_events(); }

  bool check_invariants(std::string* why) const;

 private:
  // A live request with what only the scheduler reads: its teacher-forced outputs and stop
  // tokens. Every Request the scheduler holds is one, so a Request of waiting_ or running_
  // downcasts to it (live()).
  struct Live : Request {
    template <typename Prompt>
    Live(RequestId id, Prompt prompt, HashExtras extras, const BlockHasher* hasher, int block_size,
         OutputTokens outputs_in, std::vector<TokenId> stops, std::vector<BlockHash> prompt_hashes)
        : Request(std::move(id), std::move(prompt), std::move(extras), hasher, block_size, std::move(prompt_hashes)),
          outputs(std::move(outputs_in)),
          stop_token_ids(std::move(stops)) {}
    OutputTokens outputs;
    std::vector<TokenId> stop_token_ids;
    std::int64_t tag = -1;  // RequestSpec::tag
  };
  static Live& live(Request& r) { return static_cast<Live&>(r); }
  static const Live& live(const Request& r) { return static_cast<const Live&>(r); }
  Live* find_live(const RequestId& id) const;
  // One request scheduled in the step being built.
  struct Scheduled {
    Request* request;
    std::int64_t num_tokens;
    GroupBlockIds new_blocks;  // running requests: the blocks allocated in this step, per group
    std::int64_t hit_tokens;
    bool is_new;                            // admitted from the waiting queue in this step
    std::int64_t external_tokens = 0;       // of the computed tokens, the connector's match
    std::vector<TokenId> spec_tokens = {};  // drafts scheduled for verification
    std::int64_t encoder_tokens = 0;        // its encoder input, run in this step (admissions only)
  };
  // The step being built: its plan (preempted requests), what is scheduled, the budget left.
  struct StepWork {
    StepPlan plan;
    std::vector<Scheduled> scheduled;
    std::int64_t budget = 0;
    std::int64_t encoder_budget = 0;  // encoder tokens this step may still run (invariant 8)
    bool pad_new_decodes = false;     // the waiting pass pads a one-token admission to 1 + K
  };

  void schedule_running(StepWork& work);
  bool allocate_or_preempt(Request& r, std::int64_t n, StepWork& work, std::size_t& index, Scheduled& out);
  bool allocate_running(Request& r, std::int64_t n, Scheduled& out);
  void take_drafts(Request& r, Scheduled& s);
  std::int64_t align_chunk(const Request& r, std::int64_t start, std::int64_t n) const;
  void free_blocks(Request& r);
  void pass_evictions();  // the pool's new evictions to the connector, if any
  bool check_tables(const Request& r, std::string* why) const;
  void schedule_waiting(StepWork& work);
  bool try_admit(Request& r, StepWork& work);
  void fill_plan_entry(Scheduled& s, ScheduledRequest& sr) const;
  void build_plan(StepWork& work);
  void preempt(Request& r, StepPlan& plan);
  void push_waiting_front(Request* r);
  void insert_waiting(Request* r);  // by policy order
  Request* pick_victim();
  void finish(Request& r, RequestStatus status);
  int accepted_drafts(const ScheduledRequest& sr, const StepResult& result, std::size_t& next, std::int64_t step) const;
  void roll_back_rejected(Request& r, const ScheduledRequest& sr, int accepted);
  bool append_output(Live& r, TokenId token, std::vector<TokenEvent>& events);
  void name_next_waiting();  // tells the preparer which waiting requests come next

  SchedulerConfig config_;
  BlockHasher hasher_;
  KvCacheManager kv_;
  // Derived once from config_: the step budget, the lookahead slots, K, and the block size
  // prefill chunks end on (a Mamba group in align mode; 0 for every other layout).
  std::int64_t step_budget_;
  int lookahead_;
  int num_spec_tokens_;
  int align_block_;
  std::unique_ptr<KvConnector> connector_;  // null: no second tier (vLLM's default)
  // Live requests, found by id only (never iterated: its order affects nothing).
  std::unordered_map<RequestId, std::unique_ptr<Live>> entries_;
  std::deque<Request*> waiting_;   // FCFS: arrival order (preempted at the front);
                                   // priority: sorted by (priority, arrival, id)
  std::vector<Request*> running_;  // admission order
  std::vector<RequestId> finished_since_last_step_;
  // The last plan's requests in its order (null once finished), so that its update finds
  // them without a lookup by id.
  std::vector<Live*> planned_;
  std::int64_t planned_step_ = -1;
  std::int64_t next_step_ = 0;
  SchedulerStats stats_;
  // Null unless config_.prepare_prompts_ahead. Declared last, so destroyed (its worker joined)
  // before the requests it may be preparing.
  std::unique_ptr<PromptPreparer> preparer_;
};

}  // namespace kv
