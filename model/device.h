// Device: the runtime seam between the scheduler and whatever executes a step.
// Implementations: the cycle-level simulator (sim/), the CUDA backend (gpu_backend/), and
// wrappers that inject faults for tests. A device sees only StepPlans, in order; it keeps
// its own per-request state (block tables, shadow memory, KV cache) keyed by request id and
// drops a request's state when the plan lists it as finished or preempted.
// Contract: execute() is deterministic for the simulator (same plans, same results), returns
// the teacher-forced next token of every request with samples == true, and reports (never
// aborts on) a verification failure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/sched/step_plan.h"

namespace kv {

// Device time spent in one kind of work (a kernel, a copy, host scheduling) over a run.
struct KernelTime {
  std::string name;
  std::int64_t launches = 0;
  std::int64_t total_ns = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual StepResult execute(const StepPlan& plan) = 0;
  // Called once after the last step: checks whatever the device deferred (the simulator
  // verifies reads of requests that never left) and returns violations like StepResult's.
  virtual std::vector<std::string> finish_run() { return {}; }
  // Per-kernel totals of the steps executed so far, in a fixed order (empty if not tracked).
  virtual std::vector<KernelTime> kernel_times() const { return {}; }
};

// StepTimePredictor: the modelled duration of a plan, without executing it (the simulator's
// cost model). Beside real hardware it drives the virtual clock, so that arrivals interleave
// with steps exactly as on the simulator. Deterministic: same plans, same durations.
class StepTimePredictor {
 public:
  virtual ~StepTimePredictor() = default;
  virtual std::int64_t predict_ns(const StepPlan& plan) = 0;
};

}  // namespace kv
