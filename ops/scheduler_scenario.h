// Scheduler scenarios: runs one vLLM-recorded scheduler scenario file (the format of
// tests/golden-scheduler/README.md) against kvsim's Scheduler and compares every `expect`.
//
// One step, as the file's README says: aborts, arrivals, schedule(), an instant executor that
// samples output_start + k for every request whose prefill or decode completes, then
// update_from_output().
// Invariants:
//   1. A file that cannot be read, is not JSON, misses a field, has a field of the wrong type or
//      an unknown field is a Status naming the file and the field (never an outcome).
//   2. Fields are compared in a fixed order, so the reported mismatch is the first one: the
//      earliest step, and within it the first key of kExpectKeys that differs.
//   3. A file with "valid_vllm_config": false is ok (refused) exactly when
//      SchedulerConfig::validate() refuses its configuration; it is then not run.
#pragma once

#include <string>

#include "model/util/status.h"
#include "ops/scenario_outcome.h"

namespace kv::ops {

// Every key an `expect` object may hold, in the order they are compared.
inline constexpr const char* kSchedulerExpectKeys[] = {
    "scheduled_running", "scheduled_new", "scheduled_resumed", "admission_order",
    "total_tokens",      "preempted",     "finished",          "waiting",
    "running",           "num_computed_tokens", "num_output_tokens",
    "free_blocks_after_schedule", "free_blocks"};

StatusOr<ScenarioOutcome> run_scheduler_scenario(const std::string& path);

}  // namespace kv::ops
