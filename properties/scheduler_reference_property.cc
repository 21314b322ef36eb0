// Scheduler against ReferenceScheduler: random workloads over the option space (chunked
// prefill on/off, long-prefill threshold, fcfs/priority, max_num_seqs, max_model_len, prefix
// caching on/off, full-sequence gate on/off, both free orders), always a configuration vLLM
// accepts (SchedulerConfig::validate). Both run the same arrivals and aborts; every step's
// decisions (what ran, what was admitted with which hit, preemptions, finishes, queue orders,
// counters, free blocks) must be equal. Requests that arrive in the same step share an
// arrival time and ids are "r0".."r11", so the priority tie-breaks ("r10" < "r9") are hit.
// A failure prints the workload (config, arrivals, aborts) and the first differing field.
#include <algorithm>
#include <sstream>

#include "model/sched/scheduler.h"
#include "properties/harness.h"
#include "properties/properties.h"
#include "properties/reference_scheduler.h"
#include "properties/state_runner.h"

namespace kv::props {
namespace {

struct Arrival {
  std::int64_t step = 0;
  RequestSpec spec;
};

struct Workload {
  SchedulerConfig config;
  std::vector<Arrival> arrivals;                           // by step, then request index
  std::vector<std::pair<std::int64_t, RequestId>> aborts;  // by step

