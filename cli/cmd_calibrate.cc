// kvsim calibrate PROFILE.csv --name NAME: fits the simulator's cost model to a GPU kernel
// profile and saves a GPU preset file that `kvsim replay --gpu-preset-file FILE` (or `--gpu
// NAME` with the file in ./presets or $KVSIM_GPU_PRESET_PATH) loads (sim/calibration.h).
// --synthesize writes a synthetic profile from a known preset, to prove the pipeline.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "files/output_file.h"
#include "model/catalog/dtype.h"
#include "model/util/format_number.h"
#include "replay/held_out.h"
#include "sim/calibration.h"
#include "sim/hardware_specs.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "calibrate";
constexpr double kMaxSigma = 0.99;  // log-normal sigmas of the synthetic noise

Status write_new(const std::string& path, const std::string& text, bool force) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  return files::write_file_atomically(path, text, force);
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * v);
  return buf;
}

// The command line of `kvsim calibrate`, with its defaults.
struct CalibrateArgs {
  std::string profile, name, base_gpu = "h100-sxm", model = "llama3-8b", dtype = "bf16", out, synthesize, truth_file,
                             held_out;
  double noise_sigma = 0.03, step_noise_sigma = 0.02;
  std::uint64_t seed = 1;
  std::int64_t held_out_limit = 300;
  bool force = false;
};

constexpr const char* kUsage =
    "kvsim calibrate PROFILE.csv --name NAME [options]\n"
    "kvsim calibrate --synthesize OUT.csv --truth-preset-file TRUTH.gpu [options]\n"
    "kvsim calibrate --serve-result RESULT.json --trace TRACE [replay options] (its own --help)\n\n"
    "Fits the simulator's roofline efficiencies (compute and bandwidth, in whole percent) to a\n"
    "per-kernel profile CSV (sim/profile_format.md) by least squares on relative errors, over all\n"
    "rows and per kernel class, and writes a GPU preset file (default presets/NAME.gpu) that\n"
    "kvsim replay --gpu-preset-file FILE, or --gpu NAME, loads. Launch overheads are not in a\n"
    "kernel profile and keep the base preset's values. The profile's decode_step and prefill_step\n"
    "rows (whole measured steps) are not fitted: each is priced with the fitted preset, the base\n"
    "preset and the profile's kernel times summed, and the errors are printed.\n"
    "--synthesize writes a profile from the roofline of a known preset plus log-normal noise;\n"
    "--held-out-trace then checks predicted against 'measured' step times (the truth preset's\n"
    "simulator, noised) on a trace. Exit status: 0 ok, 2 bad usage or bad input.\n\n"
    "Options";

void add_calibrate_options(po::options_description& opts, CalibrateArgs& a) {
  opts.add_options()("help,h", "show this help")("profile", po::value(&a.profile), "profile CSV (positional)")(
      "name", po::value(&a.name), "name of the fitted preset")("base-gpu",
                                                               po::value(&a.base_gpu)->default_value(a.base_gpu),
                                                               "built-in preset whose peaks and overheads are kept")(
      "model", po::value(&a.model)->default_value(a.model), "model preset the profile was measured with")(
      "dtype", po::value(&a.dtype)->default_value(a.dtype),
      "format of the model's linear-layer weights in the profile (bf16, fp16, fp8, fp4); fp8 GEMMs are fitted to the "
      "preset's gemm_fp8_* efficiencies")("out", po::value(&a.out), "preset file to write (default: presets/NAME.gpu)")(
      "force", po::bool_switch(&a.force), "replace an existing output file")(
      "synthesize", po::value(&a.synthesize), "write a synthetic profile CSV to this file instead of fitting")(
      "truth-preset-file", po::value(&a.truth_file), "the known preset of --synthesize and --held-out-trace")(
      "noise-sigma", bounded("noise-sigma", &a.noise_sigma, 0.0, kMaxSigma),
      "--synthesize: log-normal sigma of each row (0 to 0.99)")(
      "seed", bounded("seed", &a.seed, std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max()),
      "seed of the synthetic noise")("held-out-trace", po::value(&a.held_out),
                                     "trace to check the fitted preset on (needs --truth-preset-file)")(
      "held-out-limit",
      bounded("held-out-limit", &a.held_out_limit, std::int64_t{0}, std::numeric_limits<std::int64_t>::max()),
      "requests of it to replay (0 = all)")(
      "step-noise-sigma", bounded("step-noise-sigma", &a.step_noise_sigma, 0.0, kMaxSigma),
      "--held-out-trace: log-normal sigma of each 'measured' step time (0 to 0.99)");
}

