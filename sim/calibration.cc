#include "sim/calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "model/util/format_number.h"
#include "model/util/percentile.h"
#include "sim/cost_model.h"
#include "sim/kernel_class.h"
#include "sim/profile_table.h"
#include "sim/seeded_normal.h"

namespace kv::sim {

namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

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
  KernelClass cls = KernelClass::kElementwise;
};

std::vector<RowWork> row_work(const std::vector<ProfileRow>& rows, const ModelShape& model, const GpuSpec& gpu,
                              std::int64_t min_ns) {
  const CostModel cost(model, gpu, CudaGraphConfig{}, nullptr);
  std::vector<RowWork> out;
  for (const ProfileRow& r : rows) {
    if (r.time_ns < min_ns) continue;
    const KernelQuery q{r.num_tokens, r.num_seqs, r.context_tokens};
    const KernelWork w = cost.work(r.kernel, q, attention_pairs(r.num_tokens, r.num_seqs, r.context_tokens));
    out.push_back(RowWork{static_cast<double>(w.flops) / static_cast<double>(w.peak_flops) * 1e9,
                          static_cast<double>(w.bytes) / static_cast<double>(gpu.hbm_bytes_per_s) * 1e9,
                          static_cast<double>(r.time_ns), w.cls});
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
    if (w->compute_ns * 100.0 / f.compute_pct >= w->memory_ns * 100.0 / f.bandwidth_pct)
      ++f.compute_bound;
    else
      ++f.memory_bound;
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

// Least squares of time ~ sum of coefficients * features over the columns in `use`.
std::array<double, 3> solve_host(const std::vector<HostRow>& rows, std::array<bool, 3> use) {
  auto feature = [](const HostRow& r, int j) {
    return j == 0 ? 1.0 : j == 1 ? static_cast<double>(r.num_seqs) : static_cast<double>(r.num_tokens);
  };
  double a[3][4] = {};
  for (const HostRow& r : rows) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a[i][j] += feature(r, i) * feature(r, j);
      a[i][3] += feature(r, i) * static_cast<double>(r.time_ns);
    }
  }
  for (int i = 0; i < 3; ++i) {  // an unused column is the equation x_i = 0
    if (use[static_cast<std::size_t>(i)]) continue;
    for (int j = 0; j < 4; ++j) a[i][j] = i == j ? 1.0 : 0.0;
    for (int k = 0; k < 3; ++k)
      if (k != i) a[k][i] = 0.0;
  }
  std::array<double, 3> x{};
  for (int c = 0; c < 3; ++c) {  // Gauss-Jordan with partial pivoting
    int pivot = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (std::abs(a[pivot][c]) < 1e-9) return {std::nan(""), 0, 0};
    for (int j = 0; j < 4; ++j) std::swap(a[c][j], a[pivot][j]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j < 4; ++j) a[r][j] -= f * a[c][j];
    }
  }
  for (int i = 0; i < 3; ++i) x[static_cast<std::size_t>(i)] = a[i][3] / a[i][i];
  return x;
}

}  // namespace

HostFit fit_host_terms(const std::vector<HostRow>& rows) {
  HostFit f;
  f.rows = rows.size();
  if (rows.empty()) return f;
  // Every subset of the terms, most terms first; the solvable one with no negative term and
  // the least squared error wins (a term the rows cannot separate makes its subsets singular).
  std::array<double, 3> x{};
  double best = std::numeric_limits<double>::infinity();
  for (int mask : {7, 3, 5, 6, 1, 2, 4}) {
    const std::array<bool, 3> use = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    const std::array<double, 3> y = solve_host(rows, use);
    if (std::isnan(y[0]) || y[0] < 0 || y[1] < 0 || y[2] < 0) continue;
    double sse = 0;
    for (const HostRow& r : rows) {
      const double e = y[0] + y[1] * static_cast<double>(r.num_seqs) + y[2] * static_cast<double>(r.num_tokens) -
                       static_cast<double>(r.time_ns);
      sse += e * e;
    }
    if (sse < best * (1 - 1e-12)) {
      best = sse;
      x = y;
    }
  }
  f.step_ns = std::max<std::int64_t>(0, std::llround(x[0]));
  f.per_request_ns = std::max<std::int64_t>(0, std::llround(x[1]));
  f.per_token_ns = std::max<std::int64_t>(0, std::llround(x[2]));
  std::vector<double> errors;
  for (const HostRow& r : rows) {
    const double p = static_cast<double>(f.step_ns + f.per_request_ns * r.num_seqs + f.per_token_ns * r.num_tokens);
    if (r.time_ns > 0) errors.push_back(std::abs(p / static_cast<double>(r.time_ns) - 1));
  }
  std::sort(errors.begin(), errors.end());
  if (!errors.empty()) {
    f.median_ape = percentile_of_sorted(errors, 50);
    f.max_ape = errors.back();
  }
  return f;
}

