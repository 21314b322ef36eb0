// ReferenceScheduler: a small executable model of vLLM v1's Scheduler.schedule() and
// update_from_output(), written from the rules of tests/golden-scheduler/README.md alone. It
// shares no code with model/sched/scheduler.cc (only the block layer, KvCacheManager, and Request
// as the manager's input), so a property can run both on the same workload and compare every
// step's decisions (StepDecisions).
// Model, deliberately plain (O(n) lists, no incremental bookkeeping):
//   1. waiting_ holds FCFS order; for the priority policy its order is irrelevant and the
//      head is found by a scan for the smallest (priority, arrival, id as a string).
//   2. running_ is the running list; a request is in exactly one of waiting_ and running_
//      while live, and holds blocks exactly while in running_.
//   3. One step() is the README's "One step" minus aborts and arrivals: schedule, the instant
//      executor (one token per request whose computed tokens reach its tokens), then stops.
// Requests must be ones vLLM accepts (prompt shorter than max_model_len, max_tokens >= 1).
#pragma once

#include <cstdint>
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
  std::size_t free_blocks_after_schedule = 0, free_blocks = 0;
  bool operator==(const StepDecisions&) const = default;
};

// "" when equal, else the first differing field: "preempted: want [a], got [a,b]".
std::string first_difference(const StepDecisions& want, const StepDecisions& got);

class ReferenceScheduler {
 public:
  explicit ReferenceScheduler(const SchedulerConfig& config);

  void add_request(const RequestSpec& spec);
  void abort(const RequestId& id);  // a finished or unknown id is ignored
  StepDecisions step();
  bool idle() const { return waiting_.empty() && running_.empty(); }

 private:
  struct Seq {
    std::unique_ptr<Request> request;
    OutputTokens outputs;  // the k-th sampled token is outputs[k]
    int priority = 0;
    std::int64_t arrival = 0;
    bool was_preempted = false;
  };
  struct Chunk {
    Seq* seq;
    std::int64_t tokens;
  };

  void running_pass(std::vector<Chunk>& chunks, std::int64_t& budget, StepDecisions& d);
  bool fit_or_preempt(Seq& s, std::int64_t n, std::vector<Chunk>& chunks, std::int64_t& budget, std::size_t& index,
                      StepDecisions& d);
  void waiting_pass(std::vector<Chunk>& chunks, std::int64_t& budget, StepDecisions& d);
  std::size_t waiting_head() const;
  std::vector<RequestId> waiting_order() const;
  void sample_and_stop(const std::vector<Chunk>& chunks, StepDecisions& d);
  void drop(Seq* s);  // frees its blocks and forgets it

  SchedulerConfig config_;
  BlockHasher hasher_;
  KvCacheManager kv_;
  std::map<RequestId, std::unique_ptr<Seq>> live_;
  std::vector<Seq*> waiting_;
  std::vector<Seq*> running_;
};

}  // namespace kv::props
