// Scheduler scenarios: runs one vLLM-recorded scheduler scenario file against kvsim's
// Scheduler and compares every `expect`. Two formats: tests/golden-scheduler/README.md, and
// its speculative extension tests/golden-spec/README.md (a config with `spec_method`; steps
// with the inputs `accepted` and `drafts`).
//
// One step, as the file's README says: aborts, arrivals, schedule(), an instant executor that
// samples output_start + k for every request whose prefill or decode completes (after the
// drafts the file says were accepted), update_from_output(), then the step's drafts.
// Invariants:
//   1. A file that cannot be read, is not JSON, misses a field, has a field of the wrong type or
//      an unknown field is a Status naming the file and the field (never an outcome).
//   2. Fields are compared in a fixed order, so the reported mismatch is the first one: the
//      earliest step, and within it the first key of kSchedulerExpectKeys (kSpecExpectKeys)
//      that differs.
//   3. A speculative file's derived numbers (use_eagle, lookahead, drafting slots, the lowered
//      budget, resolved parallel drafting) must be kvsim's, or it is a mismatch at step -1.
//   4. A file with "valid_vllm_config": false is ok (refused) exactly when
//      SchedulerConfig::validate() refuses its configuration; it is then not run.
#pragma once

#include <string>

#include "model/util/status.h"
#include "ops/scenario_outcome.h"

namespace kv::ops {

// Every key an `expect` object may hold, in the order they are compared.
inline constexpr const char* kSchedulerExpectKeys[] = {
    "scheduled_running", "scheduled_new",       "scheduled_resumed", "admission_order",
    "total_tokens",      "preempted",           "finished",          "waiting",
    "running",           "num_computed_tokens", "num_output_tokens", "free_blocks_after_schedule",
    "free_blocks"};
// The same for a speculative file (tests/golden-spec).
inline constexpr const char* kSpecExpectKeys[] = {"scheduled_running",
                                                  "scheduled_new",
                                                  "scheduled_resumed",
                                                  "admission_order",
                                                  "total_tokens",
                                                  "scheduled_spec_decode_tokens",
                                                  "preempted",
                                                  "new_tokens",
                                                  "finished",
                                                  "waiting",
                                                  "running",
                                                  "num_computed_tokens",
                                                  "num_output_tokens",
                                                  "num_spec_token_ids",
                                                  "num_blocks",
                                                  "spec_stats",
                                                  "free_blocks_after_schedule",
                                                  "free_blocks"};

StatusOr<ScenarioOutcome> run_scheduler_scenario(const std::string& path);

}  // namespace kv::ops
