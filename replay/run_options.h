// RunOptions: how one replay runs and what it reports -- the seed, how much of the trace, and
// the Replayer's own options (clock, step limit, invariant checks, decision text, the
// concurrency cap, percentiles, goodput SLOs, the overload mark). The "Run" and "Load and
// results" rows of the option table (and --clock) write here; the Replayer gets `replay` as is.
// Its numbers have no rules beyond their rows' ranges (ReplayConfig::validate() applies them).
#pragma once

#include <cstdint>

#include "replay/replayer.h"

namespace kv::replay {

inline constexpr double kMinMs = 1e-3, kMaxMs = 1e9;  // SLOs of --goodput, --overload-ttft-ms

struct RunOptions {
  std::uint64_t seed = 0;  // of generated output tokens and arrival gaps
  std::int64_t limit = 0;  // first N requests (0: all)
  ReplayOptions replay;
};

}  // namespace kv::replay
