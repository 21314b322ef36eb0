#include "replay/latency_record.h"

#include <algorithm>
#include <cmath>

#include "model/util/percentile.h"

namespace kv::replay {

namespace {

LatencyPercentiles summarize_us(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  LatencyPercentiles p;
  p.count = static_cast<std::int64_t>(v.size());
  p.p50 = std::llround(percentile_of_sorted(v, 50));
  p.p90 = std::llround(percentile_of_sorted(v, 90));
  p.p99 = std::llround(percentile_of_sorted(v, 99));
  p.max = v.empty() ? 0 : v.back();
  return p;
}

std::vector<double> to_ms(const std::vector<std::int64_t>& us) {
  std::vector<double> out;
  out.reserve(us.size());
  for (std::int64_t v : us) out.push_back(static_cast<double>(v) / 1000.0);
  return out;
}

template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

void LatencyRecord::add_request(const RequestMetrics& m, const GoodputSlo& goodput) {
  if (m.first_token_us >= 0) {
    ttft_.push_back(m.first_token_us - m.arrival_us);
    arrival_ttft_.emplace_back(m.arrival_us, m.first_token_us - m.arrival_us);
  }
  if (m.output_tokens > 1) tpot_.push_back((m.finish_us - m.first_token_us) / (m.output_tokens - 1));
  e2e_.push_back(m.finish_us - m.arrival_us);
  const double ttft_ms = static_cast<double>(m.first_token_us - m.arrival_us) / 1000.0;
  const double e2el_ms = static_cast<double>(m.finish_us - m.arrival_us) / 1000.0;
  const double tpot_ms = m.output_tokens > 1 ? (e2el_ms - ttft_ms) / static_cast<double>(m.output_tokens - 1) : 0.0;
  if (m.output_tokens > 1) tpot_ms_.push_back(tpot_ms);
  if (goodput.enabled() && goodput.met(ttft_ms, tpot_ms, e2el_ms)) ++good_;
  const std::int64_t first_sec = m.arrival_us / 1000000, last_sec = m.finish_us / 1000000;
  if (first_sec >= 0 && last_sec >= first_sec) {
    ++live_changes_[first_sec];
    --live_changes_[last_sec + 1];
  }
}

void LatencyRecord::merge(const LatencyRecord& other) {
  append(ttft_, other.ttft_);
  append(tpot_, other.tpot_);
  append(e2e_, other.e2e_);
  append(tpot_ms_, other.tpot_ms_);
  append(arrival_ttft_, other.arrival_ttft_);
  itl_.merge(other.itl_);
  good_ += other.good_;
  last_token_us_ = std::max(last_token_us_, other.last_token_us_);
  for (const auto& [sec, n] : other.tokens_per_second_) tokens_per_second_[sec] += n;
  for (const auto& [sec, change] : other.live_changes_) live_changes_[sec] += change;
}

void LatencyRecord::summarize(ReplaySummary& sum, const LatencyFigureOptions& options) const {
  sum.ttft_us = summarize_us(ttft_);
  sum.tpot_us = summarize_us(tpot_);
  sum.e2e_us = summarize_us(e2e_);
  serving_metrics(sum, options);
  sum.overload = judge_overload(arrival_ttft_, options.overload_ttft_ms);
}

void LatencyRecord::serving_metrics(ReplaySummary& sum, const LatencyFigureOptions& options) const {
  ServingMetrics& s = sum.serving;
  const std::vector<double>& p = options.percentiles;
  s.completed = sum.requests_finished;
  s.failed = sum.requests_rejected;
  s.good = good_;
  s.duration_s = static_cast<double>(std::max(sum.sim_time_us, last_token_us_)) / 1e6;
  s.total_input_tokens = sum.prompt_tokens;
  s.total_output_tokens = sum.output_tokens;
  const double d = s.duration_s > 0 ? s.duration_s : 1;
  s.request_throughput = static_cast<double>(s.completed) / d;
  s.output_throughput = static_cast<double>(s.total_output_tokens) / d;
  s.total_token_throughput = static_cast<double>(s.total_input_tokens + s.total_output_tokens) / d;
  s.request_goodput = options.goodput.enabled() ? static_cast<double>(s.good) / d : -1;
  for (const auto& [sec, n] : tokens_per_second_) {
    s.max_output_tokens_per_s = std::max(s.max_output_tokens_per_s, static_cast<double>(n));
  }
  std::int64_t live = 0;
  for (const auto& [sec, change] : live_changes_) {
    live += change;
    s.max_concurrent_requests = std::max(s.max_concurrent_requests, live);
  }
  s.ttft_ms = latency_stats(to_ms(ttft_), p);
  s.tpot_ms = latency_stats(tpot_ms_, p);
  s.itl_ms = latency_stats(itl_, p);
  s.e2el_ms = latency_stats(to_ms(e2e_), p);
}

}  // namespace kv::replay
