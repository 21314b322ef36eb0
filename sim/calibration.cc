#include "sim/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "model/percentile.h"
#include "sim/cost_model.h"
#include "sim/seeded_normal.h"
#include "sim/profile_table.h"

namespace kv::sim {

namespace {



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

std::vector<RowWork> row_work(const std::vector<ProfileRow>& rows, const ModelShape& model,
                              const GpuSpec& gpu, std::int64_t min_ns) {
  const CostModel cost(model, gpu, CudaGraphConfig{}, nullptr);
  std::vector<RowWork> out;
  for (const ProfileRow& r : rows) {
    if (r.time_ns < min_ns) continue;
    const KernelQuery q{r.num_tokens, r.num_seqs, r.context_tokens};
    const KernelWork w = cost.work(r.kernel, q, attention_pairs(r.num_tokens, r.num_seqs, r.context_tokens));
    out.push_back(RowWork{static_cast<double>(w.flops) / static_cast<double>(gpu.peak_flops) * 1e9,
                          static_cast<double>(w.bytes) / static_cast<double>(gpu.hbm_bytes_per_s) * 1e9,
                          static_cast<double>(r.time_ns), kernel_class(r.kernel)});
  }
  return out;
}

double predict(const RowWork& w, int compute_pct, int bandwidth_pct) {
  return std::max(w.compute_ns * 100.0 / compute_pct, w.memory_ns * 100.0 / bandwidth_pct);
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
  f.median_ape = percentile_of_sorted(e, 50);
  f.p90_ape = percentile_of_sorted(e, 90);
  f.max_ape = e.empty() ? 0 : e.back();
}

EfficiencyFit fit(const std::string& scope, const std::vector<const RowWork*>& rows, const GpuSpec& base) {
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


}  // namespace

StatusOr<std::vector<ProfileRow>> read_profile(const std::string& path) {
  auto table = ProfileTable::load(path);
  if (!table.ok()) return table.status();
  std::vector<ProfileRow> rows = table->all_rows();
  if (rows.empty()) return Status::error(path + ": no profile rows");
  return rows;
}

StatusOr<Calibration> calibrate(const std::vector<ProfileRow>& rows, const ModelShape& model,
                                const GpuSpec& base, const std::string& name) {
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
  return gpu_spec_to_text(c.spec, c.base, m.str());
}

std::string synthetic_profile_csv(const ModelShape& model, const GpuSpec& truth, double noise_sigma,
                                  std::uint64_t seed) {
  std::vector<ProfileRow> rows;
  std::vector<std::int64_t> tokens = {1, 2, 3, 4, 8, 16, 24, 32, 64, 96, 128, 256, 384, 512, 1024, 1536, 2048, 4096, 6144, 8192};
  for (int k = 0; k < kNumKernels; ++k) {
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
  SeededNormal normal{seed};
  std::ostringstream out;
  out << "kernel,num_tokens,num_seqs,context_tokens,time_ns\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double t = predict(unit[i], truth.compute_efficiency_pct, truth.bandwidth_efficiency_pct) *
                     std::exp(noise_sigma * normal());
    out << kernel_name(rows[i].kernel) << ',' << rows[i].num_tokens << ',' << rows[i].num_seqs << ','
        << rows[i].context_tokens << ',' << std::max<std::int64_t>(1, std::llround(t)) << '\n';
  }
  return out.str();
}

}  // namespace kv::sim
