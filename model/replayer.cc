#include "model/replayer.h"

#include <openssl/evp.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "model/check.h"

namespace kv {

struct DecisionLog::Sha {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Sha() { EVP_MD_CTX_free(ctx); }
};

DecisionLog::DecisionLog(bool keep_text) : sha_(new Sha), keep_text_(keep_text) {
  KV_CHECK(sha_->ctx != nullptr && EVP_DigestInit_ex(sha_->ctx, EVP_sha256(), nullptr) == 1,
           "OpenSSL SHA-256 unavailable");
}

DecisionLog::~DecisionLog() { delete sha_; }

void DecisionLog::append(const std::string& line) {
  KV_CHECK(EVP_DigestUpdate(sha_->ctx, line.data(), line.size()) == 1);
  if (keep_text_) text_ += line;
  ++lines_;
}

std::string DecisionLog::digest_hex() const {
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  KV_CHECK(copy && EVP_MD_CTX_copy_ex(copy, sha_->ctx) == 1 && EVP_DigestFinal_ex(copy, md, &len) == 1);
  EVP_MD_CTX_free(copy);
  BlockHash h;
  std::copy(md, md + 32, h.bytes.begin());
  h.size = 32;
  return h.hex();
}

namespace {
void put_ids(std::string& s, const std::vector<BlockId>& ids) {
  s += '[';
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  s += ']';
}
void put_names(std::string& s, const std::vector<RequestId>& ids) {
  s += '[';
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += ids[i];
  }
  s += ']';
}
}  // namespace

// One line per step:
//   step N tokens T | id +n [new hit=H] blocks=[...] ; ... | preempted=[...] finished=[...]
//   evictions=E free=F
void DecisionLog::record(const StepPlan& plan, std::int64_t new_evictions, std::int64_t free_blocks) {
  std::string s = "step " + std::to_string(plan.step) + " tokens " + std::to_string(plan.total_tokens) + " |";
  for (const ScheduledRequest& r : plan.requests) {
    s += ' ';
    s += r.id;
    s += " +" + std::to_string(r.token_ids.size());
    if (r.is_new) s += " new@" + std::to_string(r.num_computed_tokens) + " hit=" + std::to_string(r.num_cached_tokens);
    s += " blocks=";
    put_ids(s, r.block_ids);
    if (r.samples) s += " sample";
    s += ';';
  }
  s += " | preempted=";
  put_names(s, plan.preempted);
  s += " finished=";
  put_names(s, plan.finished);
  s += " evictions=" + std::to_string(new_evictions) + " free=" + std::to_string(free_blocks) + "\n";
  append(s);
}

void DecisionLog::record_rejection(const std::string& request_id, const std::string& reason) {
  append("reject " + request_id + ": " + reason + "\n");
}

std::int64_t percentile(std::vector<std::int64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(values.size()) + 0.999999999);
  rank = std::clamp<std::size_t>(rank, 1, values.size());
  return values[rank - 1];
}

namespace {
LatencyPercentiles summarize(const std::vector<std::int64_t>& v) {
  LatencyPercentiles p;
  p.count = static_cast<std::int64_t>(v.size());
  p.p50 = percentile(v, 50);
  p.p90 = percentile(v, 90);
  p.p99 = percentile(v, 99);
  p.max = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  return p;
}
}  // namespace

Replayer::Replayer(Scheduler& scheduler, Device& device, RequestSource& source, ReplayOptions options,
                   Device* predictor)
    : scheduler_(scheduler), device_(device), source_(source), options_(options),
      predictor_(predictor), log_(options.keep_decision_text) {}

