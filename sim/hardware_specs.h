// GpuSpec: the peak numbers of an accelerator (and the host around it) that the cost model is
// built from, with named presets; the model side is model/model_shape.h. Every figure is an integer in base units (bytes, FLOP/s, ns, MHz, percent) so the
// cost model can stay in integer arithmetic and give the same number on every machine.
// Invariants of a preset: every field > 0, heads % kv_heads == 0, efficiencies in (0, 100].
// Lookup by name returns a Status listing the valid names when the name is unknown.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_shape.h"
#include "model/status.h"

namespace kv::sim {

// The accelerator and the host around it (CPU step overheads, PCIe copies).
struct GpuSpec {
  std::string name;
  std::int64_t peak_flops = 0;          // dense bf16 FLOP/s
  std::int64_t hbm_bytes_per_s = 0;
  std::int64_t memory_bytes = 0;
  int sm_count = 0;
  int clock_mhz = 0;                    // converts ns to the DAG's cycles
  int compute_efficiency_pct = 70;      // achieved fraction of peak_flops
  int bandwidth_efficiency_pct = 80;    // achieved fraction of hbm_bytes_per_s
  std::int64_t launch_overhead_ns = 4000;   // one eager kernel launch
  std::int64_t graph_launch_ns = 6000;      // one CUDA-graph replay
  std::int64_t h2d_bytes_per_s = 25'000'000'000;  // pinned host-to-device copies
  std::int64_t copy_latency_ns = 2000;           // per host<->device copy
  std::int64_t host_step_ns = 40000;             // scheduler + input preparation, per step
  std::int64_t host_per_request_ns = 500;        // per scheduled request
  std::int64_t host_per_block_ns = 20;           // per block id sent in the plan
};

const std::vector<GpuSpec>& gpu_presets();      // h100-sxm, h200

// A built-in preset by name (presets are values; preset files are read by the replay layer).
StatusOr<GpuSpec> find_gpu_spec(std::string_view name);

// GPU preset files (`kvsim calibrate` writes them): UTF-8 text, one `key = value` a line,
// `#` comments and blank lines ignored. `name` is required and must not be a built-in preset;
// `base` (default h100-sxm) names the built-in preset whose fields the others override; every
// other key is a GpuSpec integer field by its C++ name (peak_flops, hbm_bytes_per_s,
// memory_bytes, sm_count, clock_mhz, compute_efficiency_pct, bandwidth_efficiency_pct,
// launch_overhead_ns, graph_launch_ns, h2d_bytes_per_s, copy_latency_ns, host_step_ns,
// host_per_request_ns, host_per_block_ns). Errors name the file, line and key.
StatusOr<GpuSpec> parse_gpu_spec_text(const std::string& file_name, std::string_view text);
StatusOr<GpuSpec> load_gpu_spec_file(const std::string& path);
// The preset file text of `spec` (every field, so it reads back equal); `comment` lines first.
std::string gpu_spec_to_text(const GpuSpec& spec, const std::string& base, const std::string& comment);

}  // namespace kv::sim
