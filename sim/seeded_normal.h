// SeededNormal: a deterministic stream of standard normal numbers (a splitmix64 stream through
// Box-Muller), for synthetic profiles and simulated measurement noise. The same seed gives
// the same numbers on every machine and compiler (no std:: distributions, whose output is
// implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>

namespace kv::sim {

struct SeededNormal {
  std::uint64_t state;

  std::uint64_t next_u64() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next_u64() >> 11) + 1.0) * 0x1.0p-53; }  // (0, 1]
  double operator()() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

}  // namespace kv::sim
