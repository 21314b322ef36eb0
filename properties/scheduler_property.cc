// Level (c): the Scheduler over the KV-cache manager, executing every step on the simulated
// device with shadow-memory verification in full mode (every attention read checked).
// Commands: arrivals, steps, aborts, and drain (step until every request is done). The model
// is the workload (what arrived, what was aborted); the system's own outputs are checked
// against it and against the scheduling rules:
//   - the device reports no violation: no attention read sees a wrong slot;
//   - a plan never exceeds the token budget or max_num_seqs, and its total is its tokens;
//   - no request is admitted (is_new) in a step that preempted;
//   - a preempted request has computed nothing, is counted (preemptions, recomputed tokens)
//     and comes back as a new request (recomputed);
//   - outputs arrive in order, once each, and a request finishes with exactly its output
//     length; abort succeeds exactly for live requests;
//   - drain ends with every request finished, every block free and a resettable cache;
//   - check_invariants() holds after every step;
//   - speculative decoding (half the cases: any method, 1..3 tokens, per-position acceptance
//     rates): the device verifies drafts, rolls the rejected ones back in its shadow memory and
//     proposes the next ones, which the scheduler is handed; every read above still holds,
//     and a plan stays within the budget less the drafter's slots;
//   - isolation: requests carry LoRA adapters, cache salts and multimodal items; the shadow
//     memory seeds each request's fingerprints with its adapter and salt (a hit across them is
//     a mismatch), and every block a request is admitted with is cached under the request's own
//     hash as ReferenceHasher computes it, so no two adapters, salts or multimodal inputs ever
//     share a block.
// A failure prints the shrunk command list as a scheduler script (config, arrive, step,
// abort, drain lines).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "model/sched/scheduler.h"
#include "properties/properties.h"
#include "properties/reference_hasher.h"
#include "properties/state_runner.h"
#include "sim/sim_device.h"

