// Arrivals: when each request of a replay reaches the server. A wrapper around any
// RequestSource that rewrites arrival times, as `vllm bench serve` sends requests:
//   request_rate = 0 (default): the trace's own timestamps, divided by rate_scale (measured
//                    from the first request), so --rate-scale 2 replays a real trace twice as fast;
//   request_rate = inf:  every request at time 0 (offline throughput);
//   request_rate = R:    gaps drawn from a gamma distribution with shape `burstiness` and mean
//                        1 / R seconds (burstiness 1: a Poisson process), the first request at 0.
// Invariants:
//   1. Deterministic: the gaps are a pure function of (seed, request index), on every machine
//      (a splitmix64 stream; no std:: distribution).
//   2. Order is the source's; arrival times never decrease.
#pragma once

#include <cstdint>
#include <memory>

#include "model/request_source.h"
#include "model/util/status.h"

namespace kv::replay {

// Bounds of the load options (their rows of the option table state them as ranges): beyond
// them a run measures nothing real, and its arrival times overflow or never come.
inline constexpr double kMinRequestRate = 1e-4, kMaxRequestRate = 1e9;  // requests per second
inline constexpr double kMinBurstiness = 1e-3, kMaxBurstiness = 1e3;
inline constexpr double kMinRateScale = 1e-3, kMaxRateScale = 1e6;

// The --request-rate, --burstiness and --rate-scale rows of the option table write here;
// `seed` is --seed, completed by the replay builder.
struct ArrivalOptions {
  double request_rate = 0;  // requests per second; 0: the trace's timestamps; infinity: all at 0
  double burstiness = 1;    // gamma shape; 1 = Poisson
  double rate_scale = 1;    // with request_rate 0: timestamps are divided by this
  std::uint64_t seed = 0;
  bool rewrites() const { return request_rate != 0 || rate_scale != 1; }
  // rate_scale only with the trace's timestamps (the numbers' ranges are their rows'); the
  // error names the option.
  Status validate() const;
};

class ArrivalSource final : public RequestSource {
 public:
  ArrivalSource(std::unique_ptr<RequestSource> inner, ArrivalOptions options);
  ~ArrivalSource() override;
  StatusOr<bool> next(RequestSpec* out) override;

 private:
  struct Gamma;
  std::unique_ptr<RequestSource> inner_;
  ArrivalOptions options_;
  std::unique_ptr<Gamma> gamma_;
  double clock_us_ = 0;
  std::int64_t first_trace_us_ = -1;
};

// A gamma(shape) draw with unit scale from a seeded stream (Marsaglia and Tsang), exposed for
// tests: `state` advances.
double gamma_draw(double shape, std::uint64_t& state);

}  // namespace kv::replay