StatusOr<ReplaySummary> Replayer::run() {
  ReplaySummary sum;
  std::int64_t now_ns = 0;
  std::map<RequestId, RequestMetrics> live;  // ordered: deterministic
  std::vector<std::int64_t> ttft, tpot, e2e;
  RequestSpec pending;
  bool have_pending = false, source_done = false;
  std::int64_t last_arrival_us = 0;
  std::int64_t measured_total = 0;
  bool any_measured = false;

  auto pull = [&]() -> Status {
    if (source_done) return {};
    auto got = source_.next(&pending);
    if (!got.ok()) return got.status();
    have_pending = *got;
    if (!have_pending) {
      source_done = true;
    } else if (pending.arrival_time_us < last_arrival_us) {
      return Status::error("request " + pending.id + ": arrival time " + std::to_string(pending.arrival_time_us) +
                           " us is before the previous request's " + std::to_string(last_arrival_us));
    } else {
      last_arrival_us = pending.arrival_time_us;
    }
    return {};
  };
  auto done = [&](RequestMetrics& m) {
    if (on_request_done) on_request_done(m);
    if (m.status == "rejected") return;
    sum.admitted_prompt_tokens += m.prompt_tokens;
    sum.admitted_hit_tokens += std::max<std::int64_t>(m.cached_tokens, 0);
    if (m.first_token_us >= 0) ttft.push_back(m.first_token_us - m.arrival_us);
    if (m.output_tokens > 1) tpot.push_back((m.finish_us - m.first_token_us) / (m.output_tokens - 1));
    e2e.push_back(m.finish_us - m.arrival_us);
  };

  if (Status s = pull(); !s.ok()) return s;
  std::int64_t evictions_before = scheduler_.kv_cache().pool().num_evictions();
  while (true) {
    // Admit every arrival the clock has reached.
    while (have_pending && pending.arrival_time_us * 1000 <= now_ns) {
      RequestMetrics m;
      m.id = pending.id;
      m.arrival_us = pending.arrival_time_us;
      m.prompt_tokens = static_cast<std::int64_t>(pending.prompt.size());
      ++sum.requests_total;
      const std::int64_t outputs = static_cast<std::int64_t>(pending.outputs.size());
      Status added = scheduler_.add_request(std::move(pending));
      if (!added.ok()) {
        m.status = "rejected";
        m.reject_reason = added.message();
        m.output_tokens = outputs;
        ++sum.requests_rejected;
        log_.record_rejection(m.id, added.message());
        done(m);
      } else {
        live.emplace(m.id, std::move(m));
      }
      if (Status s = pull(); !s.ok()) return s;
    }
    if (!scheduler_.has_unfinished()) {
      if (!have_pending) break;
      now_ns = std::max(now_ns, pending.arrival_time_us * 1000);  // idle: jump to the next arrival
      continue;
    }
    if (options_.max_steps > 0 && sum.steps >= options_.max_steps) {
      return Status::error("stopped after --max-steps " + std::to_string(options_.max_steps) +
                           " steps with requests unfinished");
    }

    StepPlan plan = scheduler_.schedule();
    if (plan.requests.empty() && plan.preempted.empty()) {
      if (have_pending) {
        now_ns = std::max(now_ns, pending.arrival_time_us * 1000);
        // The plan's finished list must still reach the device.
        if (plan.finished.empty()) continue;
      } else {
        return Status::error("no request can be scheduled at step " + std::to_string(plan.step) + ": " +
                             std::to_string(scheduler_.num_waiting()) + " waiting, " +
                             std::to_string(scheduler_.num_running()) +
                             " running; the KV pool or token budget is too small for the head request");
      }
    }
    // Note the newly scheduled requests' first-schedule data before the device runs.
    for (const ScheduledRequest& r : plan.requests) {
      if (!r.is_new) continue;
      auto it = live.find(r.id);
      if (it != live.end()) {
        const Request* q = scheduler_.find(r.id);
        if (q) {
          it->second.cached_tokens = q->num_cached_tokens;
          it->second.preemptions = q->num_preemptions;
        }
      }
    }

    StepResult result = device_.execute(plan);
    std::int64_t predicted = result.duration_ns;
    if (predictor_) predicted = predictor_->execute(plan).duration_ns;
    if (!result.violations.empty()) {
      sum.violations.insert(sum.violations.end(), result.violations.begin(), result.violations.end());
      if (options_.stop_on_violation) {
        log_.record(plan, 0, static_cast<std::int64_t>(scheduler_.kv_cache().num_free_blocks()));
        break;
      }
    }
    std::int64_t step_ns = predicted;
    if (options_.clock == ReplayOptions::Clock::kWall && result.measured_ns >= 0) step_ns = result.measured_ns;
    if (result.measured_ns >= 0) {
      measured_total += result.measured_ns;
      any_measured = true;
    }
    StepRecord rec;
    rec.step = plan.step;
    rec.start_us = now_ns / 1000;
    now_ns += std::max<std::int64_t>(step_ns, 1);
    rec.duration_ns = step_ns;
    rec.measured_ns = result.measured_ns;
    rec.predicted_ns = predicted;
    rec.counters = result.counters;
    sum.prompt_tokens_computed += result.counters.prompt_tokens_computed;

    const std::int64_t evictions_now = scheduler_.kv_cache().pool().num_evictions();
    log_.record(plan, evictions_now - evictions_before,
                static_cast<std::int64_t>(scheduler_.kv_cache().num_free_blocks()));
    evictions_before = evictions_now;

    rec.num_requests = static_cast<int>(plan.requests.size());
    for (const ScheduledRequest& r : plan.requests) {
      const auto n = static_cast<std::int64_t>(r.token_ids.size());
      if (r.num_computed_tokens + n <= r.num_prompt_tokens) rec.prefill_tokens += n;
      else rec.decode_tokens += n;
      if (r.is_new) rec.cached_tokens += r.num_cached_tokens;
    }
    rec.preempted = static_cast<int>(plan.preempted.size());
    const std::vector<TokenEvent> events = scheduler_.update_from_output(plan, result);
    const std::int64_t now_us = now_ns / 1000;
    for (const TokenEvent& ev : events) {
      auto it = live.find(ev.id);
      KV_CHECK(it != live.end(), "token for unknown request " << ev.id);
      RequestMetrics& m = it->second;
      if (ev.output_index == 0) m.first_token_us = now_us;
      m.output_tokens = ev.output_index + 1;
      if (ev.finished) {
        m.finish_us = now_us;
        m.status = to_string(ev.status);
        ++sum.requests_finished;
        sum.output_tokens += m.output_tokens;
        sum.prompt_tokens += m.prompt_tokens;
        done(m);
        live.erase(it);
        ++rec.finished;
      }
    }
    if (options_.check_invariants_every_step) {
      std::string why;
      KV_CHECK(scheduler_.check_invariants(&why), "after step " << plan.step << ": " << why);
    }
    ++sum.steps;
    rec.running = static_cast<int>(scheduler_.num_running());
    rec.waiting = static_cast<int>(scheduler_.num_waiting());
    rec.kv_usage = scheduler_.kv_cache().usage();
    rec.free_blocks = static_cast<std::int64_t>(scheduler_.kv_cache().num_free_blocks());
    rec.evictions_total = evictions_now;
    if (on_step) on_step(rec);
  }

  if (sum.violations.empty() || !options_.stop_on_violation) {
    const std::vector<std::string> late = device_.finish_run();
    sum.violations.insert(sum.violations.end(), late.begin(), late.end());
  }
  const SchedulerStats& st = scheduler_.stats();
  sum.preemptions = st.preemptions;
  sum.recomputed_tokens = st.recomputed_tokens;
  sum.evictions = scheduler_.kv_cache().pool().num_evictions();
  sum.cache = scheduler_.kv_cache().stats();
  sum.hit_rate = sum.cache.queries > 0 ? static_cast<double>(sum.cache.hits) / static_cast<double>(sum.cache.queries) : 0.0;
  sum.request_hit_rate = sum.admitted_prompt_tokens > 0 ? static_cast<double>(sum.admitted_hit_tokens) /
                                                              static_cast<double>(sum.admitted_prompt_tokens)
                                                        : 0.0;
  sum.sim_time_us = now_ns / 1000;
  sum.measured_total_ns = any_measured ? measured_total : -1;
  sum.ttft_us = summarize(ttft);
  sum.tpot_us = summarize(tpot);
  sum.e2e_us = summarize(e2e);
  sum.digest = log_.digest_hex();
  return sum;
}

}  // namespace kv