namespace kv::props {
namespace {

struct SchedCase {
  SchedulerConfig config;
  std::string line() const {
    const KvCacheConfig& c = config.cache;
    std::ostringstream os;
    os << "config blocks=" << c.num_blocks << " block_size=" << c.block_size
       << " caching=" << (c.enable_caching ? "on" : "off") << " free_order=" << to_string(c.free_order)
       << " max_model_len=" << c.max_model_len << " budget=" << config.max_num_batched_tokens
       << " max_num_seqs=" << config.max_num_seqs << " chunked=" << (config.enable_chunked_prefill ? "on" : "off")
       << " long_prefill=" << config.long_prefill_token_threshold
       << " policy=" << (config.policy == SchedulingPolicy::kFcfs ? "fcfs" : "priority")
       << " lookahead=" << config.num_lookahead_tokens
       << " full_sequence_gate=" << (config.full_sequence_gate ? "on" : "off");
    const SpeculativeConfig& spec = config.speculative;
    if (spec.enabled()) {
      os << " spec=" << to_string(spec.method) << " k=" << spec.num_speculative_tokens
         << " parallel=" << (spec.parallel_drafting ? "on" : "off") << " acceptance=";
      for (std::size_t i = 0; i < spec.acceptance_rates.size(); ++i) {
        os << (i ? "," : "") << spec.acceptance_rates[i];
      }
    }
    return os.str();
  }
};

struct SchedModel {
  SchedCase c;
  int next_id = 0;
  std::vector<std::string> arrived;  // not aborted by a command (they may have finished)
};

struct SchedSut {
  explicit SchedSut(const SchedulerConfig& config) : scheduler(config) {
    sim::SimOptions o;
    o.model = find_model_shape("tiny").value();
    o.verify = sim::VerifyMode::kFull;
    o.max_num_seqs = config.max_num_seqs;
    o.speculative = config.speculative;
    auto d = sim::SimDevice::create(o);
    if (!d.ok()) RC_FAIL("cannot create the simulated device: " + d.status().message());
    device = std::move(d.value());
  }
  Scheduler scheduler;
  std::unique_ptr<sim::SimDevice> device;
  std::map<std::string, std::int64_t> output_len;  // what each request asked for
  std::map<std::string, std::int64_t> received;    // outputs seen so far
  std::set<std::string> done;                      // finished or aborted
  std::set<std::string> must_resume_new;           // preempted, not yet rescheduled
  std::map<std::string, HashExtras> extras;        // what each request's hashes include
};

// Every block `sr` is admitted with (its prefix-cache hit) is cached under the request's own
// hash for its position, as the reference hasher computes it from the request's tokens and
// extras: the hit came from the same tokens, adapter, salt and multimodal inputs.
void check_hits_are_own_prefix(const SchedSut& sut, const ScheduledRequest& sr, const std::string& at) {
  const Scheduler& s = sut.scheduler;
  const KvCacheConfig& c = s.config().cache;
  if (!sr.is_new || sr.num_cached_tokens == 0) return;
  const Request* r = s.find(sr.id);
  if (r == nullptr) RC_FAIL(at + "admitted request " + sr.id + " is unknown");
  const ReferenceHasher ref(s.config().hash_algo, s.config().hash_seed);
  const std::vector<TokenId> tokens(r->tokens().begin(), r->tokens().end());
  const std::vector<BlockHash> want = ref.hashes(tokens, c.block_size, sut.extras.at(sr.id));
  const auto hits = static_cast<std::size_t>(sr.num_cached_tokens / c.block_size);
  for (std::size_t i = 0; i < hits; ++i) {
    const BlockHash& got = s.kv_cache().pool().block(sr.block_ids[i]).hash;
    if (i >= want.size() || !(got == want[i])) {
      RC_FAIL(at + "request " + sr.id + " was admitted with block " + std::to_string(sr.block_ids[i]) +
              " at position " + std::to_string(i) + ", which is not cached under its own hash (another " +
              "adapter, salt, multimodal input or prefix)");
    }
  }
}

using SchedCommand = rc::state::Command<SchedModel, SchedSut>;

void step_once(SchedSut& sut) {
  Scheduler& s = sut.scheduler;
  const SchedulerConfig& cfg = s.config();
  // Computed tokens before the step: what a preemption throws away.
  std::map<std::string, std::int64_t> computed_before;
  for (const auto& [id, len] : sut.output_len) {
    if (const Request* r = s.find(id)) computed_before[id] = r->num_computed_tokens;
  }
  const SchedulerStats before = s.stats();
  const StepPlan plan = s.schedule();
  const std::string at = "step " + std::to_string(plan.step) + ": ";

  std::int64_t total = 0;
  bool any_new = false;
  for (const ScheduledRequest& sr : plan.requests) {
    total += static_cast<std::int64_t>(sr.token_ids.size());
    any_new = any_new || sr.is_new;
    if (sut.must_resume_new.erase(sr.id) != 0 && !sr.is_new) {
      RC_FAIL(at + "preempted request " + sr.id + " was scheduled without being recomputed");
    }
    if (sr.token_ids.empty()) RC_FAIL(at + "request " + sr.id + " scheduled with no tokens");
    check_hits_are_own_prefix(sut, sr, at);
  }
  if (total != plan.total_tokens) RC_FAIL(at + "total_tokens differs from the sum of the requests' tokens");
  // The drafter's slots lower the budget: K - 1 per sequence for eagle-style parallel
  // drafting, 1 (K in parallel) for a draft model.
  const SpeculativeConfig& spec = cfg.speculative;
  const bool eagle_style = spec.use_eagle();
  const std::int64_t k = spec.num_speculative_tokens;
  const std::int64_t slots = spec.method == SpecMethod::kDraftModel     ? (spec.parallel_drafting ? k : 1)
                             : eagle_style && spec.drafts_in_parallel() ? k - 1
                                                                        : 0;
  const std::int64_t budget = cfg.max_num_batched_tokens - slots * cfg.max_num_seqs;
  if (plan.total_tokens > budget) {
    RC_FAIL(at + std::to_string(plan.total_tokens) + " tokens exceed the budget of " + std::to_string(budget));
  }
  if (static_cast<int>(plan.requests.size()) > cfg.max_num_seqs ||
      static_cast<int>(s.num_running()) > cfg.max_num_seqs) {
    RC_FAIL(at + "more than max_num_seqs=" + std::to_string(cfg.max_num_seqs) + " requests");
  }
  if (!plan.preempted.empty() && any_new) RC_FAIL(at + "a request was admitted in a step that preempted");
  std::int64_t thrown_away = 0;
  for (const RequestId& id : plan.preempted) {
    const Request* r = s.find(id);
    if (r == nullptr || r->num_computed_tokens != 0 || r->status != RequestStatus::kPreempted) {
      RC_FAIL(at + "preempted request " + id + " is not waiting with 0 computed tokens");
    }
    if (s.kv_cache().holds_blocks(id)) RC_FAIL(at + "preempted request " + id + " still holds blocks");
    thrown_away += computed_before.count(id) ? computed_before[id] : 0;
    sut.must_resume_new.insert(id);
  }
  if (s.stats().preemptions - before.preemptions != static_cast<std::int64_t>(plan.preempted.size())) {
    RC_FAIL(at + "preemptions counted " + std::to_string(s.stats().preemptions - before.preemptions) + ", plan lists " +
            std::to_string(plan.preempted.size()));
  }
  if (s.stats().recomputed_tokens - before.recomputed_tokens != thrown_away) {
    RC_FAIL(at + "recomputed tokens counted " + std::to_string(s.stats().recomputed_tokens - before.recomputed_tokens) +
            ", preempted requests had computed " + std::to_string(thrown_away));
  }

  const StepResult result = sut.device->execute(plan);
  if (!result.violations.empty()) {
    std::string v = at + "the device found " + std::to_string(result.violations.size()) + " violation(s):";
    for (const std::string& line : result.violations) v += "\n  " + line;
    RC_FAIL(v);
  }
  for (const TokenEvent& ev : s.update_from_output(plan, result)) {
    std::int64_t& got = sut.received[ev.id];
    if (ev.output_index != got) {
      RC_FAIL(at + "request " + ev.id + " output " + std::to_string(ev.output_index) + " arrived, expected output " +
              std::to_string(got));
    }
    ++got;
    const std::int64_t want = sut.output_len.at(ev.id);
    if (ev.finished) {
      if (got != want || ev.status != RequestStatus::kFinishedLength) {
        RC_FAIL(at + "request " + ev.id + " finished (" + to_string(ev.status) + ") after " + std::to_string(got) +
                " outputs, it asked for " + std::to_string(want));
      }
      sut.done.insert(ev.id);
    } else if (got >= want) {
      RC_FAIL(at + "request " + ev.id + " has all " + std::to_string(want) + " outputs but did not finish");
    }
  }
  for (const auto& [id, drafts] : result.draft_token_ids) s.update_draft_token_ids(id, drafts);
  std::string why;
  if (!s.check_invariants(&why)) RC_FAIL(at + "check_invariants: " + why);
}

struct Arrive final : SchedCommand {
  std::string id;
  std::vector<TokenId> prompt;
  std::int64_t outputs;
  HashExtras extras;  // salt, LoRA, multimodal items
  int priority;
  Arrive(std::string i, std::vector<TokenId> p, std::int64_t o, HashExtras e, int pr)
      : id(std::move(i)), prompt(std::move(p)), outputs(o), extras(std::move(e)), priority(pr) {}
  void checkPreconditions(const SchedModel& m) const override {
    require(std::find(m.arrived.begin(), m.arrived.end(), id) == m.arrived.end());
  }
  void apply(SchedModel& m) const override {
    m.arrived.push_back(id);
    ++m.next_id;
  }
  void run(const SchedModel&, SchedSut& sut) const override {
    RequestSpec spec;
    spec.id = id;
    spec.prompt = prompt;
    for (std::int64_t k = 0; k < outputs; ++k) spec.outputs.push_back((k * 7 + 1) % 3);
    spec.extras = extras;
    sut.extras[id] = extras;
    spec.priority = priority;
    spec.arrival_time_us = static_cast<std::int64_t>(sut.output_len.size());
    const Status st = sut.scheduler.add_request(std::move(spec));
    if (!st.ok()) RC_FAIL("arrive " + id + " rejected: " + st.message());
    sut.output_len[id] = outputs;
    sut.received[id] = 0;
  }
  void show(std::ostream& os) const override {
    os << "arrive " << id << " prompt=";
    for (std::size_t i = 0; i < prompt.size(); ++i) os << (i ? "," : "") << prompt[i];
    os << " outputs=" << outputs;
    if (!extras.cache_salt.empty()) os << " salt=" << extras.cache_salt;
    if (!extras.lora_name.empty()) os << " lora=" << extras.lora_name;
    for (const MultiModalItem& mm : extras.mm_items) {
      os << " mm=" << mm.identifier << "@" << mm.offset << "+" << mm.length;
    }
    if (priority != 0) os << " priority=" << priority;
  }
};

struct Step final : SchedCommand {
  int count;
  explicit Step(int n) : count(n) {}
  void run(const SchedModel&, SchedSut& sut) const override {
    for (int k = 0; k < count; ++k) step_once(sut);
  }
  void show(std::ostream& os) const override { os << "step " << count; }
};

struct Abort final : SchedCommand {
  std::string id;
  explicit Abort(std::string i) : id(std::move(i)) {}
  void checkPreconditions(const SchedModel& m) const override {
    require(std::find(m.arrived.begin(), m.arrived.end(), id) != m.arrived.end());
  }
  void apply(SchedModel& m) const override { m.arrived.erase(std::find(m.arrived.begin(), m.arrived.end(), id)); }
  void run(const SchedModel&, SchedSut& sut) const override {
    const bool live = sut.done.count(id) == 0;
    const bool ok = sut.scheduler.abort(id);
    if (ok != live) RC_FAIL("abort " + id + (ok ? " succeeded for a finished request" : " failed for a live request"));
    sut.done.insert(id);
    sut.must_resume_new.erase(id);
    std::string why;
    if (!sut.scheduler.check_invariants(&why)) RC_FAIL("after abort " + id + ": check_invariants: " + why);
  }
  void show(std::ostream& os) const override { os << "abort " << id; }
};

// Steps until nothing is left; then every request is done, every block is free and the prefix
// cache can be reset.
struct Drain final : SchedCommand {
  void run(const SchedModel&, SchedSut& sut) const override {
    std::int64_t budget = 0;
    for (const auto& [id, len] : sut.output_len) budget += len;
    const std::int64_t limit = 200 + 50 * budget;
    std::int64_t steps = 0;
    while (sut.scheduler.has_unfinished()) {
      if (++steps > limit) RC_FAIL("drain: no progress after " + std::to_string(limit) + " steps");
      step_once(sut);
    }
    for (const auto& [id, len] : sut.output_len) {
      if (sut.done.count(id) == 0) RC_FAIL("drain: request " + id + " never finished");
    }
    const std::vector<std::string> late = sut.device->finish_run();
    if (!late.empty()) RC_FAIL("drain: the device's final verification found: " + late.front());
    KvCacheManager& kv = sut.scheduler.mutable_kv_cache();
    const auto n = static_cast<std::size_t>(sut.scheduler.config().cache.num_blocks - 1);
    if (kv.num_free_blocks() != n)
      RC_FAIL("drain: " + std::to_string(kv.num_free_blocks()) + " free blocks, not " + std::to_string(n));
    if (!kv.reset_prefix_cache()) RC_FAIL("drain: reset_prefix_cache fails with nothing running");
  }
  void show(std::ostream& os) const override { os << "drain"; }
};

// Salt, adapter and multimodal items of a prompt of `prompt_len` tokens (each usually absent,
// so most requests can share prefixes; two values each, so tenants can collide).
HashExtras gen_extras(std::int64_t prompt_len) {
  HashExtras e;
  e.cache_salt = *rc::gen::element<std::string>("", "", "", "s1", "s2");
  e.lora_name = *rc::gen::element<std::string>("", "", "", "l1", "l2");
  const int items = *rc::gen::inRange(0, 5) < 3 ? 0 : *rc::gen::inRange(1, 3);
  std::int64_t from = 0;
  for (int k = 0; k < items && from < prompt_len; ++k) {
    MultiModalItem mm;
    mm.identifier = *rc::gen::element<std::string>("img1", "img2");
    mm.offset = *rc::gen::inRange<std::int64_t>(from, prompt_len);
    mm.length = *rc::gen::inRange<std::int64_t>(1, prompt_len - mm.offset + 1);
    from = mm.offset + mm.length;
    e.mm_items.push_back(std::move(mm));
  }
  return e;
}

rc::Gen<std::shared_ptr<const SchedCommand>> gen_sched_command(const SchedModel& m) {
  return rc::gen::exec([m]() -> std::shared_ptr<const SchedCommand> {
    const KvCacheConfig& c = m.c.config.cache;
    const int kind = *rc::gen::inRange(0, 10);
    if (kind < 4 || m.arrived.empty()) {
      // prompt + outputs fit max_model_len and the pool (what add_request accepts).
      const std::int64_t max_total =
          std::min<std::int64_t>(c.max_model_len, static_cast<std::int64_t>(c.num_blocks - 1) * c.block_size);
      const std::int64_t prompt_len = *rc::gen::inRange<std::int64_t>(1, max_total);
      const std::int64_t outputs = *rc::gen::inRange<std::int64_t>(1, max_total - prompt_len + 1);
      auto prompt = *rc::gen::container<std::vector<TokenId>>(static_cast<std::size_t>(prompt_len),
                                                              rc::gen::inRange<TokenId>(0, 2));
      HashExtras extras = gen_extras(prompt_len);
      const int priority = m.c.config.policy == SchedulingPolicy::kPriority ? *rc::gen::inRange(0, 3) : 0;
      return std::make_shared<Arrive>("q" + std::to_string(m.next_id), std::move(prompt), outputs, std::move(extras),
                                      priority);
    }
    if (kind < 8) return std::make_shared<Step>(*rc::gen::inRange(1, 4));
    if (kind < 9) return std::make_shared<Abort>(*rc::gen::elementOf(m.arrived));
    return std::make_shared<Drain>();
  });
}

SchedCase gen_sched_case(FreeOrder order) {
  SchedCase sc;
  SchedulerConfig& s = sc.config;
  KvCacheConfig& c = s.cache;
  c.free_order = order;
  c.num_blocks = *rc::gen::inRange(3, 17);
  c.block_size = *rc::gen::inRange(2, 5);
  c.enable_caching = *rc::gen::inRange(0, 4) != 3;
  c.max_model_len = *rc::gen::inRange(2 * c.block_size, 8 * c.block_size + 1);
  s.max_num_seqs = *rc::gen::inRange(1, 5);
  s.enable_chunked_prefill = *rc::gen::inRange(0, 4) != 3;
  s.max_num_batched_tokens = s.enable_chunked_prefill ? *rc::gen::inRange<std::int64_t>(1, 33)
                                                      : c.max_model_len + *rc::gen::inRange<std::int64_t>(0, 9);
  s.long_prefill_token_threshold = *rc::gen::inRange(0, 3) == 2 ? *rc::gen::inRange<std::int64_t>(1, 9) : 0;
  s.policy = *rc::gen::inRange(0, 3) == 2 ? SchedulingPolicy::kPriority : SchedulingPolicy::kFcfs;
  s.full_sequence_gate = *rc::gen::inRange(0, 2) == 0;
  if (*rc::gen::inRange(0, 2) == 0) {
    SpeculativeConfig& spec = s.speculative;
    spec.method = *rc::gen::element(SpecMethod::kEagle, SpecMethod::kEagle3, SpecMethod::kMtp, SpecMethod::kDspark,
                                    SpecMethod::kDflash, SpecMethod::kDraftModel, SpecMethod::kNgram,
                                    SpecMethod::kSuffix, SpecMethod::kMedusa);
    spec.num_speculative_tokens = *rc::gen::inRange(1, 4);
    spec.parallel_drafting = *rc::gen::inRange(0, 2) == 0;
    if (!spec.validate().ok()) spec.parallel_drafting = false;
    for (int i = 0; i < spec.num_speculative_tokens; ++i) {
      spec.acceptance_rates.push_back(*rc::gen::element(0.0, 0.5, 0.8, 1.0));
    }
    // The drafter's slots come out of the budget; a threshold below 1 + K would cut a padded
    // admission below its padding (left out, as in the golden-spec files).
    s.max_num_batched_tokens += std::int64_t{spec.drafting_slots_per_seq()} * s.max_num_seqs;
    if (s.long_prefill_token_threshold > 0 && s.long_prefill_token_threshold < 1 + spec.num_speculative_tokens) {
      s.long_prefill_token_threshold = 0;
    }
    // Lookahead slots are capped at max_model_len: a pool holding it (as vLLM requires) always
    // fits one request.
    c.max_model_len = std::min<std::int64_t>(c.max_model_len, std::int64_t{c.num_blocks - 1} * c.block_size);
  }
  return sc;
}

}  // namespace

void scheduler_property(FreeOrder order) {
  SchedModel m0;
  m0.c = gen_sched_case(order);
  const auto commands = *rc::state::gen::commands(m0, &gen_sched_command);
  const SchedulerConfig config = m0.c.config;
  const CaseOutcome o = run_isolated([&] { return run_on_new_sut<SchedSut>(commands, m0, config); });
  if (!o.passed) {
    std::ostringstream os;
    const std::size_t shown =
        o.failed_step < 0 ? commands.size() : std::min(commands.size(), static_cast<std::size_t>(o.failed_step) + 1);
    os << o.message << "\n---- scheduler script (" << shown + 1 << " lines) ----\n" << m0.c.line() << "\n";
    show_commands(os, commands, o.failed_step);
    os << "---- end of scheduler script ----\n";
    RC_FAIL(os.str());
  }
}

}  // namespace kv::props
