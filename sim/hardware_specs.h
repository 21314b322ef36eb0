// GpuSpec: the peak numbers of an accelerator (and the host around it) that the cost model is
// built from, with named presets; the model side is model/catalog/model_shape.h. Every figure is an integer in base
// units (bytes, FLOP/s, ns, MHz, percent) so the cost model can stay in integer arithmetic and give the same number on
// every machine. Invariants of a preset: every field > 0, heads % kv_heads == 0, efficiencies in (0, 100]. Lookup by
// name returns a Status listing the valid names when the name is unknown. Per kernel class
// (sim/kernel_class.h) a preset may give its own efficiencies and a fixed device time per launch,
// and GEMMs with fp8 weights efficiencies of their own; a per-class efficiency of 0 means "the
// global one", so a preset without them prices every kernel with the global pair and no fixed
// time. The l40s, h100-sxm and h200 presets carry measured ones (cited in hardware_specs.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/catalog/model_shape.h"
#include "model/util/status.h"
#include "sim/kernel_class.h"

namespace kv::sim {

// The roofline terms one kernel is priced with (GpuSpec::terms_for): efficiencies in 1..100.
struct RooflineTerms {
  int compute_efficiency_pct = 0;
  int bandwidth_efficiency_pct = 0;
  std::int64_t latency_ns = 0;  // added to every launch's roofline time
};

// The accelerator and the host around it (CPU step overheads, PCIe copies).
struct GpuSpec {
  std::string name;
  std::int64_t peak_flops = 0;      // dense bf16 (= fp16) tensor-core FLOP/s
  std::int64_t peak_fp8_flops = 0;  // dense fp8; 0: no fp8 tensor cores (weight-only fp8)
  std::int64_t peak_fp4_flops = 0;  // dense fp4; 0: no fp4 tensor cores (weight-only fp4)
  std::int64_t hbm_bytes_per_s = 0;
  std::int64_t memory_bytes = 0;
  int sm_count = 0;
  int clock_mhz = 0;                              // converts ns to the DAG's cycles
  int compute_efficiency_pct = 70;                // achieved fraction of peak_flops
  int bandwidth_efficiency_pct = 80;              // achieved fraction of hbm_bytes_per_s
  std::int64_t launch_overhead_ns = 4000;         // one eager kernel launch
  std::int64_t graph_launch_ns = 6000;            // one CUDA-graph replay
  std::int64_t h2d_bytes_per_s = 25'000'000'000;  // pinned host-to-device copies
  std::int64_t copy_latency_ns = 2000;            // per host<->device copy
  std::int64_t host_step_ns = 40000;              // scheduler + input preparation, per step
  std::int64_t host_per_request_ns = 500;         // per scheduled request
  std::int64_t host_per_block_ns = 20;            // per block id sent in the plan
  std::int64_t host_per_token_ns = 0;             // per scheduled token (input preparation, sampling)
  // Tensor parallelism: the link between GPUs, per direction per GPU, and one ring step's latency.
  std::int64_t interconnect_bytes_per_s = 450'000'000'000;  // NVLink 4 (900 GB/s both ways)
  std::int64_t interconnect_latency_ns = 2000;
  // Per kernel class: efficiencies in percent (0: the global ones above) and a fixed device time
  // per launch of a kernel of the class, added to its roofline (0: none). `kvsim calibrate`
  // fits them to a kernel profile.
  int gemm_compute_efficiency_pct = 0, gemm_bandwidth_efficiency_pct = 0;
  int attention_compute_efficiency_pct = 0, attention_bandwidth_efficiency_pct = 0;
  int elementwise_compute_efficiency_pct = 0, elementwise_bandwidth_efficiency_pct = 0;
  std::int64_t gemm_latency_ns = 0, attention_latency_ns = 0, elementwise_latency_ns = 0;
  // GEMMs with fp8 weights (vLLM's FP8 checkpoints run other kernels than 16-bit ones): their
  // efficiencies in percent (0: the gemm class's). `kvsim calibrate` fitting the gemm class
  // clears them, since its fit covers every GEMM of the profiled model.
  int gemm_fp8_compute_efficiency_pct = 0, gemm_fp8_bandwidth_efficiency_pct = 0;