  std::string describe() const {
    const SchedulerConfig& s = config;
    std::ostringstream os;
    os << "config blocks=" << s.cache.num_blocks << " block_size=" << s.cache.block_size
       << " max_model_len=" << s.cache.max_model_len << " caching=" << (s.cache.enable_caching ? "on" : "off")
       << " free_order=" << to_string(s.cache.free_order) << " budget=" << s.max_num_batched_tokens
       << " max_num_seqs=" << s.max_num_seqs << " chunked=" << (s.enable_chunked_prefill ? "on" : "off")
       << " threshold=" << s.long_prefill_token_threshold
       << " policy=" << (s.policy == SchedulingPolicy::kFcfs ? "fcfs" : "priority")
       << " gate=" << (s.full_sequence_gate ? "on" : "off") << "\n";
    for (const Arrival& a : arrivals) {
      os << "step " << a.step << ": arrive " << a.spec.id << " priority=" << a.spec.priority << " prompt=["
         << a.spec.prompt.front() << ".." << a.spec.prompt.back() << "] (" << a.spec.prompt.size()
         << " tokens) max_tokens=" << a.spec.outputs.size() << "\n";
    }
    for (const auto& [step, id] : aborts) os << "step " << step << ": abort " << id << "\n";
    return os.str();
  }
};

SchedulerConfig gen_config() {
  SchedulerConfig s;
  KvCacheConfig& c = s.cache;
  c.block_size = *rc::gen::element(2, 4, 16);
  c.num_blocks = *rc::gen::inRange(4, 41);
  c.free_order = *rc::gen::element(FreeOrder::kClassic, FreeOrder::kUnhashedFirst);
  c.enable_caching = *rc::gen::inRange(0, 4) != 0;
  const std::int64_t pool = static_cast<std::int64_t>(c.num_blocks - 1) * c.block_size;
  // Half the cases use the whole pool as max_model_len: the tightest pool vLLM accepts.
  c.max_model_len = *rc::gen::inRange(0, 2) == 0
                        ? pool
                        : *rc::gen::inRange<std::int64_t>(std::min<std::int64_t>(2 * c.block_size, pool), pool + 1);
  s.max_num_seqs = *rc::gen::inRange(1, 9);
  s.enable_chunked_prefill = *rc::gen::inRange(0, 3) != 0;
  // A budget vLLM accepts: at least max_num_seqs, and max_model_len with chunked prefill off.
  const std::int64_t low =
      s.enable_chunked_prefill ? s.max_num_seqs : std::max<std::int64_t>(c.max_model_len, s.max_num_seqs);
  s.max_num_batched_tokens = *rc::gen::inRange<std::int64_t>(low, low + 97);
  s.long_prefill_token_threshold =
      *rc::gen::inRange(0, 3) == 0 ? *rc::gen::inRange<std::int64_t>(1, c.max_model_len + 1) : 0;
  s.policy = *rc::gen::element(SchedulingPolicy::kFcfs, SchedulingPolicy::kPriority);
  s.full_sequence_gate = *rc::gen::inRange(0, 2) == 0;
  return s;
}

// Prompts cut one of two shared documents (prefix-cache hits), then a private suffix.
RequestSpec gen_request(int index, std::int64_t max_model_len, std::int64_t step) {
  RequestSpec spec;
  spec.id = "r" + std::to_string(index);
  spec.priority = *rc::gen::inRange(-1, 3);
  spec.arrival_time_us = step;
  const std::int64_t prompt_len = *rc::gen::inRange<std::int64_t>(1, max_model_len);
  const std::int64_t shared = *rc::gen::inRange<std::int64_t>(0, prompt_len + 1);
  const TokenId doc = 10000 * (*rc::gen::inRange(1, 3));
  for (std::int64_t k = 0; k < prompt_len; ++k) {
    spec.prompt.push_back(k < shared ? doc + k : 1000000 + 10000 * index + k);
  }
  // Long outputs (half the requests) grow into the pool and force preemptions.
  const std::int64_t max_tokens =
      *rc::gen::inRange<std::int64_t>(*rc::gen::inRange(0, 2) == 0 ? 1 : max_model_len / 2, max_model_len + 1);
  for (std::int64_t k = 0; k < max_tokens; ++k) spec.outputs.push_back(5000000 + 10000 * index + k);
  return spec;
}

Workload gen_workload() {
  Workload w;
  w.config = gen_config();
  const int n = *rc::gen::inRange(1, 13);
  for (int i = 0; i < n; ++i) {
    const std::int64_t step = *rc::gen::inRange<std::int64_t>(0, 17);
    w.arrivals.push_back({step, gen_request(i, w.config.cache.max_model_len, step)});
  }
  std::stable_sort(w.arrivals.begin(), w.arrivals.end(),
                   [](const Arrival& a, const Arrival& b) { return a.step < b.step; });
  const int num_aborts = *rc::gen::inRange(0, 3);
  for (int k = 0; k < num_aborts; ++k) {
    w.aborts.emplace_back(*rc::gen::inRange<std::int64_t>(0, 41), "r" + std::to_string(*rc::gen::inRange(0, n)));
  }
  std::stable_sort(w.aborts.begin(), w.aborts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return w;
}

// One step of kvsim's Scheduler with the instant executor, seen as StepDecisions.
StepDecisions kvsim_step(Scheduler& s) {
  StepDecisions d;
  const StepPlan plan = s.schedule();
  StepResult executed;
  for (const ScheduledRequest& sr : plan.requests) {
    const auto tokens = static_cast<std::int64_t>(sr.token_ids.size());
    if (sr.is_new) {
      d.admitted.push_back({sr.id, tokens, sr.num_computed_tokens, s.find(sr.id)->num_preemptions > 0});
    } else {
      d.scheduled_running.emplace_back(sr.id, tokens);
    }
    if (sr.samples) executed.sampled.emplace_back(sr.id, sr.next_token);
  }
  d.total_tokens = plan.total_tokens;
  d.preempted = plan.preempted;
  d.free_blocks_after_schedule = s.kv_cache().num_free_blocks();
  for (const TokenEvent& ev : s.update_from_output(plan, executed)) {
    if (ev.finished) d.finished.push_back(ev.id);
  }
  d.waiting = s.waiting_ids();
  d.running = s.running_ids();
  for (const auto& ids : {d.waiting, d.running}) {
    for (const RequestId& id : ids) d.counters[id] = {s.find(id)->num_computed_tokens, s.find(id)->num_output_tokens()};
  }
  d.free_blocks = s.kv_cache().num_free_blocks();
  return d;
}

// Steps compared per case. A run may legitimately never end: with the priority policy, two
// requests of equal (priority, arrival) and no room for both preempt themselves in turn
// (the victim is the first of the tied, which alternates), exactly as vLLM does.
constexpr std::int64_t kMaxSteps = 3000;

CaseOutcome run_both(const Workload& w) {
  CaseOutcome o;
  Scheduler sched(w.config);
  ReferenceScheduler ref(w.config);
  std::size_t next_arrival = 0, next_abort = 0;
  for (std::int64_t step = 0; step < kMaxSteps; ++step) {
    note_step(static_cast<int>(step));
    for (; next_abort < w.aborts.size() && w.aborts[next_abort].first == step; ++next_abort) {
      sched.abort(w.aborts[next_abort].second);
      ref.abort(w.aborts[next_abort].second);
    }
    for (; next_arrival < w.arrivals.size() && w.arrivals[next_arrival].step == step; ++next_arrival) {
      const RequestSpec& spec = w.arrivals[next_arrival].spec;
      if (Status st = sched.add_request(spec); !st.ok()) {
        return {false, static_cast<int>(step), "kvsim refused a request vLLM accepts: " + st.message()};
      }
      ref.add_request(spec);
    }
    if (next_arrival == w.arrivals.size() && !sched.has_unfinished() && ref.idle()) return o;
    const StepDecisions want = ref.step();
    const StepDecisions got = kvsim_step(sched);
    if (const std::string diff = first_difference(want, got); !diff.empty()) {
      return {false, static_cast<int>(step), "step " + std::to_string(step) + ": " + diff};
    }
  }
  return o;  // agreed on every step so far (a livelock both models share is vLLM's behaviour)
}

}  // namespace

void scheduler_reference_property() {
  const Workload w = gen_workload();
  if (Status valid = w.config.validate(); !valid.ok()) RC_FAIL("generated a refused config: " + valid.message());
  const CaseOutcome o = run_isolated([&] { return run_both(w); });
  if (!o.passed) RC_FAIL(o.message + "\n---- workload ----\n" + w.describe() + "---- end of workload ----");
}

}  // namespace kv::props
