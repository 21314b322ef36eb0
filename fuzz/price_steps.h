// What the profile, gpu_preset and model_config targets check of whatever they load: the cost
// model prices steps from one decode token to a full 8192-token prefill over a long context,
// with windowed layers where the model has them, without an abort in the step DAG.
// Invariant: every priced step has cycles >= 0 and duration_ns >= 0 (else a FUZZ_CHECK fails).
#pragma once

#include "model/catalog/model_shape.h"
#include "sim/hardware_specs.h"
#include "sim/profile_table.h"

namespace kv::fuzz {

// `profile` may be null (roofline only).
void price_steps(const ModelShape& model, const sim::GpuSpec& gpu, const sim::ProfileTable* profile = nullptr);

}  // namespace kv::fuzz
