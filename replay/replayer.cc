#include "replay/replayer.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

#include "model/util/check.h"
#include "traces/trace.h"

namespace kv::replay {

namespace {
// The live requests' metrics, in slots: a request's slot is the tag its TokenEvents carry
// (RequestSpec::tag), so a token finds its request without a lookup by id. The index by id is
// never iterated, so its order affects nothing.
class LiveRequests {
 public:
  std::size_t size() const { return by_id_.size(); }
  // The slot the next add() takes.
  std::int64_t next_tag() const { return free_.empty() ? static_cast<std::int64_t>(slots_.size()) : free_.back(); }
  void add(RequestMetrics m) {
    const std::int64_t tag = next_tag();
    if (free_.empty()) {
      slots_.push_back(std::move(m));
    } else {
      free_.pop_back();
      slots_[static_cast<std::size_t>(tag)] = std::move(m);
    }
    by_id_.emplace(slots_[static_cast<std::size_t>(tag)].id, tag);
  }
  RequestMetrics* find(const RequestId& id) {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &slots_[static_cast<std::size_t>(it->second)];
  }
  // The request of a token: `tag` must be a live slot holding `id`.
  RequestMetrics& at(std::int64_t tag, const RequestId& id) {
    KV_CHECK(
        tag >= 0 && static_cast<std::size_t>(tag) < slots_.size() && slots_[static_cast<std::size_t>(tag)].id == id,
        "token for unknown request " << id);
    return slots_[static_cast<std::size_t>(tag)];
  }
  void erase(std::int64_t tag) {
    by_id_.erase(slots_[static_cast<std::size_t>(tag)].id);
    slots_[static_cast<std::size_t>(tag)] = RequestMetrics{};
    free_.push_back(tag);
  }

 private:
  std::vector<RequestMetrics> slots_;
  std::vector<std::int64_t> free_;
  std::unordered_map<RequestId, std::int64_t> by_id_;
};
}  // namespace

// Everything one run accumulates; the Replayer's methods advance it step by step.
struct Replayer::Run {
  ReplaySummary sum;
  std::int64_t now_ns = 0;
  LiveRequests live;
  LatencyRecord latency;
  RequestSpec pending;
  bool have_pending = false, source_done = false;
  bool stopped = false;  // a verification failure ended the run
  bool stalled = false;  // an open source's engine waits for its next request
  std::string stall_reason;
  std::int64_t last_arrival_us = 0;
  std::int64_t measured_total = 0;
  bool any_measured = false;
  std::int64_t evictions_before = 0;
  FrontendLanes frontend;
  std::int64_t pending_frontend_us = 0;  // the front end's delay of `pending` (engine - client arrival)
  // --max-concurrency through a front end (send_through_frontend): when the last tokens of
  // finished requests reach the client (each holds a slot until then), the last send, and
  // whether `pending` has been sent (its arrival is then the engine's).
  std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> client_done_ns;
  std::int64_t last_send_ns = 0;
  bool pending_sent = false;

