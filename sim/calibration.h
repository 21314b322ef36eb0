// Calibration: fits the simulator's roofline (sim/cost_model.h) to a measured kernel profile
// (sim/profile_format.md) and makes a named GPU preset of it (sim/hardware_specs.h).
//
// For each profile row the cost model's work (FLOPs, bytes) is known; its predicted time at
// compute efficiency c, bandwidth efficiency b and fixed latency L is
// L + max(FLOPs / (peak * c), bytes / (bw * b)). The fit minimizes the sum of squared relative
// errors (predicted / measured - 1)^2 over the rows: integer percentages (c, b) by exhaustive
// search of 1..100 x 1..100 (exact, no local minima) and, for each (c, b), L >= 0 in closed form
// (the loss is a quadratic in L: exact least squares, clamped at 0; rounded to whole ns).
// Fitted parameters: the global pair (c, b) over all rows, with L = 0 (the preset's
// compute_efficiency_pct / bandwidth_efficiency_pct), and per kernel class (sim/kernel_class.h:
// gemm, attention, elementwise; the same classification the cost model prices with) its own
// (c, b, L): 2 + 3 x 3 = 11 numbers, plus the 3 host terms when the profile has host_step rows.
// GEMMs with fp8 weights (a model whose dtype is fp8 on a GPU with fp8 tensor cores) are fitted
// apart, scope "gemm_fp8", to the preset's gemm_fp8_* efficiencies, at the gemm class's fixed
// time (the preset has one latency per class).
// A class without rows keeps the global terms (its keys are absent from the preset). A factor
// that no row of its scope is bound by cannot be identified: it keeps the base preset's value.
// Rows under 100 ns (below CUDA-event resolution) are left out of the fit.
// Launch overheads (the host's cost of issuing a kernel) are not in a kernel profile (its times
// exclude them), so they keep the base preset's values; L is device time inside the measured
// kernel (the floor a small launch never goes under), paid in every CUDA-graph mode.
// Attention rows give num_tokens, num_seqs and context_tokens but not the causal pairs; the
// tokens are taken as evenly split over the sequences (exact for decode and single prefills).
// Everything here is deterministic (the synthetic noise is a seeded splitmix64 stream).
// Errors are reported as medians and p90 of absolute percentage errors (model/util/percentile.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/util/status.h"
#include "sim/hardware_specs.h"
#include "sim/kernels.h"
#include "sim/profile_table.h"

namespace kv::sim {

// Reads a profile with ProfileTable (messages name file, line and column): its rows.
StatusOr<std::vector<ProfileRow>> read_profile(const std::string& path);

struct EfficiencyFit {
  std::string scope;  // "all", "gemm", "attention", "elementwise"
  std::size_t rows = 0;
  int compute_pct = 0, bandwidth_pct = 0;
  std::int64_t latency_ns = 0;                      // fixed time per launch: per-class fits only (0 over all rows)
  std::size_t compute_bound = 0, memory_bound = 0;  // rows bound by each at the fit
  double median_ape = 0, p90_ape = 0, max_ape = 0;  // absolute percentage errors (fractions)
};

// Host terms fitted to a profile's host_step rows: time = step_ns + per_request_ns * requests +
// per_token_ns * tokens, by least squares on absolute errors (normal equations; a term the rows
// cannot separate -- all rows with the same requests, say -- is dropped and fitted as 0;
// negative terms are refitted without them). Integers in ns, rounded.
struct HostFit {
  std::size_t rows = 0;
  std::int64_t step_ns = 0, per_request_ns = 0, per_token_ns = 0;
  double median_ape = 0, max_ape = 0;
};
HostFit fit_host_terms(const std::vector<HostRow>& rows);

struct Calibration {
  GpuSpec spec;  // the base preset with the fitted global pair and per-class terms, named
  std::string base;
  EfficiencyFit all;
  std::vector<EfficiencyFit> classes;  // in KernelClass order, classes with rows only
  EfficiencyFit base_errors;           // the base preset's errors on the same rows
  std::optional<HostFit> host;         // with host_step rows: the spec's host terms come from it
};

// With `host_rows`, the preset's host terms are fitted too (host_per_block_ns becomes 0: the
// profile does not give block counts); without, they are the base preset's.
StatusOr<Calibration> calibrate(const std::vector<ProfileRow>& rows, const ModelShape& model, const GpuSpec& base,
                                const std::string& name, const std::vector<HostRow>& host_rows = {});

// Whole steps (decode_step and prefill_step rows) priced by `spec`: each row's GPU time of the
// forward and lm_head of its step as one FULL CUDA graph of its exact size (no host work,
// copies, launches or padding, which the rows do not measure), against the measured time.
struct StepCheck {
  std::vector<std::int64_t> predicted_ns;  // per row, in row order
  double median_ape = 0, p90_ape = 0, max_ape = 0;
};
// With `profile`, its measured kernel times price the kernels it has (the roofline the rest).
StepCheck check_steps(const std::vector<StepRow>& rows, const ModelShape& model, const GpuSpec& spec,
                      const ProfileTable* profile = nullptr);

// The preset file: the fitted GpuSpec (global pair and per-class keys), with the fit's errors
// as comments.
std::string calibration_preset_text(const Calibration& c, const std::string& source);

// A synthetic profile: the roofline of `truth` on every kernel over a grid of shapes (each
// kernel priced with its class's terms, GpuSpec::terms_for), each time multiplied by exp(noise_sigma * N(0, 1)) drawn
// from `seed`. CSV text in profile format.
std::string synthetic_profile_csv(const ModelShape& model, const GpuSpec& truth, double noise_sigma,
                                  std::uint64_t seed);

}  // namespace kv::sim
