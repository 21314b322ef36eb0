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
  bool fp8_weights = false;
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
                          static_cast<double>(r.time_ns), w.cls, w.fp8_weights});
  }
  return out;
}

// The roofline time of a row without the fixed latency.
double roofline_ns(const RowWork& w, int compute_pct, int bandwidth_pct) {
  return std::max(w.compute_ns * 100.0 / compute_pct, w.memory_ns * 100.0 / bandwidth_pct);
}

double predict(const RowWork& w, const EfficiencyFit& f) {
  return static_cast<double>(f.latency_ns) + roofline_ns(w, f.compute_pct, f.bandwidth_pct);
}

void fill_errors(EfficiencyFit& f, const std::vector<const RowWork*>& rows) {
  std::vector<double> e;
  f.compute_bound = f.memory_bound = 0;
  for (const RowWork* w : rows) {
    e.push_back(std::fabs(predict(*w, f) / w->measured_ns - 1));
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

// A fixed time per launch that fit() and loss_at() choose themselves.
constexpr double kFittedLatency = -1;

// The loss (sum of squared relative errors) at (c, b) with the fixed time L: `fixed` where
// >= 0, else (kFittedLatency) the L >= 0 that minimizes it. With a = 1 / measured and
// r = roofline / measured - 1 per row, the loss sum (L a + r)^2 is least at
// L = -sum(a r) / sum(a a), clamped at 0 (exact least squares).
double loss_at(const std::vector<const RowWork*>& rows, int c, int b, double fixed, double* fixed_ns) {
  double s_ar = 0, s_aa = 0, s_rr = 0;
  for (const RowWork* w : rows) {
    const double a = 1 / w->measured_ns, r = roofline_ns(*w, c, b) * a - 1;
    s_ar += a * r;
    s_aa += a * a;
    s_rr += r * r;
  }
  const double l = fixed >= 0 ? fixed : s_aa > 0 ? std::max(0.0, -s_ar / s_aa) : 0.0;
  *fixed_ns = l;
  return l * l * s_aa + 2 * l * s_ar + s_rr;
}

// Unidentified factors keep the base terms' value when that changes no row's bound.
void keep_unidentified(EfficiencyFit& best, const std::vector<const RowWork*>& rows, const RooflineTerms& base) {
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
}

// The efficiencies (and, with kFittedLatency, the fixed time per launch) that fit `rows` best.
EfficiencyFit fit(const std::string& scope, const std::vector<const RowWork*>& rows, const RooflineTerms& base,
                  double fixed_latency) {
  EfficiencyFit best;
  best.scope = scope;
  double best_loss = INFINITY;
  for (int c = 1; c <= 100; ++c) {
    for (int b = 1; b <= 100; ++b) {
      double fixed_ns = 0;
      const double loss = loss_at(rows, c, b, fixed_latency, &fixed_ns);
      // Ties (a factor no row is bound by) go to the larger efficiency.
      if (loss <= best_loss * (1 + 1e-12)) {
        best_loss = loss;
        best.compute_pct = c;
        best.bandwidth_pct = b;
        best.latency_ns = std::llround(fixed_ns);
      }
    }
  }
  fill_errors(best, rows);
  keep_unidentified(best, rows, base);
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

// GEMMs with fp8 weights set only their own efficiencies (their latency is the gemm class's).
void set_class_terms(GpuSpec& g, KernelClass cls, bool fp8_weights, const EfficiencyFit& f) {
  if (cls == KernelClass::kGemm && fp8_weights) {
    g.gemm_fp8_compute_efficiency_pct = f.compute_pct;
    g.gemm_fp8_bandwidth_efficiency_pct = f.bandwidth_pct;
    return;
  }
  switch (cls) {
    case KernelClass::kGemm:
      g.gemm_compute_efficiency_pct = f.compute_pct;
      g.gemm_bandwidth_efficiency_pct = f.bandwidth_pct;
      g.gemm_latency_ns = f.latency_ns;
      g.gemm_fp8_compute_efficiency_pct = g.gemm_fp8_bandwidth_efficiency_pct = 0;  // 16-bit rows: the fit covers them
      break;
    case KernelClass::kAttention:
      g.attention_compute_efficiency_pct = f.compute_pct;
      g.attention_bandwidth_efficiency_pct = f.bandwidth_pct;
      g.attention_latency_ns = f.latency_ns;
      break;
    case KernelClass::kElementwise:
      g.elementwise_compute_efficiency_pct = f.compute_pct;
      g.elementwise_bandwidth_efficiency_pct = f.bandwidth_pct;
      g.elementwise_latency_ns = f.latency_ns;
      break;
  }
}

// The base preset's errors on the rows, each row priced with its class's terms.
EfficiencyFit base_errors(const GpuSpec& base, const std::vector<RowWork>& work) {
  EfficiencyFit f;
  f.scope = base.name;
  f.compute_pct = base.compute_efficiency_pct;
  f.bandwidth_pct = base.bandwidth_efficiency_pct;
  std::vector<double> e;
  for (const RowWork& w : work) {
    const RooflineTerms t = base.terms_for(w.cls, w.fp8_weights);
    const double p =
        static_cast<double>(t.latency_ns) + roofline_ns(w, t.compute_efficiency_pct, t.bandwidth_efficiency_pct);
    e.push_back(std::fabs(p / w.measured_ns - 1));
  }
  std::sort(e.begin(), e.end());
  f.rows = work.size();
  f.median_ape = percentile_of_sorted(e, 50);
  f.p90_ape = percentile_of_sorted(e, 90);
  f.max_ape = e.empty() ? 0 : e.back();
  return f;
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

StepCheck check_steps(const std::vector<StepRow>& rows, const ModelShape& model, const GpuSpec& spec,
                      const ProfileTable* profile) {
  StepCheck check;
  std::vector<double> errors;
  for (const StepRow& r : rows) {
    CudaGraphConfig graphs;  // one FULL graph of exactly the step's tokens
    graphs.mode = CudaGraphMode::kFull;
    graphs.capture_sizes = {r.num_tokens};
    CostModel cost(model, spec, graphs, profile);
    StepShape shape;
    shape.num_tokens = r.num_tokens;
    shape.num_seqs = shape.num_sampled = r.num_seqs;
    shape.kv_tokens_read = r.context_tokens;
    shape.attended_pairs = attention_pairs(r.num_tokens, r.num_seqs, r.context_tokens);
    shape.uniform_decode = r.decode;
    const StepCost c = cost.cost(shape);
    // The nodes of the forward, from the first norm to the final one, then lm_head's kernel
    // without the eager launch the cost model gives it (the rows' lm_head runs in the graph).
    std::int64_t cycles = 0;
    for (int n = static_cast<int>(StepNode::kInputNorm); n <= static_cast<int>(StepNode::kFinalNorm); ++n)
      cycles += c.node_cycles[static_cast<std::size_t>(n)];
    cycles += cost.kernel_cycles(Kernel::kLmHead, {r.num_seqs, r.num_seqs, 0}, 0);
    const std::int64_t ns = cost.cycles_to_ns(cycles);
    check.predicted_ns.push_back(ns);
    if (r.time_ns > 0) errors.push_back(std::fabs(static_cast<double>(ns) / static_cast<double>(r.time_ns) - 1));
  }
  std::sort(errors.begin(), errors.end());
  if (!errors.empty()) {
    check.median_ape = percentile_of_sorted(errors, 50);
    check.p90_ape = percentile_of_sorted(errors, 90);
    check.max_ape = errors.back();
  }
  return check;
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
  c.all = fit("all", all, {base.compute_efficiency_pct, base.bandwidth_efficiency_pct, 0}, 0.0);
  c.spec = base;
  c.spec.name = name;
  c.spec.compute_efficiency_pct = c.all.compute_pct;
  c.spec.bandwidth_efficiency_pct = c.all.bandwidth_pct;
  // Per class, and GEMMs with fp8 weights apart (fitted at the gemm class's fixed time) after
  // the 16-bit ones, so that a 16-bit fit, which clears the fp8 terms, cannot undo theirs.
  for (int k = 0; k < kNumKernelClasses; ++k) {
    const auto cls = static_cast<KernelClass>(k);
    for (bool fp8 : {false, true}) {
      std::vector<const RowWork*> sub;
      for (const RowWork& w : work) {
        if (w.cls == cls && w.fp8_weights == fp8) sub.push_back(&w);
      }
      if (sub.empty()) continue;  // the class keeps the global terms
      const std::string scope = std::string(kernel_class_name(cls)) + (fp8 ? "_fp8" : "");
      const double latency = fp8 ? static_cast<double>(c.spec.terms_for(cls).latency_ns) : kFittedLatency;
      c.classes.push_back(fit(scope, sub, base.terms_for(cls, fp8), latency));
      set_class_terms(c.spec, cls, fp8, c.classes.back());
    }
  }
  c.base_errors = base_errors(base, work);
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
    << "per kernel class (the <class>_* keys below; the cost model prices each kernel with its class's):";
  for (const EfficiencyFit& f : c.classes) {
    m << "\n  " << f.scope << ": " << f.rows << " rows, compute " << f.compute_pct << "% (" << f.compute_bound
      << " rows bound), bandwidth " << f.bandwidth_pct << "% (" << f.memory_bound << " rows bound), latency "
      << f.latency_ns << " ns per launch, median error " << fmt("%.2f%%", 100 * f.median_ape) << ", p90 "
      << fmt("%.2f%%", 100 * f.p90_ape);
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
    const RooflineTerms terms = truth.terms_for(unit[i].cls, unit[i].fp8_weights);
    const double t = (static_cast<double>(terms.latency_ns) +
                      roofline_ns(unit[i], terms.compute_efficiency_pct, terms.bandwidth_efficiency_pct)) *
                     std::exp(noise_sigma * normal());
    out << kernel_name(rows[i].kernel) << ',' << rows[i].num_tokens << ',' << rows[i].num_seqs << ','
        << rows[i].context_tokens << ',' << std::max<std::int64_t>(1, std::llround(t)) << '\n';
  }
  return out.str();
}

}  // namespace kv::sim