  std::int64_t pending_arrival_ns() const { return pending.arrival_time_us * 1000; }
};

Replayer::Replayer(Scheduler& scheduler, Device& device, RequestSource& source, ReplayOptions options,
                   StepTimePredictor* predictor)
    : scheduler_(scheduler),
      device_(device),
      source_(source),
      options_(options),
      predictor_(predictor),
      log_(options.keep_decision_text) {}

Replayer::~Replayer() = default;

Status Replayer::pull_next(Run& r) {
  if (r.source_done) return {};
  auto got = source_.next(&r.pending);
  if (!got.ok()) return got.status();
  r.have_pending = *got;
  if (r.have_pending) r.pending.num_encoder_tokens = options_.encoder_tokens_per_request;
  if (!r.have_pending) {
    r.source_done = true;
  } else if (r.pending.arrival_time_us > trace::kMaxArrivalTimeUs) {  // its nanoseconds would overflow
    return Status::error("request " + r.pending.id + ": arrival time " + std::to_string(r.pending.arrival_time_us) +
                         " us is beyond " + std::to_string(trace::kMaxArrivalTimeUs) + " (about 31 years)");
  } else if (r.pending.arrival_time_us < r.last_arrival_us) {
    return Status::error("request " + r.pending.id + ": arrival time " + std::to_string(r.pending.arrival_time_us) +
                         " us is before the previous request's " + std::to_string(r.last_arrival_us));
  } else if (closed_loop_frontend()) {
    r.last_arrival_us = r.pending.arrival_time_us;
    r.pending_frontend_us = 0;  // sent, and passed through the front end, when a slot frees
    r.pending_sent = false;
  } else {
    r.last_arrival_us = r.pending.arrival_time_us;
    // The engine sees it once the front end is done (rounded up to the microsecond).
    const std::int64_t engine_ns = r.frontend.engine_arrival_ns(options_.frontend, r.pending.arrival_time_us * 1000,
                                                                r.pending.num_prompt_tokens());
    r.pending_frontend_us = (engine_ns + 999) / 1000 - r.pending.arrival_time_us;
    r.pending.arrival_time_us += r.pending_frontend_us;
  }
  return {};
}

void Replayer::request_done(Run& r, const RequestMetrics& m) {
  if (on_request_done) on_request_done(m);
  if (m.status == "rejected") return;
  r.sum.admitted_prompt_tokens += m.prompt_tokens;
  r.sum.admitted_hit_tokens += std::max<std::int64_t>(m.cached_tokens, 0);
  r.sum.admitted_tier_tokens += m.tier_tokens;
  r.latency.add_request(m, options_.goodput);
}

// --max-concurrency with a front end: sends `pending` once the client has a free slot, at the
// latest of its own arrival, the previous send (the client sends in order) and, when every
// slot is held, the moment the first held one is released (a finished request's last token
// reaching the client: no request still in the engine can release one earlier, since the
// output lane delivers in order). The engine sees it after the request lane and the latency.
// False when every slot is held by a request still in the engine.
bool Replayer::send_through_frontend(Run& r) {
  const std::int64_t wanted = std::max(r.pending_arrival_ns(), r.last_send_ns);
  while (!r.client_done_ns.empty() && r.client_done_ns.top() <= wanted) r.client_done_ns.pop();
  std::int64_t send_ns = wanted;
  if (static_cast<std::int64_t>(r.live.size() + r.client_done_ns.size()) >= options_.max_concurrency) {
    if (r.client_done_ns.empty()) return false;
    send_ns = r.client_done_ns.top();
    r.client_done_ns.pop();
  }
  r.last_send_ns = send_ns;
  const std::int64_t engine_ns =
      r.frontend.engine_arrival_ns(options_.frontend, send_ns, r.pending.num_prompt_tokens());
  r.pending.arrival_time_us = (engine_ns + 999) / 1000;
  r.pending_frontend_us = r.pending.arrival_time_us - send_ns / 1000;
  r.pending_sent = true;
  return true;
}

// Admits every arrival the clock has reached, in source order.
Status Replayer::admit_arrivals(Run& r) {
  while (r.have_pending && r.pending_arrival_ns() <= r.now_ns) {
    if (closed_loop_frontend()) {
      if (!r.pending_sent && !send_through_frontend(r)) break;
      if (r.pending_arrival_ns() > r.now_ns) break;  // on its way through the front end
    } else if (options_.max_concurrency > 0) {
      if (static_cast<std::int64_t>(r.live.size()) >= options_.max_concurrency) break;
      r.pending.arrival_time_us = std::max(r.pending.arrival_time_us, r.now_ns / 1000);  // sent now
    }
    RequestMetrics m;
    m.id = r.pending.id;
    m.arrival_us = r.pending.sent_at_us >= 0 ? r.pending.sent_at_us  // the client's
                                             : r.pending.arrival_time_us - r.pending_frontend_us;
    m.prompt_tokens = r.pending.num_prompt_tokens();
    ++r.sum.requests_total;
    const auto outputs = static_cast<std::int64_t>(r.pending.outputs.size());
    r.pending.tag = r.live.next_tag();
    Status added = scheduler_.add_request(std::move(r.pending));
    if (!added.ok()) {
      m.status = "rejected";
      m.reject_reason = added.message();
      m.output_tokens = outputs;
      ++r.sum.requests_rejected;
      log_.record_rejection(m.id, added.message());
      request_done(r, m);
    } else {
      r.live.add(std::move(m));
    }
    if (Status s = pull_next(r); !s.ok()) return s;
  }
  return {};
}

// Notes the newly scheduled requests' first-schedule data before the device runs.
void Replayer::note_first_schedule(Run& r, const StepPlan& plan) {
  for (const ScheduledRequest& s : plan.requests) {
    if (!s.is_new) continue;
    RequestMetrics* m = r.live.find(s.id);
    const Request* q = scheduler_.find(s.id);
    if (m == nullptr || q == nullptr) continue;
    m->cached_tokens = q->num_cached_tokens;
    if (q->num_preemptions == 0) m->tier_tokens = s.num_external_tokens;
    m->preemptions = q->num_preemptions;
  }
}

// Runs the plan on the device (once), advances the clock and logs the decisions. *stop is set
// when a verification failure ends the run.
StepRecord Replayer::execute(Run& r, const StepPlan& plan, bool* stop) {
  StepResult result = device_.execute(plan);
  const std::int64_t predicted = predictor_ ? predictor_->predict_ns(plan) : result.duration_ns;
  StepRecord rec;
  if (!result.violations.empty()) {
    r.sum.violations.insert(r.sum.violations.end(), result.violations.begin(), result.violations.end());
    if (options_.stop_on_violation) {
      log_.record(plan, 0, static_cast<std::int64_t>(scheduler_.kv_cache().num_free_blocks()));
      *stop = true;
      return rec;
    }
  }
  std::int64_t step_ns = predicted;
  if (options_.clock == ReplayOptions::Clock::kWall && result.measured_ns >= 0) step_ns = result.measured_ns;
  if (result.measured_ns >= 0) {
    r.measured_total += result.measured_ns;
    r.any_measured = true;
  }
  rec.step = plan.step;
  rec.start_us = r.now_ns / 1000;
  r.now_ns += std::max<std::int64_t>(step_ns, 1);
  rec.duration_ns = step_ns;
  rec.measured_ns = result.measured_ns;
  rec.predicted_ns = predicted;
  rec.counters = result.counters;
  r.sum.prompt_tokens_computed += result.counters.prompt_tokens_computed;
  r.sum.tier_load_ns += result.counters.tier_load_ns;
  r.sum.tier_stall_ns += result.counters.tier_stall_ns;

  rec.evictions_total = scheduler_.kv_cache().pool().num_evictions();
  log_.record(plan, rec.evictions_total - r.evictions_before,
              static_cast<std::int64_t>(scheduler_.kv_cache().num_free_blocks()));
  r.evictions_before = rec.evictions_total;

  rec.num_requests = static_cast<int>(plan.requests.size());
  for (const ScheduledRequest& s : plan.requests) {
    const auto n = static_cast<std::int64_t>(s.token_ids.size());
    if (s.num_computed_tokens + n <= s.num_prompt_tokens)
      rec.prefill_tokens += n;
    else
      rec.decode_tokens += n;
    if (s.is_new) rec.cached_tokens += s.num_cached_tokens;
  }
  rec.preempted = static_cast<int>(plan.preempted.size());
  apply_tokens(r, plan, result, rec);
  return rec;
}

// Hands the device's tokens to the scheduler and closes the requests that finished.
void Replayer::apply_tokens(Run& r, const StepPlan& plan, const StepResult& result, StepRecord& rec) {
  const std::vector<TokenEvent> events = scheduler_.update_from_output(plan, result);
  if (r.sum.spec.num_speculative_tokens > 0) [[unlikely]] {
    for (const auto& [id, drafts] : result.draft_token_ids) scheduler_.update_draft_token_ids(id, drafts);
    std::vector<std::int64_t>& per_position = r.sum.spec.accepted_per_position;
    for (const auto& [id, accepted] : result.num_accepted) {
      for (int i = 0; i < accepted && static_cast<std::size_t>(i) < per_position.size(); ++i) ++per_position[i];
    }
  }
  // The client sees the step's tokens once the front end has them (the engine clock without one).
  const std::int64_t client_ns =
      events.empty() ? r.now_ns
                     : r.frontend.client_time_ns(options_.frontend, r.now_ns, static_cast<std::int64_t>(events.size()));
  const std::int64_t now_us = client_ns / 1000;
  const bool speculating = r.sum.spec.num_speculative_tokens > 0;
  for (const TokenEvent& ev : events) {
    RequestMetrics& m = r.live.at(ev.tag, ev.id);
    if (ev.output_index == 0)
      m.first_token_us = now_us;
    else if (!speculating || now_us != m.last_token_us)  // tokens of one step: one chunk, one ITL (vLLM's)
      r.latency.add_itl(now_us - m.last_token_us);
    r.latency.add_token(now_us);
    m.last_token_us = now_us;
    m.output_tokens = ev.output_index + 1;
    if (!ev.finished) continue;
    m.finish_us = now_us;
    m.status = to_string(ev.status);
    ++r.sum.requests_finished;
    r.sum.output_tokens += m.output_tokens;
    r.sum.prompt_tokens += m.prompt_tokens;
    request_done(r, m);
    r.live.erase(ev.tag);
    if (closed_loop_frontend()) r.client_done_ns.push(client_ns);
    ++rec.finished;
  }
}

// Hybrid runs: the blocks each group holds after this step, into the record and the figures.
void Replayer::record_groups(Run& r, StepRecord& rec) {
  rec.group_blocks_in_use = scheduler_.kv_cache().blocks_in_use_per_group();
  std::vector<GroupFigures>& groups = r.sum.groups;
  if (groups.empty()) {
    for (const KvCacheGroupSpec& g : scheduler_.config().cache.groups) groups.push_back({describe(g.spec), 0, 0, 0});
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    groups[g].peak_blocks_in_use = std::max(groups[g].peak_blocks_in_use, rec.group_blocks_in_use[g]);
    groups[g].mean_blocks_in_use += static_cast<double>(rec.group_blocks_in_use[g]);  // a sum until finish
  }
}

void Replayer::finish(Run& r) {
  ReplaySummary& sum = r.sum;
  if (sum.violations.empty() || !options_.stop_on_violation) {
    const std::vector<std::string> late = device_.finish_run();
    sum.violations.insert(sum.violations.end(), late.begin(), late.end());
  }
  const SchedulerStats& st = scheduler_.stats();
  sum.preemptions = st.preemptions;
  sum.recomputed_tokens = st.recomputed_tokens;
  sum.encoder_tokens_per_request = options_.encoder_tokens_per_request;
  sum.encoder_tokens = st.encoder_tokens;
  sum.evictions = scheduler_.kv_cache().pool().num_evictions();
  sum.spec.num_drafts = st.spec_num_drafts;
  sum.spec.num_draft_tokens = st.spec_num_draft_tokens;
  sum.spec.num_accepted_tokens = st.spec_num_accepted_tokens;
  sum.cache = scheduler_.kv_cache().stats();
  sum.hit_rate = rate_or_zero(sum.cache.hits, sum.cache.queries);
  sum.request_hit_rate = rate_or_zero(sum.admitted_hit_tokens, sum.admitted_prompt_tokens);
  if (const KvConnector* connector = scheduler_.connector()) {
    sum.tiers = connector->figures();
    sum.tier_hit_rate = rate_or_zero(sum.admitted_tier_tokens, sum.admitted_prompt_tokens);
    sum.combined_hit_rate =
        rate_or_zero(sum.admitted_hit_tokens + sum.admitted_tier_tokens, sum.admitted_prompt_tokens);
  }
  sum.sim_time_us = r.now_ns / 1000;
  sum.measured_total_ns = r.any_measured ? r.measured_total : -1;
  r.latency.summarize(sum, {options_.metric_percentiles, options_.goodput, options_.overload_ttft_ms});
  sum.digest = log_.digest_hex();
  for (std::size_t g = 0; g < sum.groups.size(); ++g) {
    if (sum.steps > 0) sum.groups[g].mean_blocks_in_use /= static_cast<double>(sum.steps);
    sum.groups[g].hit_tokens = scheduler_.kv_cache().hit_tokens_per_group()[g];
  }
}

Status Replayer::publish_events(const Run& r, std::int64_t step) {
  if (event_sink_ == nullptr) return {};
  const std::vector<KvEvent> events = scheduler_.take_kv_events();
  if (events.empty()) return {};
  return event_sink_->publish(step, static_cast<double>(r.now_ns) / 1e9, events);
}

Status Replayer::begin() {
  run_ = std::make_unique<Run>();
  Run& r = *run_;
  if (const SpeculativeConfig& spec = scheduler_.config().speculative; spec.enabled()) {
    r.sum.spec.num_speculative_tokens = spec.num_speculative_tokens;
    r.sum.spec.accepted_per_position.assign(static_cast<std::size_t>(spec.num_speculative_tokens), 0);
  }
  r.evictions_before = scheduler_.kv_cache().pool().num_evictions();
  return pull_next(r);
}

std::optional<std::int64_t> Replayer::next_time_ns() const {
  const Run& r = *run_;
  if (r.stopped || r.stalled) return std::nullopt;
  if (scheduler_.has_unfinished()) return r.now_ns;
  if (r.have_pending) return std::max(r.now_ns, r.pending_arrival_ns());
  return std::nullopt;
}

std::int64_t Replayer::now_ns() const { return run_->now_ns; }
Status Replayer::stall_status() const { return run_->stalled ? Status::error(run_->stall_reason) : Status(); }
const LatencyRecord& Replayer::latency_record() const { return run_->latency; }

Status Replayer::source_grew() {
  Run& r = *run_;
  if (r.have_pending) return {};  // it is read when the pending one is admitted
  r.source_done = false;
  if (Status s = pull_next(r); !s.ok()) return s;
  if (r.stalled && r.have_pending) {  // as a lone engine jumps to its next arrival
    r.stalled = false;
    r.now_ns = std::max(r.now_ns, r.pending_arrival_ns());
  }
  return {};
}

// Nothing can be scheduled: wait for the next arrival, or fail when none can come.
Status Replayer::no_progress(Run& r, const StepPlan& plan) {
  if (r.have_pending) {
    r.now_ns = std::max(r.now_ns, r.pending_arrival_ns());
    return {};
  }
  std::string why = "no request can be scheduled at step " + std::to_string(plan.step) + ": " +
                    std::to_string(scheduler_.num_waiting()) + " waiting, " + std::to_string(scheduler_.num_running()) +
                    " running; the KV pool or token budget is too small for the head request";
  if (!source_open_) return Status::error(why);
  r.stalled = true;
  r.stall_reason = std::move(why);
  return {};
}

Status Replayer::advance() {
  Run& r = *run_;
  if (Status s = admit_arrivals(r); !s.ok()) return s;
  if (!scheduler_.has_unfinished()) {
    if (r.have_pending) r.now_ns = std::max(r.now_ns, r.pending_arrival_ns());  // idle: jump to it
    return {};
  }
  if (options_.max_steps > 0 && r.sum.steps >= options_.max_steps) {
    return Status::error("stopped after --max-steps " + std::to_string(options_.max_steps) +
                         " steps with requests unfinished");
  }
  StepPlan plan = scheduler_.schedule();
  if (plan.requests.empty() && plan.preempted.empty()) {
    if (Status s = no_progress(r, plan); !s.ok()) return s;
    if (plan.finished.empty()) return {};  // else the plan's finished list must reach the device
  }
  note_first_schedule(r, plan);
  StepRecord rec = execute(r, plan, &r.stopped);
  if (Status s = publish_events(r, plan.step); !s.ok()) return s;
  if (r.stopped) return {};
  if (options_.check_invariants_every_step) {
    std::string why;
    KV_CHECK(scheduler_.check_invariants(&why), "after step " << plan.step << ": " << why);
  }
  ++r.sum.steps;
  rec.running = static_cast<int>(scheduler_.num_running());
  rec.waiting = static_cast<int>(scheduler_.num_waiting());
  rec.kv_usage = scheduler_.kv_cache().usage();
  rec.free_blocks = static_cast<std::int64_t>(scheduler_.kv_cache().num_free_blocks());
  if (scheduler_.kv_cache().tables_per_group()) [[unlikely]]
    record_groups(r, rec);
  if (on_step) on_step(rec);
  return {};
}

StatusOr<ReplaySummary> Replayer::end() {
  Run& r = *run_;
  if (Status s = publish_events(r, r.sum.steps); !s.ok()) return s;
  finish(r);
  return r.sum;
}

StatusOr<ReplaySummary> Replayer::run() {
  if (Status s = begin(); !s.ok()) return s;
  while (next_time_ns().has_value()) {
    if (Status s = advance(); !s.ok()) return s;
  }
  return end();
}

}  // namespace kv::replay
