// Scheduler against ReferenceScheduler: random workloads over the option space (chunked
// prefill on/off, long-prefill threshold, fcfs/priority, max_num_seqs, max_model_len, prefix
// caching on/off, full-sequence gate on/off, both free orders, speculative decoding with every
// method, 1..4 speculative tokens and parallel drafting, and a hybrid full attention + Mamba
// "align" cache whose prefill chunks are split on block ends), always a configuration vLLM
// accepts (SchedulerConfig::validate). Both run the same arrivals and aborts and get the same
// acceptance counts and draft proposals (drawn per request and step); every step's decisions
// (what ran, what was admitted with which hit, preemptions, finishes, queue orders, counters,
// drafts scheduled and held, speculative statistics, free blocks) must be equal. Requests that
// arrive in the same step share an arrival time and ids are "r0".."r11", so the priority
// tie-breaks ("r10" < "r9") are hit. A failure prints the workload (config, arrivals, aborts,
// acceptance and draft draws) and the first differing field.
#include <algorithm>
#include <sstream>

#include "model/sched/scheduler.h"
#include "properties/harness.h"
#include "properties/properties.h"
#include "properties/reference_scheduler.h"
#include "properties/state_runner.h"

namespace kv::props {
namespace {

// The last step that can change a workload from outside (its last abort).
constexpr std::int64_t kLastAbortStep = 40;

struct Arrival {
  std::int64_t step = 0;
  RequestSpec spec;
};

// Index (request number + step) into a list of draws: the same answer for both schedulers.
int pick(const std::vector<int>& draws, const RequestId& id, std::int64_t step) {
  const auto at = static_cast<std::size_t>(std::stoll(id.substr(1)) + step);
  return draws[at % draws.size()];
}

bool is_lookup_drafter(SpecMethod m) { return m == SpecMethod::kNgram || m == SpecMethod::kSuffix; }

struct Workload {
  SchedulerConfig config;
  std::vector<Arrival> arrivals;                           // by step, then request index
  std::vector<std::pair<std::int64_t, RequestId>> aborts;  // by step
  std::vector<int> accepted, drafts;                       // speculative draws (pick)

  // The executor accepts up to pick(accepted) drafts; a model drafter proposes K drafts, a
  // lookup drafter up to pick(drafts), never past max_model_len.
  SpecAnswers answers() const {
    SpecAnswers a;
    a.accepted = [this](const RequestId& id, std::int64_t step, int real) {
      return std::min(pick(accepted, id, step), real);
    };
    a.drafts = [this](const RequestId& id, std::int64_t step, std::int64_t num_tokens) {
      const SpeculativeConfig& spec = config.speculative;
      if (!is_lookup_drafter(spec.method)) return spec.num_speculative_tokens;
      const std::int64_t room = std::max<std::int64_t>(config.cache.max_model_len - num_tokens, 0);
      return static_cast<int>(std::min<std::int64_t>(pick(drafts, id, step), room));
    };
    return a;
  }

