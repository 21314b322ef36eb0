// run_hybrid_scenario: replays one vLLM-recorded scenario of the KV-cache manager with several
// KV-cache groups against kvsim's KvCacheManager (with the file's groups) and compares every
// expectation. Two dialects of format_version 1: tests/golden-hybrid/ (full, sliding and
// chunked attention) and tests/golden-mamba/, which adds speculative decoding to the config
// (use_eagle, num_speculative_tokens), Mamba, cross-attention and R-SWA layers, groups with
// their block and page sizes, caching off, and the ops new_step and rollback (with
// allocate's num_lookahead_tokens and num_encoder_tokens).
// The runner builds the groups from the file's `layers` (and checks them against `groups`,
// `lookup_order`, the block sizes and the coordinator), sizes the pool from
// `memory_budget_bytes` (checked against `num_blocks`), runs every step in order and then
// compares the `final` block (free queue, cache, held blocks). The first difference ends the
// run.
// Invariants:
//   1. A file that cannot be read, is not JSON, or has an unknown or malformed field or op is
//      a Status naming the file and the field (steps[i].expect.x); never an abort.
//   2. A well-formed file gives a ScenarioOutcome: ok, or the first mismatch (step, field,
//      expected, got) with compact JSON values.
//   3. The manager's check_invariants holds after every step (a failure is a mismatch on
//      field "invariants").
#pragma once

#include <string>

#include "model/util/status.h"
#include "ops/scenario_outcome.h"

namespace kv::ops {

StatusOr<ScenarioOutcome> run_hybrid_scenario(const std::string& path);

}  // namespace kv::ops