// --synthesize: a profile from the truth preset's roofline plus noise.
int write_synthetic(const CalibrateArgs& a, const ModelShape& model_spec, const std::optional<sim::GpuSpec>& truth) {
  if (!truth) return usage_error(kCommand, "--synthesize needs --truth-preset-file (the known preset)");
  const std::string csv = sim::synthetic_profile_csv(model_spec, *truth, a.noise_sigma, a.seed);
  if (Status s = write_new(a.synthesize, csv, a.force); !s.ok()) {
    return usage_error(kCommand, "--synthesize: " + s.message());
  }
  std::cout << "wrote a synthetic profile of " << a.model << " on '" << truth->name << "' (compute "
            << truth->compute_efficiency_pct << "%, bandwidth " << truth->bandwidth_efficiency_pct << "%, noise sigma "
            << a.noise_sigma << ", seed " << a.seed << ") to " << a.synthesize << "\n";
  return 0;
}

// The fit's table: efficiencies and errors over all rows, per class, and of the base preset.
void print_fit(const CalibrateArgs& a, const sim::Calibration& cal, std::size_t num_rows) {
  std::cout << "kvsim calibrate: " << a.profile << " (" << num_rows << " rows), model " << a.model
            << (a.dtype == "bf16" ? "" : " (" + a.dtype + " weights)") << ", base " << a.base_gpu << "\n";
  std::printf("  %-12s %6s %9s %10s %11s %9s %9s %9s\n", "scope", "rows", "compute", "bandwidth", "latency ns",
              "median", "p90", "max");
  auto line = [](const sim::EfficiencyFit& f) {
    std::printf("  %-12s %6zu %8d%% %9d%% %11lld %9s %9s %9s\n", f.scope.c_str(), f.rows, f.compute_pct,
                f.bandwidth_pct, static_cast<long long>(f.latency_ns), pct(f.median_ape).c_str(),
                pct(f.p90_ape).c_str(), pct(f.max_ape).c_str());
  };
  line(cal.all);
  for (const auto& f : cal.classes) line(f);
  sim::EfficiencyFit b = cal.base_errors;
  b.scope = "base " + b.scope;
  line(b);
  std::cout << "  (errors: |predicted - measured| / measured over the profile rows)\n";
  if (cal.host) {
    std::cout << "  host per step: " << cal.host->step_ns << " ns + " << cal.host->per_request_ns << " ns/request + "
              << cal.host->per_token_ns << " ns/token (" << cal.host->rows << " host_step rows, median error "
              << pct(cal.host->median_ape) << ", max " << pct(cal.host->max_ape) << ")\n";
  }
}

// --held-out-trace: the fitted and the base preset against the truth preset's noised steps.
int check_held_out(const CalibrateArgs& a, const ModelShape& model_spec, const std::optional<sim::GpuSpec>& truth,
                   const sim::Calibration& cal, const sim::GpuSpec& base) {
  if (!truth) return usage_error(kCommand, "--held-out-trace needs --truth-preset-file (what stands for the GPU)");
  auto fitted =
      replay::held_out_error(a.held_out, a.held_out_limit, model_spec, *truth, cal.spec, a.step_noise_sigma, a.seed);
  if (!fitted.ok()) return usage_error(kCommand, "--held-out-trace: " + fitted.status().message());
  sim::GpuSpec base_named = base;
  auto baseline =
      replay::held_out_error(a.held_out, a.held_out_limit, model_spec, *truth, base_named, a.step_noise_sigma, a.seed);
  if (!baseline.ok()) return usage_error(kCommand, "--held-out-trace: " + baseline.status().message());
  std::cout << "  held-out " << a.held_out << " (" << fitted->steps << " steps, truth '" << truth->name << "'):\n";
  std::printf("    %-12s median %8s  p90 %8s  max %8s\n", a.name.c_str(), pct(fitted->median_ape).c_str(),
              pct(fitted->p90_ape).c_str(), pct(fitted->max_ape).c_str());
  std::printf("    %-12s median %8s  p90 %8s  max %8s\n", a.base_gpu.c_str(), pct(baseline->median_ape).c_str(),
              pct(baseline->p90_ape).c_str(), pct(baseline->max_ape).c_str());
  const bool met = fitted->median_ape <= 0.05 && fitted->p90_ape <= 0.10;
  std::cout << "    fidelity target (median <= 5%, p90 <= 10%): " << (met ? "met" : "NOT met") << "\n";
  return 0;
}