  std::string describe() const {
    const SchedulerConfig& s = config;
    std::ostringstream os;
    os << "config blocks=" << s.cache.num_blocks << " block_size=" << s.cache.block_size
       << " max_model_len=" << s.cache.max_model_len << " caching=" << (s.cache.enable_caching ? "on" : "off")
       << " free_order=" << to_string(s.cache.free_order) << " budget=" << s.max_num_batched_tokens
       << " max_num_seqs=" << s.max_num_seqs << " chunked=" << (s.enable_chunked_prefill ? "on" : "off")
       << " threshold=" << s.long_prefill_token_threshold
       << " policy=" << (s.policy == SchedulingPolicy::kFcfs ? "fcfs" : "priority")
       << " gate=" << (s.full_sequence_gate ? "on" : "off") << " spec=" << to_string(s.speculative.method)
       << " k=" << s.speculative.num_speculative_tokens
       << " parallel=" << (s.speculative.parallel_drafting ? "on" : "off")
       << " mamba_align=" << (s.cache.groups.empty() ? "off" : "on") << "\n";
    if (s.speculative.enabled()) {
      os << "accepted draws=";
      for (int v : accepted) os << v << " ";
      os << "\ndraft draws=";
      for (int v : drafts) os << v << " ";
      os << "\n";
    }
    for (const Arrival& a : arrivals) {
      os << "step " << a.step << ": arrive " << a.spec.id << " priority=" << a.spec.priority << " prompt=["
         << a.spec.prompt.front() << ".." << a.spec.prompt.back() << "] (" << a.spec.prompt.size()
         << " tokens) max_tokens=" << a.spec.outputs.size() << "\n";
    }
    for (const auto& [step, id] : aborts) os << "step " << step << ": abort " << id << "\n";
    return os.str();
  }
};

// Speculative decoding in half the cases: any method, 1..4 tokens, parallel drafting where the
// method allows it.
SpeculativeConfig gen_speculation() {
  SpeculativeConfig spec;
  if (*rc::gen::inRange(0, 2) == 0) return spec;
  spec.method = *rc::gen::element(SpecMethod::kEagle, SpecMethod::kEagle3, SpecMethod::kMtp, SpecMethod::kDspark,
                                  SpecMethod::kDflash, SpecMethod::kDraftModel, SpecMethod::kNgram, SpecMethod::kSuffix,
                                  SpecMethod::kMedusa);
  spec.num_speculative_tokens = *rc::gen::inRange(1, 5);
  spec.parallel_drafting = *rc::gen::inRange(0, 2) == 0;
  if (!spec.validate().ok()) spec.parallel_drafting = false;
  return spec;
}

// Full attention + Mamba "align" (one speculative block per speculative token), one block size.
std::vector<KvCacheGroupSpec> mamba_align_groups(int block_size, int k) {
  KvCacheGroupSpec full, mamba;
  full.spec.block_size = block_size;
  full.layer_names = {"attention"};
  mamba.spec.type = AttentionType::kMamba;
  mamba.spec.block_size = block_size;
  mamba.spec.mamba_mode = MambaCacheMode::kAlign;
  mamba.spec.num_speculative_blocks = k;
  mamba.spec.mamba_state_bytes = full.spec.page_size_bytes();  // one page: the pages are equal
  mamba.layer_names = {"mamba"};
  return {full, mamba};
}

SchedulerConfig gen_config() {
  SchedulerConfig s;
  KvCacheConfig& c = s.cache;
  c.block_size = *rc::gen::element(2, 4, 16);
  c.num_blocks = *rc::gen::inRange(4, 41);
  c.free_order = *rc::gen::element(FreeOrder::kClassic, FreeOrder::kUnhashedFirst);
  c.enable_caching = *rc::gen::inRange(0, 4) != 0;
  const bool mamba = c.enable_caching && *rc::gen::inRange(0, 3) == 0;
  s.speculative = gen_speculation();
  const int k = s.speculative.num_speculative_tokens;
  // Mamba align needs ceil(max_model_len / block) + 2 + K blocks besides the null block.
  if (mamba) c.num_blocks = std::max(c.num_blocks, k + 5);
  const std::int64_t pool = static_cast<std::int64_t>(c.num_blocks - 1 - (mamba ? 2 + k : 0)) * c.block_size;
  // Half the cases use the whole pool as max_model_len: the tightest pool vLLM accepts.
  c.max_model_len = *rc::gen::inRange(0, 2) == 0
                        ? pool
                        : *rc::gen::inRange<std::int64_t>(std::min<std::int64_t>(2 * c.block_size, pool), pool + 1);
  s.max_num_seqs = *rc::gen::inRange(1, 9);
  s.enable_chunked_prefill = mamba || *rc::gen::inRange(0, 3) != 0;
  // A budget vLLM accepts: at least max_num_seqs, max_model_len with chunked prefill off, a
  // Mamba block with Mamba, and more than the drafter's slots.
  std::int64_t low =
      s.enable_chunked_prefill ? s.max_num_seqs : std::max<std::int64_t>(c.max_model_len, s.max_num_seqs);
  if (mamba) low = std::max<std::int64_t>(low, c.block_size);
  const std::int64_t slots = std::int64_t{s.speculative.drafting_slots_per_seq()} * s.max_num_seqs;
  s.max_num_batched_tokens = *rc::gen::inRange<std::int64_t>(low, low + 97) + slots;
  std::int64_t threshold = *rc::gen::inRange(0, 3) == 0 ? *rc::gen::inRange<std::int64_t>(1, c.max_model_len + 1) : 0;
  if (mamba && threshold > 0) threshold = std::max<std::int64_t>(threshold, c.block_size);
  // A threshold below 1 + K cuts a padded admission below its padding (vLLM then rolls its
  // computed tokens back below 0): left out, as in the golden-spec files.
  if (threshold > 0 && threshold < 1 + k) threshold = 1 + k <= c.max_model_len ? 1 + k : 0;
  s.long_prefill_token_threshold = threshold;
  s.policy = *rc::gen::element(SchedulingPolicy::kFcfs, SchedulingPolicy::kPriority);
  s.full_sequence_gate = *rc::gen::inRange(0, 2) == 0;
  if (mamba) c.groups = mamba_align_groups(c.block_size, k);
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
    w.aborts.emplace_back(*rc::gen::inRange<std::int64_t>(0, kLastAbortStep + 1),
                          "r" + std::to_string(*rc::gen::inRange(0, n)));
  }
  std::stable_sort(w.aborts.begin(), w.aborts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (w.config.speculative.enabled()) {
    const auto k = w.config.speculative.num_speculative_tokens;
    w.accepted = *rc::gen::container<std::vector<int>>(16, rc::gen::inRange(0, k + 1));
    w.drafts = *rc::gen::container<std::vector<int>>(16, rc::gen::inRange(0, k + 1));
  }
  return w;
}

// One step of kvsim's Scheduler with the instant executor (and the answers' acceptance counts
// and drafts), seen as StepDecisions.
StepDecisions kvsim_step(Scheduler& s, const Workload& w, const SpecAnswers& answers,
                         const std::map<RequestId, OutputTokens>& outputs, std::int64_t step) {
  StepDecisions d;
  const SchedulerStats before = s.stats();
  const StepPlan plan = s.schedule();
  StepResult executed;
  for (const ScheduledRequest& sr : plan.requests) {
    const auto tokens = static_cast<std::int64_t>(sr.token_ids.size());
    if (sr.is_new) {
      d.admitted.push_back({sr.id, tokens, sr.num_computed_tokens, s.find(sr.id)->num_preemptions > 0});
    } else {
      d.scheduled_running.emplace_back(sr.id, tokens);
    }
    if (!sr.spec_token_ids.empty()) d.scheduled_drafts.emplace_back(sr.id, std::ssize(sr.spec_token_ids));
    if (!sr.samples) continue;
    int accepted = 0;
    if (!sr.spec_token_ids.empty()) {
      const auto real = static_cast<int>(std::find(sr.spec_token_ids.begin(), sr.spec_token_ids.end(), kPaddingDraft) -
                                         sr.spec_token_ids.begin());
      accepted = std::clamp(answers.accepted(sr.id, step, real), 0, real);
      executed.num_accepted.emplace_back(sr.id, accepted);
    }
    const OutputTokens& out = outputs.at(sr.id);
    const auto next = static_cast<std::size_t>(s.find(sr.id)->num_output_tokens() + accepted);
    executed.sampled.emplace_back(sr.id, out[std::min(next, out.size() - 1)]);
  }
  d.total_tokens = plan.total_tokens;
  d.preempted = plan.preempted;
  d.free_blocks_after_schedule = s.kv_cache().num_free_blocks();
  for (const TokenEvent& ev : s.update_from_output(plan, executed)) {
    if (ev.finished) d.finished.push_back(ev.id);
  }
  const SchedulerStats& after = s.stats();
  d.spec_stats = {after.spec_num_drafts - before.spec_num_drafts,
                  after.spec_num_draft_tokens - before.spec_num_draft_tokens,
                  after.spec_num_accepted_tokens - before.spec_num_accepted_tokens};
  const int k = w.config.speculative.num_speculative_tokens;
  if (plan.total_tokens > 0 && k > 0) {
    for (const ScheduledRequest& sr : plan.requests) {
      const Request* r = s.find(sr.id);
      if (r == nullptr) continue;  // finished
      const int n = std::clamp(answers.drafts(sr.id, step, r->num_tokens()), 0, k);
      s.update_draft_token_ids(sr.id, draft_tokens(outputs.at(sr.id), r->num_output_tokens(), n));
    }
  }
  d.waiting = s.waiting_ids();
  d.running = s.running_ids();
  for (const auto& ids : {d.waiting, d.running}) {
    for (const RequestId& id : ids) {
      const Request* r = s.find(id);
      d.counters[id] = {r->num_computed_tokens, r->num_output_tokens()};
      d.held_drafts[id] = std::ssize(r->spec_token_ids);
    }
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
  const SpecAnswers answers = w.answers();
  std::map<RequestId, OutputTokens> outputs;
  for (const Arrival& a : w.arrivals) outputs[a.spec.id] = a.spec.outputs;
  std::size_t next_arrival = 0, next_abort = 0;
  int idle_steps = 0;
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
    const StepDecisions want = ref.step(step, &answers);
    const StepDecisions got = kvsim_step(sched, w, answers, outputs, step);
    if (const std::string diff = first_difference(want, got); !diff.empty()) {
      return {false, static_cast<int>(step), "step " + std::to_string(step) + ": " + diff};
    }
    // Two steps that scheduled nothing with no arrival or abort left: the state is frozen (a
    // Mamba chunk that can never end on a block, a prompt the lowered budget never fits).
    idle_steps = want.total_tokens == 0 ? idle_steps + 1 : 0;
    if (idle_steps >= 2 && next_arrival == w.arrivals.size() && step > kLastAbortStep) return o;
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