  // The terms a kernel of class `c` is priced with: its class's where given, else the global pair;
  // a GEMM with fp8 weights takes the fp8 GEMM efficiencies where given.
  RooflineTerms terms_for(KernelClass c, bool fp8_weights = false) const {
    RooflineTerms t;
    switch (c) {
      case KernelClass::kGemm:
        t = {gemm_compute_efficiency_pct, gemm_bandwidth_efficiency_pct, gemm_latency_ns};
        break;
      case KernelClass::kAttention:
        t = {attention_compute_efficiency_pct, attention_bandwidth_efficiency_pct, attention_latency_ns};
        break;
      case KernelClass::kElementwise:
        t = {elementwise_compute_efficiency_pct, elementwise_bandwidth_efficiency_pct, elementwise_latency_ns};
        break;
    }
    if (c == KernelClass::kGemm && fp8_weights) {
      if (gemm_fp8_compute_efficiency_pct > 0) t.compute_efficiency_pct = gemm_fp8_compute_efficiency_pct;
      if (gemm_fp8_bandwidth_efficiency_pct > 0) t.bandwidth_efficiency_pct = gemm_fp8_bandwidth_efficiency_pct;
    }
    if (t.compute_efficiency_pct == 0) t.compute_efficiency_pct = compute_efficiency_pct;
    if (t.bandwidth_efficiency_pct == 0) t.bandwidth_efficiency_pct = bandwidth_efficiency_pct;
    return t;
  }

  // The dense peak a GEMM runs at when its inputs are `d`; a format without tensor cores here
  // runs weight-only (dequantized to 16-bit): bf16's peak.
  std::int64_t peak_flops_for(DType d) const {
    if (d == DType::kFp8 && peak_fp8_flops > 0) return peak_fp8_flops;
    if (d == DType::kFp4 && peak_fp4_flops > 0) return peak_fp4_flops;
    return peak_flops;
  }
  // Whether GEMM inputs of `d` run on tensor cores for `d` (else they are 16-bit).
  bool has_tensor_cores_for(DType d) const {
    if (d == DType::kFp8) return peak_fp8_flops > 0;
    if (d == DType::kFp4) return peak_fp4_flops > 0;
    return true;
  }
};

// a100-40gb, a100-80gb, l40s, h100-pcie, h100-sxm, h200, b200 (sim/hardware_specs.cc cites the
// datasheet of every figure).
const std::vector<GpuSpec>& gpu_presets();

// A built-in preset by name (presets are values; preset files are read by the replay layer).
StatusOr<GpuSpec> find_gpu_spec(std::string_view name);

// GPU preset files (`kvsim calibrate` writes them): UTF-8 text, one `key = value` a line,
// `#` comments and blank lines ignored. `name` is required and must not be a built-in preset;
// `base` (default h100-sxm) names the built-in preset whose fields the others override; every
// other key is a GpuSpec integer field by its C++ name (peak_flops, hbm_bytes_per_s,
// peak_fp8_flops, peak_fp4_flops, memory_bytes, sm_count, clock_mhz, compute_efficiency_pct, bandwidth_efficiency_pct,
// launch_overhead_ns, graph_launch_ns, h2d_bytes_per_s, copy_latency_ns, host_step_ns,
// host_per_request_ns, host_per_block_ns, host_per_token_ns, interconnect_bytes_per_s,
// interconnect_latency_ns). Optional per kernel class (gemm, attention, elementwise; absent or
// 0: the global efficiency, no fixed time): gemm_compute_efficiency_pct,
// gemm_bandwidth_efficiency_pct, gemm_latency_ns, and the same three keys with the attention_
// and elementwise_ prefixes; gemm_fp8_compute_efficiency_pct and gemm_fp8_bandwidth_efficiency_pct
// for GEMMs with fp8 weights (absent or 0: the gemm class's). Values are whole numbers from 0 up to a bound far above
// any real GPU: 10^18 FLOP/s, 10^15 bytes/s, 2^50 bytes of memory, 10^6 SMs, 10^5 MHz, 100 percent, 10^12 ns. Errors
// name the file, line and key.
StatusOr<GpuSpec> parse_gpu_spec_text(const std::string& file_name, std::string_view text);
StatusOr<GpuSpec> load_gpu_spec_file(const std::string& path);
// The preset file text of `spec` (every field, so it reads back equal; the per-class keys only
// where they or the base preset's are not 0, so a preset without them over a base without them
// prints as before); `comment` lines first.
std::string gpu_spec_to_text(const GpuSpec& spec, const std::string& base, const std::string& comment);

}  // namespace kv::sim
