#include "replay/held_out.h"

#include <algorithm>
#include <cmath>

#include "model/util/percentile.h"
#include "replay/replay_builder.h"
#include "sim/seeded_normal.h"
#include "sim/sim_device.h"

namespace kv::replay {

namespace {

// The truth device: a simulator whose step times, noised, stand for measured ones.
class NoisyDevice final : public Device {
 public:
  NoisyDevice(std::unique_ptr<Device> inner, double sigma, std::uint64_t seed)
      : inner_(std::move(inner)), sigma_(sigma), normal_{seed} {}
  std::string name() const override { return "truth:" + inner_->name(); }
  StepResult execute(const StepPlan& plan) override {
    StepResult r = inner_->execute(plan);
    r.measured_ns = std::llround(static_cast<double>(r.duration_ns) * std::exp(sigma_ * normal_()));
    return r;
  }

 private:
  std::unique_ptr<Device> inner_;
  double sigma_;
  sim::SeededNormal normal_;
};

}  // namespace

StatusOr<HeldOutError> held_out_error(const std::string& trace, std::int64_t limit, const ModelShape& model,
                                      const sim::GpuSpec& truth, const sim::GpuSpec& predicted, double noise_sigma,
                                      std::uint64_t seed) {
  ReplayConfig config;
  config.device.model = model;
  config.device.gpu = truth;
  config.device.verify = sim::VerifyMode::kOff;
  config.scheduler.cache.num_blocks = 30000;  // about a Llama-3-8B pool on an 80 GB GPU at block size 16
  config.run.limit = limit;
  config.run.replay.keep_decision_text = false;
  auto run = build_replay(config, trace);
  if (!run.ok()) return run.status();
  run->device = std::make_unique<NoisyDevice>(std::move(run->device), noise_sigma, seed);
  ReplayConfig pred = config;
  pred.device.gpu = predicted;
  auto predictor = sim::CostPredictor::create(sim_options(pred, pred.device.cuda_graphs, sim::VerifyMode::kOff));
  if (!predictor.ok()) return predictor.status();
  run->predictor = std::move(*predictor);

  auto replayer = run->make_replayer(config);
  std::vector<double> e;
  replayer->on_step = [&](const StepRecord& r) {
    if (r.measured_ns <= 0) return;
    e.push_back(std::fabs(static_cast<double>(r.predicted_ns - r.measured_ns)) / static_cast<double>(r.measured_ns));
  };
  auto summary = replayer->run();
  if (!summary.ok()) return summary.status();
  std::sort(e.begin(), e.end());
  HeldOutError h;
  h.steps = static_cast<std::int64_t>(e.size());
  h.median_ape = percentile_of_sorted(e, 50);
  h.p90_ape = percentile_of_sorted(e, 90);
  h.max_ape = e.empty() ? 0 : e.back();
  return h;
}

}  // namespace kv::replay
