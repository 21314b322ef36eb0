// SimDevice: the simulated device. For each StepPlan it runs the cache writes on a shadow KV
// memory and verifies what attention reads (ShadowKv), predicts the step's device time
// (CostModel over a StepDag) and returns the teacher-forced next token of every request that
// samples. With speculative decoding (SimOptions::speculative) it is also the rejection
// sampler and the drafter: each request's verified drafts are accepted position by position with
// the configured rates (a synthetic sampler, vLLM's per-position model), its sampled token is
// the teacher-forced output after the accepted ones, and every request that sampled gets K new
// drafts: its next teacher-forced outputs (a drafter that guesses right; the rates decide what
// is kept). The drafter's time is DrafterCost's.
// Invariants:
//   1. Deterministic: the same options and plans give the same results on every machine.
//   2. Never aborts on a bad plan or corrupted state: StepResult::violations says what broke.
//   3. Per step: O(requests) for the cost, plus the shadow's cost of its verify mode.
//   4. Acceptance is a pure function of (seed, request id, step, position): the same inputs give
//      the same bytes; speculation off draws nothing and changes nothing.
// Not thread-safe; one replay drives one device.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/cuda_graph_dispatcher.h"
#include "model/device.h"
#include "model/util/status.h"
#include "sim/cost_model.h"
#include "sim/hardware_specs.h"
#include "sim/profile_table.h"
#include "sim/shadow_kv.h"
#include "sim/tier_links.h"

namespace kv::sim {

struct SimOptions {
  SimOptions();  // the llama3-8b and h100-sxm presets
  ModelShape model;
  GpuSpec gpu;
  std::string profile_path;  // profile CSV (sim/profile_format.md); empty: roofline only
  CudaGraphMode cuda_graph_mode = CudaGraphMode::kFullAndPiecewise;
  std::vector<std::int64_t> cuda_graph_capture_sizes;  // empty: vLLM's defaults
  int max_num_seqs = 256;                              // sets the default capture sizes, as vLLM
  std::int64_t max_num_batched_tokens = 0;             // clamps the default capture sizes (0: no clamp)
  VerifyMode verify = VerifyMode::kFast;
  bool async_scheduling = false;     // CostModel invariant 7
  int max_violations_per_step = 16;  // further ones are summarized in one line
  TierCostOptions tier;              // second-tier transfers (docs/tiers.md); off by default
  SpeculativeConfig speculative;     // off by default; acceptance_rates: one per draft position
  std::uint64_t seed = 0;            // of the acceptance draws
};

class SimDevice final : public Device {
 public:
  static StatusOr<std::unique_ptr<SimDevice>> create(const SimOptions& options);

  std::string name() const override;  // "sim:<model>@<gpu>"
  StepResult execute(const StepPlan& plan) override;

  // Verifies every request still live (fast mode verifies a request's reads when it leaves);
  // call once at the end of a run. Returns violations formatted as in StepResult.
  std::vector<std::string> verify_live_requests(std::int64_t step);
  // Device::finish_run: verify_live_requests after the last step executed.
  std::vector<std::string> finish_run() override { return verify_live_requests(last_step_ + 1); }
  // Each node of the step DAG: modelled time and launches (layer kernels count once a layer).
  std::vector<KernelTime> kernel_times() const override;

  const SimOptions& options() const { return options_; }
  const ModelShape& model() const { return cost_.model(); }
  const GpuSpec& gpu() const { return cost_.gpu(); }
  const StepCost& last_cost() const { return last_cost_; }
  const std::vector<Violation>& last_violations() const { return violations_; }
  const ShadowStats& shadow_stats() const { return shadow_.stats(); }
  CostModel& cost_model() { return cost_; }
  ShadowKv& shadow() { return shadow_; }

 private:
  SimDevice(const SimOptions& options, std::unique_ptr<ProfileTable> profile);
  std::vector<std::string> format(const std::vector<Violation>& violations) const;
  // The sampler and the drafter for one request that samples; returns the accepted drafts.
  int speculate(const StepPlan& plan, const ScheduledRequest& r, StepResult& result);
  // Uniform in [0, 1): the acceptance draw of `position` of `id`'s drafts in `step`.
  double draw(const RequestId& id, std::int64_t step, std::size_t position) const;

  SimOptions options_;
  std::unique_ptr<ProfileTable> profile_;  // before cost_: cost_ points into it
  CostModel cost_;
  ShadowKv shadow_;
  StepCost last_cost_;
  std::vector<Violation> violations_;  // of the last step
  std::int64_t last_step_ = 0;
  std::array<std::int64_t, kNumStepNodes> node_ns_{};  // summed over executed steps
  std::array<std::int64_t, kNumStepNodes> node_launches_{};
  std::int64_t encoder_steps_ = 0, encoder_ns_ = 0;    // encoder-decoder models: the encoder node
  std::int64_t tier_load_ns_ = 0, tier_store_ns_ = 0;  // summed over executed steps
  std::int64_t saves_carried_ = 0;                 // blocks the last step filled (every-full-block), saved in the next
  std::int64_t tier_loads_ = 0, tier_stores_ = 0;  // steps with each
  DrafterCost drafter_;
  std::int64_t drafter_ns_ = 0, drafter_steps_ = 0;  // summed over executed steps
};

StatusOr<std::unique_ptr<Device>> make_sim_device(const SimOptions& options);

// The simulator's step time for a plan, without executing it (no shadow memory): the virtual
// clock beside a real device. Its CUDA-graph mode must be the one that device runs.
class CostPredictor final : public StepTimePredictor {
 public:
  static StatusOr<std::unique_ptr<CostPredictor>> create(const SimOptions& options);
  std::int64_t predict_ns(const StepPlan& plan) override {
    return cost_.cost(summarize(plan, model_window(cost_.model()))).duration_ns;
  }

 private:
  CostPredictor(const SimOptions& options, std::unique_ptr<ProfileTable> profile);
  std::unique_ptr<ProfileTable> profile_;  // before cost_: cost_ points into it
  CostModel cost_;
};

}  // namespace kv::sim
