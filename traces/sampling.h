// Sampler: seeded random draws whose values are the same on every platform and library.
//
// std::mt19937_64's output sequence is fixed by the standard, but std::*_distribution are not,
// so every distribution here is computed from raw 64-bit draws: uniform doubles from the top 53
// bits, integers by rejection (no modulo bias), exponential by inverse CDF, normal by
// Box-Muller (both values of a pair used, in order), lognormal from the normal.
// Invariant: the draws made depend only on the seed and the sequence of calls.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace kv::trace {

class Sampler {
 public:
  explicit Sampler(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t bits() { return engine_(); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1): never 0, so its log is finite.
  double uniform_open() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // accept [0, limit)
    std::uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return x % n;
  }
  double exponential(double mean) { return -mean * std::log(uniform_open()); }
  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform_open()));
    const double theta = 2.0 * 3.14159265358979323846 * uniform();
    spare_ = r * std::sin(theta);
    have_spare_ = true;
    return r * std::cos(theta);
  }
  // Lognormal with the given mean (not median) and log-space standard deviation sigma.
  double lognormal_mean(double mean, double sigma) {
    return std::exp(std::log(mean) - 0.5 * sigma * sigma + sigma * normal());
  }
  // Exponential gap with mean `mean`, or, when cv > 1, a balanced two-phase hyperexponential
  // with that mean and coefficient of variation (bursty arrivals).
  double gap(double mean, double cv) {
    if (cv <= 1.0) return exponential(mean);
    const double c2 = cv * cv;
    const double p = 0.5 * (1.0 + std::sqrt((c2 - 1.0) / (c2 + 1.0)));
    return uniform() < p ? exponential(mean / (2.0 * p)) : exponential(mean / (2.0 * (1.0 - p)));
  }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool have_spare_ = false;
};

}  // namespace kv::trace
