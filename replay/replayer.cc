#include "replay/replayer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "model/util/check.h"
#include "model/util/percentile.h"
#include "traces/trace.h"

namespace kv::replay {

// Everything one run() accumulates; the Replayer's methods advance it step by step.
struct Replayer::Run {
  ReplaySummary sum;
  std::int64_t now_ns = 0;
  std::map<RequestId, RequestMetrics> live;   // ordered: deterministic
  std::vector<std::int64_t> ttft, tpot, e2e;  // microseconds, one per request
  LatencyCounts itl;                          // microseconds, one per output token after the first: kept as counts
  std::vector<double> tpot_ms;                // vLLM's per-request TPOT
  std::vector<std::pair<std::int64_t, std::int64_t>> arrival_ttft;  // for the overload verdict
  // By second of the clock; sparse, so a trace with years between arrivals costs nothing.
  std::map<std::int64_t, std::int64_t> tokens_per_second;
  // Requests live in a second: +1 at a request's first second, -1 after its last (the running
  // sum over seconds is the count), so a long request costs two entries, not one per second.
  std::map<std::int64_t, std::int64_t> live_changes;

  static void bump(std::map<std::int64_t, std::int64_t>& v, std::int64_t second) {
    ++v[std::max<std::int64_t>(second, 0)];
  }
  RequestSpec pending;
  bool have_pending = false, source_done = false;
  std::int64_t last_arrival_us = 0;
  std::int64_t measured_total = 0;
  bool any_measured = false;
  std::int64_t evictions_before = 0;
  FrontendLanes frontend;
  std::int64_t pending_frontend_us = 0;  // the front end's delay of `pending` (engine - client arrival)
  std::int64_t last_client_ns = 0;       // the latest token the client received

  std::int64_t pending_arrival_ns() const { return pending.arrival_time_us * 1000; }
};

namespace {

LatencyPercentiles summarize(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  LatencyPercentiles p;
  p.count = static_cast<std::int64_t>(v.size());
  p.p50 = std::llround(percentile_of_sorted(v, 50));
  p.p90 = std::llround(percentile_of_sorted(v, 90));
  p.p99 = std::llround(percentile_of_sorted(v, 99));
  p.max = v.empty() ? 0 : v.back();
  return p;
}

double ratio(std::int64_t num, std::int64_t den) {
  return den > 0 ? static_cast<double>(num) / static_cast<double>(den) : 0.0;
}

}  // namespace

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
  if (m.first_token_us >= 0) {
    r.ttft.push_back(m.first_token_us - m.arrival_us);
    r.arrival_ttft.emplace_back(m.arrival_us, m.first_token_us - m.arrival_us);
  }
  if (m.output_tokens > 1) r.tpot.push_back((m.finish_us - m.first_token_us) / (m.output_tokens - 1));
  r.e2e.push_back(m.finish_us - m.arrival_us);
  const double ttft_ms = static_cast<double>(m.first_token_us - m.arrival_us) / 1000.0;
  const double e2el_ms = static_cast<double>(m.finish_us - m.arrival_us) / 1000.0;
  const double tpot_ms = m.output_tokens > 1 ? (e2el_ms - ttft_ms) / static_cast<double>(m.output_tokens - 1) : 0.0;
  if (m.output_tokens > 1) r.tpot_ms.push_back(tpot_ms);
  if (options_.goodput.enabled() && options_.goodput.met(ttft_ms, tpot_ms, e2el_ms)) ++r.sum.serving.good;
  const std::int64_t first_sec = m.arrival_us / 1000000, last_sec = m.finish_us / 1000000;
  if (first_sec >= 0 && last_sec >= first_sec) {
    ++r.live_changes[first_sec];
    --r.live_changes[last_sec + 1];
  }
}

