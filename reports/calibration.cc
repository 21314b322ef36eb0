#include "reports/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "model/replayer.h"
#include "reports/csv_parser.h"
#include "model/scheduler.h"
#include "sim/cost_model.h"
#include "sim/profile_table.h"
#include "sim/sim_device.h"
#include "traces/replay_source.h"

namespace kv::reports {

namespace io = csv::io;

namespace {

using sim::Kernel;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

const char* kernel_class(Kernel k) {
  switch (k) {
    case Kernel::kQkvProj:
    case Kernel::kOProj:
    case Kernel::kGateUpProj:
    case Kernel::kDownProj:
    case Kernel::kLmHead:
      return "gemm";
    case Kernel::kAttention:
      return "attention";
    default:
      return "elementwise";
  }
}

// Causal (query, key) pairs of an attention row, tokens split evenly over the sequences.
std::int64_t attention_pairs(std::int64_t tokens, std::int64_t seqs, std::int64_t context) {
  const double s = static_cast<double>(std::max<std::int64_t>(seqs, 1));
  const double q = static_cast<double>(tokens) / s;
  const double c = std::max(0.0, static_cast<double>(context) / s - q);
  return std::llround(s * (q * c + q * (q + 1) / 2));
}

// Rows faster than this are below CUDA-event resolution: they are not fitted.
constexpr std::int64_t kMinFitNs = 100;

// Time of a row at 100% of peak FLOP/s and of peak bandwidth, in ns.
struct RowWork {
  double compute_ns = 0, memory_ns = 0, measured_ns = 0;
  const char* cls = "";
};

std::vector<RowWork> row_work(const std::vector<ProfileRow>& rows, const sim::ModelSpec& model,
                              const sim::GpuSpec& gpu, std::int64_t min_ns) {
  const sim::CostModel cost(model, gpu, CudaGraphConfig{}, nullptr);
  std::vector<RowWork> out;
  for (const ProfileRow& r : rows) {
    if (r.time_ns < min_ns) continue;
    const sim::KernelQuery q{r.num_tokens, r.num_seqs, r.context_tokens};
    const sim::KernelWork w = cost.work(r.kernel, q, attention_pairs(r.num_tokens, r.num_seqs, r.context_tokens));
    out.push_back(RowWork{static_cast<double>(w.flops) / static_cast<double>(gpu.peak_flops) * 1e9,
                          static_cast<double>(w.bytes) / static_cast<double>(gpu.hbm_bytes_per_s) * 1e9,
                          static_cast<double>(r.time_ns), kernel_class(r.kernel)});
  }
  return out;
}

double predict(const RowWork& w, int compute_pct, int bandwidth_pct) {
  return std::max(w.compute_ns * 100.0 / compute_pct, w.memory_ns * 100.0 / bandwidth_pct);
}

double nearest_rank(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

void fill_errors(EfficiencyFit& f, const std::vector<const RowWork*>& rows) {
  std::vector<double> e;
  f.compute_bound = f.memory_bound = 0;
  for (const RowWork* w : rows) {
    e.push_back(std::fabs(predict(*w, f.compute_pct, f.bandwidth_pct) / w->measured_ns - 1));
    if (w->compute_ns * 100.0 / f.compute_pct >= w->memory_ns * 100.0 / f.bandwidth_pct) ++f.compute_bound;
    else ++f.memory_bound;
  }
  std::sort(e.begin(), e.end());
  f.rows = rows.size();
  f.median_ape = nearest_rank(e, 50);
  f.p90_ape = nearest_rank(e, 90);
  f.max_ape = e.empty() ? 0 : e.back();
}

EfficiencyFit fit(const std::string& scope, const std::vector<const RowWork*>& rows, const sim::GpuSpec& base) {
  EfficiencyFit best;
  best.scope = scope;
  double best_loss = INFINITY;
  for (int c = 1; c <= 100; ++c) {
    for (int b = 1; b <= 100; ++b) {
      double loss = 0;
      for (const RowWork* w : rows) {
        const double r = predict(*w, c, b) / w->measured_ns - 1;
        loss += r * r;
      }
      // Ties (a factor no row is bound by) go to the larger efficiency.
      if (loss <= best_loss * (1 + 1e-12)) {
        best_loss = loss;
        best.compute_pct = c;
        best.bandwidth_pct = b;
      }
    }
  }
  fill_errors(best, rows);
  // Unidentified factors keep the base preset's value when that changes no row's bound.
  if (best.compute_bound == 0) {
    EfficiencyFit keep = best;
    keep.compute_pct = base.compute_efficiency_pct;
    fill_errors(keep, rows);
    if (keep.compute_bound == 0) best = keep;
  }
  if (best.memory_bound == 0) {
    EfficiencyFit keep = best;
    keep.bandwidth_pct = base.bandwidth_efficiency_pct;
    fill_errors(keep, rows);
    if (keep.memory_bound == 0) best = keep;
  }
  return best;
}

// splitmix64 stream -> standard normal (Box-Muller).
struct Normal {
  std::uint64_t state;
  std::uint64_t next_u64() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next_u64() >> 11) + 1.0) * 0x1.0p-53; }  // (0, 1]
  double operator()() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

// The truth device of the held-out check: a simulator whose step times, noised, stand for
// measured ones.
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
  Normal normal_;
};

}  // namespace

