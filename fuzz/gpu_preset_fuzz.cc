// Fuzz target gpu_preset: any bytes as a GPU preset file (`--gpu-preset-file FILE`,
// sim/hardware_specs.h), read from disk as the replay reads it, then what a replay does with
// the spec.
// Properties: the reader never crashes; a spec it accepts has positive peak FLOPs, bandwidths,
// memory and clock, efficiencies in 1..100 (the per-class ones too, 0 standing for the global
// one) and every figure within its documented bound; it
// prints back (gpu_spec_to_text) to a file that reads back equal; the cost model prices steps of
// every size for llama3-8b on it (no abort in the step DAG, durations >= 0).
#include <string>

#include "fuzz/fuzz_target.h"
#include "fuzz/price_steps.h"
#include "model/catalog/model_shape.h"
#include "sim/hardware_specs.h"
#include "sim/kernel_class.h"

namespace {

using kv::sim::GpuSpec;

constexpr std::int64_t kMaxNs = 1'000'000'000'000;

void check_spec(const GpuSpec& g) {
  const std::string what = g.name;
  FUZZ_CHECK(g.peak_flops > 0 && g.peak_flops <= 1'000'000'000'000'000'000, what);
  for (std::int64_t flops : {g.peak_fp8_flops, g.peak_fp4_flops}) {
    FUZZ_CHECK(flops >= 0 && flops <= 1'000'000'000'000'000'000, what);
  }
  for (std::int64_t bw : {g.hbm_bytes_per_s, g.h2d_bytes_per_s})
    FUZZ_CHECK(bw > 0 && bw <= 1'000'000'000'000'000, what);
  FUZZ_CHECK(g.interconnect_bytes_per_s >= 0 && g.interconnect_bytes_per_s <= 1'000'000'000'000'000, what);
  FUZZ_CHECK(g.memory_bytes > 0 && g.memory_bytes <= (std::int64_t{1} << 50), what);
  FUZZ_CHECK(g.clock_mhz > 0 && g.clock_mhz <= 100'000 && g.sm_count >= 0 && g.sm_count <= 1'000'000, what);
  FUZZ_CHECK(g.compute_efficiency_pct >= 1 && g.compute_efficiency_pct <= 100, what);
  FUZZ_CHECK(g.bandwidth_efficiency_pct >= 1 && g.bandwidth_efficiency_pct <= 100, what);
  for (std::int64_t ns : {g.launch_overhead_ns, g.graph_launch_ns, g.copy_latency_ns, g.host_step_ns,
                          g.host_per_request_ns, g.host_per_block_ns, g.host_per_token_ns, g.interconnect_latency_ns}) {
    FUZZ_CHECK(ns >= 0 && ns <= kMaxNs, what);
  }
  for (int k = 0; k < kv::sim::kNumKernelClasses; ++k) {
    const kv::sim::RooflineTerms t = g.terms_for(static_cast<kv::sim::KernelClass>(k));
    FUZZ_CHECK(t.compute_efficiency_pct >= 1 && t.compute_efficiency_pct <= 100, what);
    FUZZ_CHECK(t.bandwidth_efficiency_pct >= 1 && t.bandwidth_efficiency_pct <= 100, what);
    FUZZ_CHECK(t.latency_ns >= 0 && t.latency_ns <= kMaxNs, what);
  }
}

void check_round_trip(const GpuSpec& g) {
  const std::string text = kv::sim::gpu_spec_to_text(g, "h100-sxm", "round trip");
  auto again = kv::sim::parse_gpu_spec_text("again.gpu", text);
  FUZZ_CHECK(again.ok(), again.status().message() + " in\n" + text);
  FUZZ_CHECK(again->name == g.name, again->name);
  FUZZ_CHECK(kv::sim::gpu_spec_to_text(*again, "h100-sxm", "round trip") == text, text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = kv::fuzz::write_scratch("preset.gpu", kv::fuzz::as_text(data, size));
  auto spec = kv::sim::load_gpu_spec_file(path);
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().message().rfind(path, 0) == 0, spec.status().message());
    return 0;
  }
  check_spec(*spec);
  check_round_trip(*spec);
  static const kv::ModelShape model = kv::find_model_shape("llama3-8b").value();
  kv::fuzz::price_steps(model, *spec);
  return 0;
}
