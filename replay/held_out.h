// Held-out check of a calibrated cost model: replays a trace on a simulator whose GPU preset
// (`truth`) stands for the real GPU -- each step's time multiplied by exp(sigma * N(0, 1))
// from `seed` is its "measurement" -- and compares it, step by step, with the prediction of
// the `predicted` preset on the same plans (the virtual clock follows the prediction, as on
// real hardware). Errors are absolute percentage errors, median and p90 as
// model/util/percentile.h defines them. Deterministic.
#pragma once

#include <cstdint>
#include <string>

#include "model/catalog/model_shape.h"
#include "model/util/status.h"
#include "sim/hardware_specs.h"

namespace kv::replay {

struct HeldOutError {
  std::int64_t steps = 0;
  double median_ape = 0, p90_ape = 0, max_ape = 0;
};

// Replays the first `limit` requests of `trace` (0: all) with a 30,000-block pool.
StatusOr<HeldOutError> held_out_error(const std::string& trace, std::int64_t limit, const ModelShape& model,
                                      const sim::GpuSpec& truth, const sim::GpuSpec& predicted, double noise_sigma,
                                      std::uint64_t seed);

}  // namespace kv::replay