StatusOr<std::vector<ProfileRow>> read_profile(const std::string& path) {
  auto table = sim::ProfileTable::load(path);
  if (!table.ok()) return table.status();
  std::vector<ProfileRow> rows;
  try {
    io::CSVReader<5, io::trim_chars<' ', '\t', '\r'>, io::no_quote_escape<','>> in(path);
    in.read_header(io::ignore_extra_column, "kernel", "num_tokens", "num_seqs", "context_tokens", "time_ns");
    std::string kernel;
    ProfileRow r;
    while (in.read_row(kernel, r.num_tokens, r.num_seqs, r.context_tokens, r.time_ns)) {
      const auto k = sim::parse_kernel(kernel);
      if (!k) return Status::error(path + ":" + std::to_string(in.get_file_line()) + ": unknown kernel '" + kernel + "'");
      r.kernel = *k;
      rows.push_back(r);
    }
  } catch (const io::error::base& e) {
    return Status::error(path + ": " + e.what());
  }
  if (rows.empty()) return Status::error(path + ": no profile rows");
  return rows;
}

StatusOr<Calibration> calibrate(const std::vector<ProfileRow>& rows, const sim::ModelSpec& model,
                                const sim::GpuSpec& base, const std::string& name) {
  if (name.empty()) return Status::error("the preset needs a name");
  const std::vector<RowWork> work = row_work(rows, model, base, kMinFitNs);
  if (work.empty()) return Status::error("no profile row has a time >= 100 ns");
  Calibration c;
  c.base = base.name;
  std::vector<const RowWork*> all;
  for (const RowWork& w : work) all.push_back(&w);
  c.all = fit("all", all, base);
  for (const char* cls : {"gemm", "attention", "elementwise"}) {
    std::vector<const RowWork*> sub;
    for (const RowWork& w : work) {
      if (std::string(w.cls) == cls) sub.push_back(&w);
    }
    if (!sub.empty()) c.classes.push_back(fit(cls, sub, base));
  }
  c.base_errors.scope = base.name;
  c.base_errors.compute_pct = base.compute_efficiency_pct;
  c.base_errors.bandwidth_pct = base.bandwidth_efficiency_pct;
  fill_errors(c.base_errors, all);
  c.spec = base;
  c.spec.name = name;
  c.spec.compute_efficiency_pct = c.all.compute_pct;
  c.spec.bandwidth_efficiency_pct = c.all.bandwidth_pct;
  return c;
}

std::string calibration_preset_text(const Calibration& c, const std::string& source) {
  std::ostringstream m;
  m << "kvsim GPU preset, fitted by kvsim calibrate to " << source << " (" << c.all.rows << " kernel rows)\n"
    << "fit over all rows: compute " << c.all.compute_pct << "%, bandwidth " << c.all.bandwidth_pct
    << "%; abs. error median " << fmt("%.2f%%", 100 * c.all.median_ape) << ", p90 " << fmt("%.2f%%", 100 * c.all.p90_ape)
    << " (base " << c.base << ": median " << fmt("%.2f%%", 100 * c.base_errors.median_ape) << ", p90 "
    << fmt("%.2f%%", 100 * c.base_errors.p90_ape) << ")\n"
    << "per kernel class (diagnostic; the cost model applies the pair above to every kernel):";
  for (const EfficiencyFit& f : c.classes) {
    m << "\n  " << f.scope << ": " << f.rows << " rows, compute " << f.compute_pct << "% ("
      << f.compute_bound << " rows bound), bandwidth " << f.bandwidth_pct << "% (" << f.memory_bound
      << " rows bound), median error " << fmt("%.2f%%", 100 * f.median_ape);
  }
  m << "\nlaunch overheads and host costs are the base preset's (a kernel profile excludes them)";
  return sim::gpu_spec_to_text(c.spec, c.base, m.str());
}

