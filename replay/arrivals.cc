#include "replay/arrivals.h"

#include <cmath>
#include <limits>
#include <string>

#include "replay/option_error.h"
#include "sim/seeded_normal.h"
#include "traces/trace.h"

namespace kv::replay {

namespace {

double uniform(std::uint64_t& state) {
  sim::SeededNormal s{state};
  const double u = s.uniform();
  state = s.state;
  return u;  // (0, 1]
}

double normal(std::uint64_t& state) {
  sim::SeededNormal s{state};
  const double n = s();
  state = s.state;
  return n;
}

}  // namespace

Status ArrivalOptions::validate() const {
  if (request_rate != 0 && rate_scale != 1) {
    return option_error("rate-scale", "applies to the trace's timestamps, not to --request-rate");
  }
  return {};
}

double gamma_draw(double shape, std::uint64_t& state) {
  if (shape < 1) {  // gamma(a) = gamma(a + 1) * U^(1/a)
    return gamma_draw(shape + 1, state) * std::pow(uniform(state), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = normal(state);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform(state);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

struct ArrivalSource::Gamma {
  std::uint64_t state;
};

ArrivalSource::ArrivalSource(std::unique_ptr<RequestSource> inner, ArrivalOptions options)
    : inner_(std::move(inner)), options_(options), gamma_(std::make_unique<Gamma>(Gamma{options.seed})) {}

ArrivalSource::~ArrivalSource() = default;

namespace {

// Microseconds as an arrival time, or an error when beyond the trace format's limit (so the
// replayer's nanosecond clock cannot overflow).
StatusOr<std::int64_t> arrival_us(double us, const std::string& id) {
  if (!(us >= 0 && us <= static_cast<double>(trace::kMaxArrivalTimeUs))) {
    return Status::error("request " + id + ": arrival time " + std::to_string(us) + " us is beyond " +
                         std::to_string(trace::kMaxArrivalTimeUs) +
                         " (about 31 years; --request-rate or --rate-scale too small for this trace)");
  }
  return std::llround(us);
}

}  // namespace

StatusOr<bool> ArrivalSource::next(RequestSpec* out) {
  auto got = inner_->next(out);
  if (!got.ok() || !*got) return got;
  if (options_.request_rate == 0) {
    if (first_trace_us_ < 0) first_trace_us_ = out->arrival_time_us;
    const double since = static_cast<double>(out->arrival_time_us - first_trace_us_);
    auto us = arrival_us(since / options_.rate_scale, out->id);
    if (!us.ok()) return us.status();
    out->arrival_time_us = *us;
    return true;
  }
  if (std::isinf(options_.request_rate)) {
    out->arrival_time_us = 0;
    return true;
  }
  auto us = arrival_us(clock_us_, out->id);
  if (!us.ok()) return us.status();
  out->arrival_time_us = *us;
  // The gap to the next request: gamma with shape k and scale 1 / (rate * k): mean 1 / rate.
  const double k = options_.burstiness;
  clock_us_ += gamma_draw(k, gamma_->state) / (options_.request_rate * k) * 1e6;
  return true;
}

}  // namespace kv::replay