// The profile's decode_step and prefill_step rows against the fitted and the base preset.
// Columns: the fitted preset, the base preset, and the profile's own kernel times summed (what
// the step costs beyond its kernels measured one by one: gaps in the graph, other launches).
void print_step_check(const CalibrateArgs& a, const std::vector<sim::StepRow>& rows, const ModelShape& model,
                      const sim::GpuSpec& fitted, const sim::GpuSpec& base, const sim::ProfileTable& profile) {
  const sim::StepCheck checks[] = {sim::check_steps(rows, model, fitted), sim::check_steps(rows, model, base),
                                   sim::check_steps(rows, model, fitted, &profile)};
  const std::string names[] = {a.name, a.base_gpu, "kernels"};
  std::cout << "  whole steps (" << rows.size() << " decode_step and prefill_step rows, one CUDA graph each, GPU "
            << "time in us;\n  kernels: the profile's kernel times summed):\n";
  std::printf("    %-7s %6s %6s %9s %10s", "step", "tokens", "seqs", "context", "measured");
  for (const std::string& n : names) std::printf(" %12s %8s", n.c_str(), "error");
  std::printf("\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double m = static_cast<double>(rows[i].time_ns);
    std::printf("    %-7s %6lld %6lld %9lld %10.1f", rows[i].decode ? "decode" : "prefill",
                static_cast<long long>(rows[i].num_tokens), static_cast<long long>(rows[i].num_seqs),
                static_cast<long long>(rows[i].context_tokens), m / 1e3);
    for (const sim::StepCheck& c : checks) {
      const double p = static_cast<double>(c.predicted_ns[i]);
      const std::string err = m > 0 ? format_number("%+.1f%%", 100 * (p / m - 1)) : std::string("-");
      std::printf(" %12.1f %8s", p / 1e3, err.c_str());
    }
    std::printf("\n");
  }
  for (std::size_t k = 0; k < std::size(checks); ++k) {
    std::printf("    %-12s median %8s  p90 %8s  max %8s\n", names[k].c_str(), pct(checks[k].median_ape).c_str(),
                pct(checks[k].p90_ape).c_str(), pct(checks[k].max_ape).c_str());
  }
}

// The fit of PROFILE.csv, written as a preset file, then the held-out checks: the profile's
// decode_step and prefill_step rows, and a trace if asked for.
int fit_preset(CalibrateArgs& a, const ModelShape& model_spec, const std::optional<sim::GpuSpec>& truth) {
  if (a.profile.empty()) return usage_error(kCommand, "--profile: give a profile CSV (kvsim calibrate --help)");
  if (a.name.empty()) return usage_error(kCommand, "--name is required");
  auto base = sim::find_gpu_spec(a.base_gpu);
  if (!base.ok()) return usage_error(kCommand, "--base-gpu: " + base.status().message());
  auto table = sim::ProfileTable::load(a.profile);
  if (!table.ok()) return usage_error(kCommand, "--profile: " + table.status().message());
  const std::vector<sim::ProfileRow> rows = table->all_rows();
  if (rows.empty()) return usage_error(kCommand, "--profile: " + a.profile + ": no profile rows");
  auto cal = sim::calibrate(rows, model_spec, *base, a.name, table->host_rows());
  if (!cal.ok()) return usage_error(kCommand, "--profile: " + cal.status().message());
  if (a.out.empty()) a.out = "presets/" + a.name + ".gpu";
  print_fit(a, *cal, rows.size());
  if (Status s = write_new(a.out, sim::calibration_preset_text(*cal, a.profile), a.force); !s.ok())
    return usage_error(kCommand, "--out: " + s.message());
  std::cout << "  wrote preset '" << a.name << "' to " << a.out << "\n";
  if (!table->step_rows().empty()) print_step_check(a, table->step_rows(), model_spec, cal->spec, *base, *table);
  if (!a.held_out.empty()) return check_held_out(a, model_spec, truth, *cal, *base);
  return 0;
}

}  // namespace

int run_calibrate(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--serve-result" || arg.starts_with("--serve-result=")) return run_calibrate_serving(argc, argv);
  }
  CalibrateArgs a;
  po::options_description opts(kUsage);
  add_calibrate_options(opts, a);
  po::positional_options_description pos;
  pos.add("profile", 1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  auto model_spec = find_model_shape(a.model);
  if (!model_spec.ok()) return usage_error(kCommand, "--model: " + model_spec.status().message());
  auto dtype = parse_dtype(a.dtype);
  if (!dtype.ok()) return usage_error(kCommand, "--dtype: " + dtype.status().message());
  model_spec->dtype = *dtype;
  std::optional<sim::GpuSpec> truth;
  if (!a.truth_file.empty()) {
    auto t = sim::load_gpu_spec_file(a.truth_file);
    if (!t.ok()) return usage_error(kCommand, "--truth-preset-file: " + t.status().message());
    truth = *t;
  }
  if (!a.synthesize.empty()) return write_synthetic(a, *model_spec, truth);
  return fit_preset(a, *model_spec, truth);
}

}  // namespace kv::cli