std::string synthetic_profile_csv(const sim::ModelSpec& model, const sim::GpuSpec& truth, double noise_sigma,
                                  std::uint64_t seed) {
  std::vector<ProfileRow> rows;
  std::vector<std::int64_t> tokens = {1, 2, 3, 4, 8, 16, 24, 32, 64, 96, 128, 256, 384, 512, 1024, 1536, 2048, 4096, 6144, 8192};
  for (int k = 0; k < sim::kNumKernels; ++k) {
    const auto kernel = static_cast<Kernel>(k);
    if (kernel == Kernel::kAttention) {
      for (std::int64_t s : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
        for (std::int64_t len : {256, 2048, 16384}) rows.push_back({kernel, s, s, s * len, 0});
      }
      for (std::int64_t t : {16, 64, 256, 1024, 4096, 8192}) {
        for (std::int64_t prefix : {0, 2048, 16384}) rows.push_back({kernel, t, 1, t + prefix, 0});
      }
      continue;
    }
    for (std::int64_t t : tokens) rows.push_back({kernel, t, 0, 0, 0});
  }
  const std::vector<RowWork> unit = [&] {
    return row_work(rows, model, truth, 0);
  }();
  Normal normal{seed};
  std::ostringstream out;
  out << "kernel,num_tokens,num_seqs,context_tokens,time_ns\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double t = predict(unit[i], truth.compute_efficiency_pct, truth.bandwidth_efficiency_pct) *
                     std::exp(noise_sigma * normal());
    out << sim::kernel_name(rows[i].kernel) << ',' << rows[i].num_tokens << ',' << rows[i].num_seqs << ','
        << rows[i].context_tokens << ',' << std::max<std::int64_t>(1, std::llround(t)) << '\n';
  }
  return out.str();
}

StatusOr<HeldOutError> held_out_error(const std::string& trace, std::int64_t limit, const std::string& model,
                                      const sim::GpuSpec& truth, const sim::GpuSpec& predicted, double noise_sigma,
                                      std::uint64_t seed) {
  if (truth.name == predicted.name) return Status::error("the truth and the predicted preset need distinct names");
  for (const sim::GpuSpec* g : {&truth, &predicted}) {
    const sim::GpuSpec* built_in = nullptr;
    for (const sim::GpuSpec& p : sim::gpu_presets()) {
      if (p.name == g->name) built_in = &p;
    }
    if (built_in != nullptr) {
      if (built_in->compute_efficiency_pct != g->compute_efficiency_pct ||
          built_in->bandwidth_efficiency_pct != g->bandwidth_efficiency_pct) {
        return Status::error("preset '" + g->name + "' is built in but its efficiencies differ; rename it");
      }
    } else if (Status s = sim::register_gpu_spec(*g); !s.ok()) {
      return s;
    }
  }
  trace::ReplaySourceOptions so;
  so.limit = limit;
  auto source = trace::TraceRequestSource::open(trace, so);
  if (!source.ok()) return source.status();
  sim::SimOptions truth_opts;
  truth_opts.model = model;
  truth_opts.gpu = truth.name;
  truth_opts.verify = sim::VerifyMode::kOff;
  sim::SimOptions pred_opts = truth_opts;
  pred_opts.gpu = predicted.name;
  auto truth_dev = sim::make_sim_device(truth_opts);
  if (!truth_dev.ok()) return truth_dev.status();
  auto pred_dev = sim::make_sim_device(pred_opts);
  if (!pred_dev.ok()) return pred_dev.status();
  NoisyDevice gpu(std::move(*truth_dev), noise_sigma, seed);

  SchedulerConfig sc;
  sc.cache.num_blocks = 30000;  // about a Llama-3-8B pool on an 80 GB GPU at block size 16
  sc.hash_seed = (*source)->header().hash_seed.empty() ? "0" : (*source)->header().hash_seed;
  Scheduler scheduler(sc);
  ReplayOptions ro;
  ro.keep_decision_text = false;
  Replayer replayer(scheduler, gpu, **source, ro, pred_dev->get());
  std::vector<double> e;
  replayer.on_step = [&](const StepRecord& r) {
    if (r.measured_ns > 0) {
      e.push_back(std::fabs(static_cast<double>(r.predicted_ns - r.measured_ns)) / static_cast<double>(r.measured_ns));
    }
  };
  auto summary = replayer.run();
  if (!summary.ok()) return summary.status();
  std::sort(e.begin(), e.end());
  HeldOutError h;
  h.steps = static_cast<std::int64_t>(e.size());
  h.median_ape = nearest_rank(e, 50);
  h.p90_ape = nearest_rank(e, 90);
  h.max_ape = e.empty() ? 0 : e.back();
  return h;
}

}  // namespace kv::reports