StatusOr<std::vector<HostRow>> read_host_rows(const std::string& path) {
  auto table = ProfileTable::load(path);
  if (!table.ok()) return table.status();
  return table->host_rows();
}

StatusOr<std::vector<ProfileRow>> read_profile(const std::string& path) {
  auto table = ProfileTable::load(path);
  if (!table.ok()) return table.status();
  std::vector<ProfileRow> rows = table->all_rows();
  if (rows.empty()) return Status::error(path + ": no profile rows");
  return rows;
}

StatusOr<Calibration> calibrate(const std::vector<ProfileRow>& rows, const ModelShape& model, const GpuSpec& base,
                                const std::string& name, const std::vector<HostRow>& host_rows) {
  if (name.empty()) return Status::error("the preset needs a name");
  const std::vector<RowWork> work = row_work(rows, model, base, kMinFitNs);
  if (work.empty()) return Status::error("no profile row has a time >= 100 ns");
  Calibration c;
  c.base = base.name;
  std::vector<const RowWork*> all;
  for (const RowWork& w : work) all.push_back(&w);
  c.all = fit("all", all, base);
  for (int k = 0; k < kNumKernelClasses; ++k) {
    const auto cls = static_cast<KernelClass>(k);
    std::vector<const RowWork*> sub;
    for (const RowWork& w : work) {
      if (w.cls == cls) sub.push_back(&w);
    }
    if (!sub.empty()) c.classes.push_back(fit(std::string(kernel_class_name(cls)), sub, base));
  }
  c.base_errors.scope = base.name;
  c.base_errors.compute_pct = base.compute_efficiency_pct;
  c.base_errors.bandwidth_pct = base.bandwidth_efficiency_pct;
  fill_errors(c.base_errors, all);
  c.spec = base;
  c.spec.name = name;
  c.spec.compute_efficiency_pct = c.all.compute_pct;
  c.spec.bandwidth_efficiency_pct = c.all.bandwidth_pct;
  if (!host_rows.empty()) {
    c.host = fit_host_terms(host_rows);
    c.spec.host_step_ns = c.host->step_ns;
    c.spec.host_per_request_ns = c.host->per_request_ns;
    c.spec.host_per_token_ns = c.host->per_token_ns;
    c.spec.host_per_block_ns = 0;
  }
  return c;
}

std::string calibration_preset_text(const Calibration& c, const std::string& source) {
  std::ostringstream m;
  m << "kvsim GPU preset, fitted by kvsim calibrate to " << source << " (" << c.all.rows << " kernel rows)\n"
    << "fit over all rows: compute " << c.all.compute_pct << "%, bandwidth " << c.all.bandwidth_pct
    << "%; abs. error median " << fmt("%.2f%%", 100 * c.all.median_ape) << ", p90 "
    << fmt("%.2f%%", 100 * c.all.p90_ape) << " (base " << c.base << ": median "
    << fmt("%.2f%%", 100 * c.base_errors.median_ape) << ", p90 " << fmt("%.2f%%", 100 * c.base_errors.p90_ape) << ")\n"
    << "per kernel class (diagnostic; the cost model applies the pair above to every kernel):";
  for (const EfficiencyFit& f : c.classes) {
    m << "\n  " << f.scope << ": " << f.rows << " rows, compute " << f.compute_pct << "% (" << f.compute_bound
      << " rows bound), bandwidth " << f.bandwidth_pct << "% (" << f.memory_bound << " rows bound), median error "
      << fmt("%.2f%%", 100 * f.median_ape);
  }
  if (c.host) {
    m << "\nhost per step: " << c.host->step_ns << " ns + " << c.host->per_request_ns << " ns/request + "
      << c.host->per_token_ns << " ns/token, fitted to " << c.host->rows << " host_step rows (median error "
      << fmt("%.2f%%", 100 * c.host->median_ape) << ")";
    m << "\nlaunch overheads are the base preset's (a kernel profile excludes them)";
  } else {
    m << "\nlaunch overheads and host costs are the base preset's (a kernel profile excludes them)";
  }
  return gpu_spec_to_text(c.spec, c.base, m.str());
}

std::string synthetic_profile_csv(const ModelShape& model, const GpuSpec& truth, double noise_sigma,
                                  std::uint64_t seed) {
  std::vector<ProfileRow> rows;
  std::vector<std::int64_t> tokens = {1,   2,   3,   4,   8,    16,   24,   32,   64,   96,
                                      128, 256, 384, 512, 1024, 1536, 2048, 4096, 6144, 8192};
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
  const std::vector<RowWork> unit = [&] { return row_work(rows, model, truth, 0); }();
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