// Admits every arrival the clock has reached, in source order.
Status Replayer::admit_arrivals(Run& r) {
  while (r.have_pending && r.pending_arrival_ns() <= r.now_ns) {
    if (options_.max_concurrency > 0) {
      if (static_cast<std::int64_t>(r.live.size()) >= options_.max_concurrency) break;
      r.pending.arrival_time_us = std::max(r.pending.arrival_time_us, r.now_ns / 1000);  // sent now
    }
    RequestMetrics m;
    m.id = r.pending.id;
    m.arrival_us = r.pending.arrival_time_us - r.pending_frontend_us;  // the client's
    m.prompt_tokens = r.pending.num_prompt_tokens();
    ++r.sum.requests_total;
    const auto outputs = static_cast<std::int64_t>(r.pending.outputs.size());
    Status added = scheduler_.add_request(std::move(r.pending));
    if (!added.ok()) {
      m.status = "rejected";
      m.reject_reason = added.message();
      m.output_tokens = outputs;
      ++r.sum.requests_rejected;
      log_.record_rejection(m.id, added.message());
      request_done(r, m);
    } else {
      r.live.emplace(m.id, std::move(m));
    }
    if (Status s = pull_next(r); !s.ok()) return s;
  }
  return {};
}

// Notes the newly scheduled requests' first-schedule data before the device runs.
void Replayer::note_first_schedule(Run& r, const StepPlan& plan) {
  for (const ScheduledRequest& s : plan.requests) {
    if (!s.is_new) continue;
    auto it = r.live.find(s.id);
    const Request* q = scheduler_.find(s.id);
    if (it == r.live.end() || q == nullptr) continue;
    it->second.cached_tokens = q->num_cached_tokens;
    if (q->num_preemptions == 0) it->second.tier_tokens = s.num_external_tokens;
    it->second.preemptions = q->num_preemptions;
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
  r.last_client_ns = std::max(r.last_client_ns, client_ns);
  const std::int64_t now_us = client_ns / 1000;
  const bool speculating = r.sum.spec.num_speculative_tokens > 0;
  for (const TokenEvent& ev : events) {
    auto it = r.live.find(ev.id);
    KV_CHECK(it != r.live.end(), "token for unknown request " << ev.id);
    RequestMetrics& m = it->second;
    if (ev.output_index == 0)
      m.first_token_us = now_us;
    else if (!speculating || now_us != m.last_token_us)  // tokens of one step: one chunk, one ITL (vLLM's)
      r.itl.add(now_us - m.last_token_us);
    Run::bump(r.tokens_per_second, now_us / 1000000);
    m.last_token_us = now_us;
    m.output_tokens = ev.output_index + 1;
    if (!ev.finished) continue;
    m.finish_us = now_us;
    m.status = to_string(ev.status);
    ++r.sum.requests_finished;
    r.sum.output_tokens += m.output_tokens;
    r.sum.prompt_tokens += m.prompt_tokens;
    request_done(r, m);
    r.live.erase(it);
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
  sum.hit_rate = ratio(sum.cache.hits, sum.cache.queries);
  sum.request_hit_rate = ratio(sum.admitted_hit_tokens, sum.admitted_prompt_tokens);
  if (const KvConnector* connector = scheduler_.connector()) {
    sum.tiers = connector->figures();
    sum.tier_hit_rate = ratio(sum.admitted_tier_tokens, sum.admitted_prompt_tokens);
    sum.combined_hit_rate = ratio(sum.admitted_hit_tokens + sum.admitted_tier_tokens, sum.admitted_prompt_tokens);
  }
  sum.sim_time_us = r.now_ns / 1000;
  sum.measured_total_ns = r.any_measured ? r.measured_total : -1;
  sum.ttft_us = summarize(r.ttft);
  sum.tpot_us = summarize(r.tpot);
  sum.e2e_us = summarize(r.e2e);
  serving_metrics(r);
  sum.overload = judge_overload(r.arrival_ttft, options_.overload_ttft_ms);
  sum.digest = log_.digest_hex();
  for (std::size_t g = 0; g < sum.groups.size(); ++g) {
    if (sum.steps > 0) sum.groups[g].mean_blocks_in_use /= static_cast<double>(sum.steps);
    sum.groups[g].hit_tokens = scheduler_.kv_cache().hit_tokens_per_group()[g];
  }
}

void Replayer::serving_metrics(Run& r) {
  ServingMetrics& s = r.sum.serving;
  const auto ms = [](const std::vector<std::int64_t>& us) {
    std::vector<double> out;
    out.reserve(us.size());
    for (std::int64_t v : us) out.push_back(static_cast<double>(v) / 1000.0);
    return out;
  };
  const std::vector<double>& p = options_.metric_percentiles;
  s.completed = r.sum.requests_finished;
  s.failed = r.sum.requests_rejected;
  // Until the client has the last token (the engine's clock at the end without a front end).
  s.duration_s = static_cast<double>(std::max(r.now_ns, r.last_client_ns) / 1000) / 1e6;
  s.total_input_tokens = r.sum.prompt_tokens;
  s.total_output_tokens = r.sum.output_tokens;
  const double d = s.duration_s > 0 ? s.duration_s : 1;
  s.request_throughput = static_cast<double>(s.completed) / d;
  s.output_throughput = static_cast<double>(s.total_output_tokens) / d;
  s.total_token_throughput = static_cast<double>(s.total_input_tokens + s.total_output_tokens) / d;
  s.request_goodput = options_.goodput.enabled() ? static_cast<double>(s.good) / d : -1;
  for (const auto& [sec, n] : r.tokens_per_second) {
    s.max_output_tokens_per_s = std::max(s.max_output_tokens_per_s, static_cast<double>(n));
  }
  std::int64_t live = 0;
  for (const auto& [sec, change] : r.live_changes) {
    live += change;
    s.max_concurrent_requests = std::max(s.max_concurrent_requests, live);
  }
  s.ttft_ms = latency_stats(ms(r.ttft), p);
  s.tpot_ms = latency_stats(r.tpot_ms, p);
  s.itl_ms = latency_stats(r.itl, p);
  s.e2el_ms = latency_stats(ms(r.e2e), p);
}

Status Replayer::publish_events(const Run& r, std::int64_t step) {
  if (event_sink_ == nullptr) return {};
  const std::vector<KvEvent> events = scheduler_.take_kv_events();
  if (events.empty()) return {};
  return event_sink_->publish(step, static_cast<double>(r.now_ns) / 1e9, events);
}

StatusOr<ReplaySummary> Replayer::run() {
  Run r;
  if (const SpeculativeConfig& spec = scheduler_.config().speculative; spec.enabled()) {
    r.sum.spec.num_speculative_tokens = spec.num_speculative_tokens;
    r.sum.spec.accepted_per_position.assign(static_cast<std::size_t>(spec.num_speculative_tokens), 0);
  }
  if (Status s = pull_next(r); !s.ok()) return s;
  r.evictions_before = scheduler_.kv_cache().pool().num_evictions();
  while (true) {
    if (Status s = admit_arrivals(r); !s.ok()) return s;
    if (!scheduler_.has_unfinished()) {
      if (!r.have_pending) break;
      r.now_ns = std::max(r.now_ns, r.pending_arrival_ns());  // idle: jump to the next arrival
      continue;
    }
    if (options_.max_steps > 0 && r.sum.steps >= options_.max_steps) {
      return Status::error("stopped after --max-steps " + std::to_string(options_.max_steps) +
                           " steps with requests unfinished");
    }
    StepPlan plan = scheduler_.schedule();
    if (plan.requests.empty() && plan.preempted.empty()) {
      if (!r.have_pending) {
        return Status::error("no request can be scheduled at step " + std::to_string(plan.step) + ": " +
                             std::to_string(scheduler_.num_waiting()) + " waiting, " +
                             std::to_string(scheduler_.num_running()) +
                             " running; the KV pool or token budget is too small for the head request");
      }
      r.now_ns = std::max(r.now_ns, r.pending_arrival_ns());
      if (plan.finished.empty()) continue;  // else the plan's finished list must reach the device
    }
    note_first_schedule(r, plan);
    bool stop = false;
    StepRecord rec = execute(r, plan, &stop);
    if (Status s = publish_events(r, plan.step); !s.ok()) return s;
    if (stop) break;
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
  }
  if (Status s = publish_events(r, r.sum.steps); !s.ok()) return s;
  finish(r);
  return r.sum;
}

}  // namespace kv::replay
