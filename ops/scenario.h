// run_scenario: runs one vLLM-recorded scenario file of either format against kvsim's core and
// returns its verdict. The format is told by the file's content: a `requests` array is the
// scheduler format (tests/golden-scheduler/README.md; with `config.spec_method`, its
// speculative extension, tests/golden-spec/README.md), a `config.layers` array the KV-cache
// groups format (tests/golden-hybrid/README.md). Anything else is a Status naming the file.
#pragma once

#include <string>

#include "model/util/status.h"
#include "ops/scenario_outcome.h"

namespace kv::ops {

StatusOr<ScenarioOutcome> run_scenario(const std::string& path);

}  // namespace kv::ops
