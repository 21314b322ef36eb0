// ScenarioOutcome: the verdict of running one vLLM-recorded scenario file (the hybrid-groups
// format or the scheduler format) against kvsim's core, as `kvsim scenario` prints it.
//
// Invariants:
//   1. ok == true  -> mismatch is empty; every `expect` of the file matched.
//   2. ok == false -> mismatch names the first difference: step index, field, expected, got.
//   3. refused == true only for a file whose config vLLM itself refuses at start-up
//      ("valid_vllm_config": false) and which kvsim refused with refusal_reason; such a file
//      is ok (kvsim behaves as vLLM does: it does not start).
// A file that cannot be read or parsed is not an outcome: the runner returns a Status
// naming the file and the field.
#pragma once

#include <cstdint>
#include <string>

namespace kv::ops {

struct ScenarioMismatch {
  std::int64_t step = -1;  // index into "steps" (-1: the config or the "final" block)
  std::string field;       // e.g. "expect.held", "final.free_queue", "config.groups"
  std::string expected;    // compact JSON text
  std::string got;
};

struct ScenarioOutcome {
  bool ok = true;
  bool refused = false;
  std::string refusal_reason;
  ScenarioMismatch mismatch;  // meaningful when !ok
};

// "ok", "ok (refused, as vLLM)", or "step 3: expect.held: expected [[1,2]], got [[1,3]]".
inline std::string to_string(const ScenarioOutcome& o) {
  if (o.ok) return o.refused ? "ok (refused, as vLLM)" : "ok";
  const ScenarioMismatch& m = o.mismatch;
  std::string where = m.step >= 0 ? "step " + std::to_string(m.step) + ": " : "";
  return where + m.field + ": expected " + m.expected + ", got " + m.got;
}

}  // namespace kv::ops
