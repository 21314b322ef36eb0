// ReferenceScheduler: a small executable model of vLLM v1's Scheduler.schedule() and
// update_from_output(), written from the rules of tests/golden-scheduler/README.md and, for
// speculative decoding and the Mamba align chunk split, tests/golden-spec/README.md alone. It
// shares no code with model/sched/ (only the block layer, KvCacheManager, and Request as the
// manager's input; the speculative method's derived numbers come from the README's table, not
// from SpeculativeConfig), so a property can run both on the same workload and compare every
// step's decisions (StepDecisions).
// Model, deliberately plain (O(n) lists, no incremental bookkeeping):
//   1. waiting_ holds FCFS order; for the priority policy its order is irrelevant and the
//      head is found by a scan for the smallest (priority, arrival, id as a string).
//   2. running_ is the running list; a request is in exactly one of waiting_ and running_
//      while live, and holds blocks exactly while in running_.
//   3. One step() is the README's "One step" minus aborts and arrivals: schedule, the instant
//      executor (accepted drafts plus one token per request whose computed tokens reach its
//      tokens), rollback of rejected drafts, stops, then the drafter's proposals.
//   4. A request holds drafts only while running and decoding; they are the true continuation
//      of its outputs (the drafter guesses right; SpecAnswers says how many are accepted).
// Requests must be ones vLLM accepts (prompt shorter than max_model_len, max_tokens >= 1).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/block_hasher.h"
#include "model/kv_cache_manager.h"
#include "model/request.h"
#include "model/sched/scheduler.h"

namespace kv::props {

// What one step decided, as the golden-scheduler files' `expect` (new and resumed admissions
// in one list, in admission order).
struct StepDecisions {
  struct Admitted {
    RequestId id;
    std::int64_t tokens = 0;
    std::int64_t hit = 0;
    bool resumed = false;
    bool operator==(const Admitted&) const = default;
  };
  std::vector<std::pair<RequestId, std::int64_t>> scheduled_running;
  std::vector<Admitted> admitted;
  std::int64_t total_tokens = 0;
  std::vector<RequestId> preempted, finished, waiting, running;
  std::map<RequestId, std::pair<std::int64_t, std::int64_t>> counters;  // computed, outputs
  // Speculative decoding: drafts scheduled for verification (padding included) per request in
  // schedule order, drafts held by every live request after the step, and the step's
  // statistics (requests with drafts, draft tokens, accepted tokens).
  std::vector<std::pair<RequestId, std::int64_t>> scheduled_drafts;
  std::map<RequestId, std::int64_t> held_drafts;
  std::array<std::int64_t, 3> spec_stats{};
  std::size_t free_blocks_after_schedule = 0, free_blocks = 0;
  bool operator==(const StepDecisions&) const = default;
};

// The executor's and the drafter's answers, the same for both schedulers: how many of the
// `real` (non-padding) drafts `id` verified in `step` are accepted (0..real), and how many
// drafts (0..K) it is handed after `step`, holding `num_tokens` tokens.
struct SpecAnswers {
  std::function<int(const RequestId& id, std::int64_t step, int real)> accepted;
  std::function<int(const RequestId& id, std::int64_t step, std::int64_t num_tokens)> drafts;
};

// The drafter's n proposals for a request with num_outputs outputs: its next outputs (the last
// one repeated past the end; the request stops before they matter).
std::vector<TokenId> draft_tokens(const OutputTokens& outputs, std::int64_t num_outputs, int n);

// "" when equal, else the first differing field: "preempted: want [a], got [a,b]".
std::string first_difference(const StepDecisions& want, const StepDecisions& got);

class ReferenceScheduler {
 public:
  explicit ReferenceScheduler(const SchedulerConfig& config);

  void add_request(const RequestSpec& spec);
  void abort(const RequestId& id);  // a finished or unknown id is ignored
  // `answers` is needed only with speculative decoding on.
  StepDecisions step(std::int64_t step = 0, const SpecAnswers* answers = nullptr);
  bool idle() const { return waiting_.empty() && running_.empty(); }

 private:
  struct Seq {
    std::unique_ptr<Request> request;
    OutputTokens outputs;  // the k-th sampled token is outputs[k]
    int priority = 0;
    std::int64_t arrival = 0;
    bool was_preempted = false;
    std::vector<TokenId> drafts;  // held: the next outputs, proposed after the last step
    bool prefilling = false;      // is_prefill_chunk, as its last schedule left it
    std::int64_t junction = 0;    // J of its last lookup (Mamba align split), 0: none
  };
  struct Chunk {
    Seq* seq;
    std::int64_t tokens;  // drafts included
    std::int64_t drafts;  // scheduled for verification (padding included)
    bool padded;          // the drafts are padding
  };
  // What the README's table derives from the speculative method.
  struct Derived {
    int k = 0;
    bool use_eagle = false;
    std::int64_t lookahead = 0;
    std::int64_t drafting_slots = 0;
  };
  static Derived derive(const SchedulerConfig& config);

  void running_pass(std::vector<Chunk>& chunks, std::int64_t& budget, StepDecisions& d);
  bool fit_or_preempt(Seq& s, std::int64_t n, std::vector<Chunk>& chunks, std::int64_t& budget, std::size_t& index,
                      StepDecisions& d);
  void waiting_pass(std::vector<Chunk>& chunks, std::int64_t& budget, StepDecisions& d);
  std::size_t waiting_head() const;
  std::vector<RequestId> waiting_order() const;
  std::int64_t align_split(const Seq& s, std::int64_t start, std::int64_t n) const;
  void sample_and_stop(const std::vector<Chunk>& chunks, std::int64_t step, const SpecAnswers* answers,
                       StepDecisions& d);
  // Appends one output; true when the request stopped (it is then dropped).
  bool append(Seq& s, TokenId token, StepDecisions& d);
  void propose_drafts(const std::vector<RequestId>& scheduled, std::int64_t step, const SpecAnswers* answers);
  void drop(Seq* s);  // frees its blocks and forgets it

  SchedulerConfig config_;
  Derived spec_;
  std::int64_t budget_;       // max_num_scheduled_tokens
  std::int64_t align_block_;  // the Mamba align group's block size, 0: none
  BlockHasher hasher_;
  KvCacheManager kv_;
  std::map<RequestId, std::unique_ptr<Seq>> live_;
  std::vector<Seq*> waiting_;
  std::vector<Seq*> running_;
};

}  // namespace kv::props
