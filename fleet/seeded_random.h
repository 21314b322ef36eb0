// SeededRandom: the only source of randomness of a router. A std::mt19937_64 seeded in the
// constructor, read through two draws whose results the C++ standard fixes on every platform
// (no std::*_distribution, whose algorithms are implementation-defined).
#pragma once

#include <cstdint>
#include <random>

namespace kv::fleet {

class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, n), n > 0, by rejection (no modulo bias).
  int index(int n) {
    const std::uint64_t range = static_cast<std::uint64_t>(n);
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    std::uint64_t draw = engine_();
    while (draw >= limit) draw = engine_();
    return static_cast<int>(draw % range);
  }
  // Uniform in [0, 1), 53 random bits.
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace kv::fleet
