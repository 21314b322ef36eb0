#include "sim/hardware_specs.h"

#include <boost/algorithm/string/trim.hpp>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

#include "model/util/parse_number.h"

namespace kv::sim {

namespace {

constexpr std::int64_t kT = 1'000'000'000'000;  // tera
constexpr std::int64_t kG = 1'000'000'000;      // giga

// The figures every preset sets; the rest keep GpuSpec's defaults. FLOPS are dense (without
// structured sparsity), bandwidths as the datasheet gives them.
GpuSpec preset(const char* name, std::int64_t bf16, std::int64_t fp8, std::int64_t fp4, std::int64_t hbm,
               std::int64_t memory, int sms, int clock_mhz) {
  GpuSpec g;
  g.name = name;
  g.peak_flops = bf16;
  g.peak_fp8_flops = fp8;
  g.peak_fp4_flops = fp4;
  g.hbm_bytes_per_s = hbm;
  g.memory_bytes = memory;
  g.sm_count = sms;
  g.clock_mhz = clock_mhz;
  return g;
}

// Between GPUs, per direction: the achieved figure where a public measurement gives one (l40s,
// h100-sxm: cited at the preset), else half the datasheet's bidirectional figure.
GpuSpec linked(GpuSpec g, std::int64_t bytes_per_s, std::int64_t latency_ns) {
  g.interconnect_bytes_per_s = bytes_per_s;
  g.interconnect_latency_ns = latency_ns;
  return g;
}

// The achieved fractions of a GPU's kernels, where a public measurement gives them (cited at the
// preset); presets without one keep GpuSpec's global pair, an assumption (docs/fidelity.md).
// A field left out (0) means the global terms, or no fixed time.
struct MeasuredKernels {
  int gemm_compute_pct = 0, gemm_bandwidth_pct = 0;          // 16-bit GEMMs
  int gemm_fp8_compute_pct = 0, gemm_fp8_bandwidth_pct = 0;  // GEMMs with fp8 weights
  std::int64_t gemm_latency_ns = 0;                          // fixed time per GEMM launch
  int attention_compute_pct = 0;                             // prefill attention
  int attention_bandwidth_pct = 0;                           // paged decode attention
  std::int64_t attention_latency_ns = 0;                     // fixed time per attention launch
  int elementwise_bandwidth_pct = 0;
  std::int64_t elementwise_latency_ns = 0;
};

void measured_kernels(GpuSpec& g, const MeasuredKernels& m) {
  g.gemm_compute_efficiency_pct = m.gemm_compute_pct;
  g.gemm_bandwidth_efficiency_pct = m.gemm_bandwidth_pct;
  g.gemm_fp8_compute_efficiency_pct = m.gemm_fp8_compute_pct;
  g.gemm_fp8_bandwidth_efficiency_pct = m.gemm_fp8_bandwidth_pct;
  g.attention_bandwidth_efficiency_pct = m.attention_bandwidth_pct;
  g.attention_latency_ns = m.attention_latency_ns;
  g.attention_compute_efficiency_pct = m.attention_compute_pct;
  g.gemm_latency_ns = m.gemm_latency_ns;
  g.elementwise_bandwidth_efficiency_pct = m.elementwise_bandwidth_pct;
  g.elementwise_latency_ns = m.elementwise_latency_ns;
}

constexpr std::int64_t kNvlinkLatencyNs = 2000;  // per ring step (assumed; see docs/fidelity.md)
constexpr std::int64_t kPcieLatencyNs = 6000;

std::vector<GpuSpec> make_presets() {
  std::vector<GpuSpec> p;
  // NVIDIA A100 Tensor Core GPU datasheet (SXM4): BF16 312 TFLOPS dense, no FP8/FP4; 40GB HBM2
  // at 1,555 GB/s, 80GB HBM2e at 2,039 GB/s; NVLink 3 600 GB/s; 108 SMs, boost 1410 MHz.
  p.push_back(
      linked(preset("a100-40gb", 312 * kT, 0, 0, 1555 * kG, 40LL << 30, 108, 1410), 300 * kG, kNvlinkLatencyNs));
  p.push_back(
      linked(preset("a100-80gb", 312 * kT, 0, 0, 2039 * kG, 80LL << 30, 108, 1410), 300 * kG, kNvlinkLatencyNs));
  // NVIDIA L40S datasheet: BF16 362.05 TFLOPS dense (733 sparse), FP8 733 TFLOPS dense (1,466
  // sparse), no FP4; 48GB GDDR6 at 864 GB/s (46,068 MiB visible with ECC on, as nvidia-smi
  // reports); PCIe Gen4 x16 64 GB/s both ways, no NVLink; 142 SMs, boost 2520 MHz.
  // Between GPUs: 26 GB/s per direction, the achieved GPU-to-GPU copy over PCIe Gen4 x16 that
  // nvbandwidth measured (device_to_device_memcpy_read_ce, 26.34 GB/s between A6000s on one
  // switch, the same link; github.com/NVIDIA/nvbandwidth issue 50), not the link's 32 GB/s.
  GpuSpec l40s = linked(preset("l40s", 362'050'000'000'000, 733 * kT, 0, 864 * kG, 46068LL << 20, 142, 2520), 26 * kG,
                        kPcieLatencyNs);
  l40s.h2d_bytes_per_s = 20 * kG;  // PCIe Gen4
  // Kernel efficiencies: achieved fractions measured on an L40S, from the per-kernel latencies
  // NVIDIA's aiconfigurator collected under vLLM 0.24.0 (github.com/ai-dynamo/aiconfigurator at
  // 095f58a5, systems/data/l40s/{gemm,attention}/vllm/0.24.0), over shapes far larger than the
  // 96 MB L2. 16-bit GEMMs (cuBLAS): 68-85% of 864 GB/s with 1-256 rows, 70-75% of the bf16 peak
  // with 512-4096 rows. FP8 GEMMs (vLLM's CUTLASS scaled_mm): 60-70% of the bandwidth, 52-59% of
  // the fp8 peak. Decode attention (FlashAttention-2, bf16 KV): 70-83% of the bandwidth, and
  // 13.3 us for one sequence of 1,024 keys, about 7 us more than those bytes take.
  measured_kernels(l40s, {.gemm_compute_pct = 70,
                          .gemm_bandwidth_pct = 75,
                          .gemm_fp8_compute_pct = 55,
                          .gemm_fp8_bandwidth_pct = 65,
                          .attention_bandwidth_pct = 75,
                          .attention_latency_ns = 7000});
  p.push_back(l40s);
  // NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe: BF16 756 TFLOPS dense (1,513 sparse),
  // FP8 1,513 dense (3,026 sparse); 80GB HBM2e at 2 TB/s; PCIe Gen5 x16 128 GB/s both ways
  // (the optional NVLink bridge is not modelled); 114 SMs, boost 1755 MHz.
  p.push_back(
      linked(preset("h100-pcie", 756 * kT, 1513 * kT, 0, 2000 * kG, 80LL << 30, 114, 1755), 64 * kG, kPcieLatencyNs));
  // Same datasheet, H100 SXM: BF16 989 TFLOPS dense (1,979 sparse), FP8 1,979 dense (3,958
  // sparse); 80GB HBM3 at 3.35 TB/s; NVLink 4 900 GB/s; 132 SMs, boost 1980 MHz.
  // Between GPUs: 380 GB/s per direction, the achieved unidirectional peer copy that CUDA's
  // p2pBandwidthLatencyTest measured on an HGX H100 SXM (github.com/NVIDIA/nccl issue 1264,
  // "Only ~783GByte/s out of theoretical 900GB/s HGX H100 SXM Nvlink4"), not the link's 450.
  // Kernel efficiencies: measured on an H100 SXM (aiconfigurator as for l40s,
  // systems/data/h100_sxm, "NVIDIA H100 80GB HBM3"). 16-bit GEMMs: 77-91% of 3.35 TB/s with 1-128
  // rows (vLLM PR 49363's H100 table: 82-92%), 78-88% of the bf16 peak with 512-8192 rows. FP8
  // GEMMs (CUTLASS): 75-87% of the bandwidth on shapes of 268 MB and more, 52-63% on a 50 MB one;
  // 56-79% of the fp8 peak. Decode attention (FlashAttention-3, bf16 KV): 87-93% of the bandwidth
  // once the cache read is large, and 13.6 us for one sequence of 1,024 keys, about 12 us more
  // than those bytes take.
  constexpr MeasuredKernels kH100Kernels{.gemm_compute_pct = 80,
                                         .gemm_bandwidth_pct = 85,
                                         .gemm_fp8_compute_pct = 65,
                                         .gemm_fp8_bandwidth_pct = 75,
                                         .attention_bandwidth_pct = 90,
                                         .attention_latency_ns = 12000};
  GpuSpec h100 =
      linked(preset("h100-sxm", 989 * kT, 1979 * kT, 0, 3350 * kG, 80LL << 30, 132, 1980), 380 * kG, kNvlinkLatencyNs);
  measured_kernels(h100, kH100Kernels);
  p.push_back(h100);
  // NVIDIA H200 Tensor Core GPU datasheet (SXM): the H100 SXM's compute; 141GB HBM3e at 4.8 TB/s.
  // Measured on an H200 by scripts/gpu-kernel-survey (reports/gpu/2026-11-27-h200/: raw outputs
  // and survey.md, run 2), fitted by kvsim calibrate. Kernels of Llama-3-8B's shapes with the
  // libraries vLLM calls (PyTorch 2.11, CUDA 13.0: cuBLAS, cuBLASLt fp8 with per-tensor scales,
  // cuDNN and FlashAttention-2 attention, torch.compile's elementwise kernels). Median errors of
  // the fit: GEMMs 6% (fp8 6%), attention 3%, elementwise 30%; whole decode steps of 1-256
  // sequences and prefill steps of 128-8,192 tokens, held out of the fit, 5% (max 11%). Host, on
  // that machine's CPU: a PyTorch eager op costs 9.5 us (add_) to 20.1 us (F.linear), 13.7 us
  // weighted as a Llama layer's 4 GEMMs and 6 other ops; one CUDA-graph replay 5.0 us; pinned
  // host-to-device copies 55 GB/s.
  GpuSpec h200 =
      linked(preset("h200", 989 * kT, 1979 * kT, 0, 4800 * kG, 141 * kG, 132, 1980), 450 * kG, kNvlinkLatencyNs);
  measured_kernels(h200, {.gemm_compute_pct = 75,
                          .gemm_bandwidth_pct = 87,
                          .gemm_fp8_compute_pct = 71,
                          .gemm_fp8_bandwidth_pct = 90,
                          .gemm_latency_ns = 4904,
                          .attention_compute_pct = 53,
                          .attention_bandwidth_pct = 93,
                          .attention_latency_ns = 9204,
                          .elementwise_bandwidth_pct = 42,
                          .elementwise_latency_ns = 2607});
  h200.launch_overhead_ns = 13700;
  h200.graph_launch_ns = 5000;
  h200.h2d_bytes_per_s = 55 * kG;
  p.push_back(h200);
  // NVIDIA HGX B200 datasheet, per GPU: FP4 9 PFLOPS dense (18 sparse), FP8 4.5 PFLOPS dense
  // (9 sparse), BF16 2.25 PFLOPS dense (4.5 sparse); 180GB HBM3e at 8 TB/s; NVLink 5 1.8 TB/s;
  // 148 SMs, about 1965 MHz boost (not in the datasheet).
  p.push_back(linked(preset("b200", 2250 * kT, 4500 * kT, 9000 * kT, 8000 * kG, 180LL << 30, 148, 1965), 900 * kG,
                     kNvlinkLatencyNs));
  return p;
}

}  // namespace

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = make_presets();
  return presets;
}

namespace {
template <typename Spec>
StatusOr<Spec> find_by_name(const std::vector<Spec>& presets, std::string_view name, const char* what) {
  std::string valid;
  for (const Spec& s : presets) {
    if (s.name == name) return s;
    valid += valid.empty() ? "" : ", ";
    valid += s.name;
  }
  return Status::error(std::string("unknown ") + what + " '" + std::string(name) + "' (valid: " + valid + ")");
}
}  // namespace

StatusOr<GpuSpec> find_gpu_spec(std::string_view name) { return find_by_name(gpu_presets(), name, "gpu"); }

}  // namespace kv::sim

// GPU preset files and registered presets.
namespace kv::sim {

namespace {

struct GpuField {
  const char* key;
  std::int64_t GpuSpec::*wide;
  int GpuSpec::*narrow;
  std::int64_t max;  // the largest value a preset file may give (far above any real GPU)
  const char* unit;
  bool per_class = false;  // optional: written only when not 0
};

constexpr std::int64_t kMaxFlops = 1'000'000'000'000'000'000;  // 1 EFLOP/s
constexpr std::int64_t kMaxBytesPerS = 1'000'000'000'000'000;  // 1 PB/s
constexpr std::int64_t kMaxMemory = std::int64_t{1} << 50;     // 1 PiB
constexpr std::int64_t kMaxNs = 1'000'000'000'000;             // 1000 s, as profiles' time_ns

const std::vector<GpuField>& gpu_fields() {
  static const std::vector<GpuField> fields = {
      {"peak_flops", &GpuSpec::peak_flops, nullptr, kMaxFlops, "FLOP/s"},
      {"peak_fp8_flops", &GpuSpec::peak_fp8_flops, nullptr, kMaxFlops, "FLOP/s"},
      {"peak_fp4_flops", &GpuSpec::peak_fp4_flops, nullptr, kMaxFlops, "FLOP/s"},
      {"hbm_bytes_per_s", &GpuSpec::hbm_bytes_per_s, nullptr, kMaxBytesPerS, "bytes/s"},
      {"memory_bytes", &GpuSpec::memory_bytes, nullptr, kMaxMemory, "bytes"},
      {"sm_count", nullptr, &GpuSpec::sm_count, 1'000'000, "SMs"},
      {"clock_mhz", nullptr, &GpuSpec::clock_mhz, 100'000, "MHz"},
      {"compute_efficiency_pct", nullptr, &GpuSpec::compute_efficiency_pct, 100, "percent"},
      {"bandwidth_efficiency_pct", nullptr, &GpuSpec::bandwidth_efficiency_pct, 100, "percent"},
      {"launch_overhead_ns", &GpuSpec::launch_overhead_ns, nullptr, kMaxNs, "ns"},
      {"graph_launch_ns", &GpuSpec::graph_launch_ns, nullptr, kMaxNs, "ns"},
      {"h2d_bytes_per_s", &GpuSpec::h2d_bytes_per_s, nullptr, kMaxBytesPerS, "bytes/s"},
      {"copy_latency_ns", &GpuSpec::copy_latency_ns, nullptr, kMaxNs, "ns"},
      {"host_step_ns", &GpuSpec::host_step_ns, nullptr, kMaxNs, "ns"},
      {"host_per_request_ns", &GpuSpec::host_per_request_ns, nullptr, kMaxNs, "ns"},
      {"host_per_block_ns", &GpuSpec::host_per_block_ns, nullptr, kMaxNs, "ns"},
      {"host_per_token_ns", &GpuSpec::host_per_token_ns, nullptr, kMaxNs, "ns"},
      {"interconnect_bytes_per_s", &GpuSpec::interconnect_bytes_per_s, nullptr, kMaxBytesPerS, "bytes/s"},
      {"interconnect_latency_ns", &GpuSpec::interconnect_latency_ns, nullptr, kMaxNs, "ns"},
      {"gemm_compute_efficiency_pct", nullptr, &GpuSpec::gemm_compute_efficiency_pct, 100, "percent", true},
      {"gemm_bandwidth_efficiency_pct", nullptr, &GpuSpec::gemm_bandwidth_efficiency_pct, 100, "percent", true},
      {"gemm_latency_ns", &GpuSpec::gemm_latency_ns, nullptr, kMaxNs, "ns", true},
      {"gemm_fp8_compute_efficiency_pct", nullptr, &GpuSpec::gemm_fp8_compute_efficiency_pct, 100, "percent", true},
      {"gemm_fp8_bandwidth_efficiency_pct", nullptr, &GpuSpec::gemm_fp8_bandwidth_efficiency_pct, 100, "percent", true},
      {"attention_compute_efficiency_pct", nullptr, &GpuSpec::attention_compute_efficiency_pct, 100, "percent", true},
      {"attention_bandwidth_efficiency_pct", nullptr, &GpuSpec::attention_bandwidth_efficiency_pct, 100, "percent",
       true},
      {"attention_latency_ns", &GpuSpec::attention_latency_ns, nullptr, kMaxNs, "ns", true},
      {"elementwise_compute_efficiency_pct", nullptr, &GpuSpec::elementwise_compute_efficiency_pct, 100, "percent",
       true},
      {"elementwise_bandwidth_efficiency_pct", nullptr, &GpuSpec::elementwise_bandwidth_efficiency_pct, 100, "percent",
       true},
      {"elementwise_latency_ns", &GpuSpec::elementwise_latency_ns, nullptr, kMaxNs, "ns", true},
  };
  return fields;
}

const GpuField* find_field(const std::string& key) {
  for (const GpuField& f : gpu_fields()) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

// One `key = value` of a field: a whole number from 0 to the field's bound.
Status read_field(const std::string& where, const GpuField& f, const std::string& value, std::int64_t* out) {
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  const std::optional<std::uint64_t> v = parse_uint64(value);
  if (!v.has_value() && !digits)
    return Status::error(where + f.key + ": '" + value + "' is not a non-negative integer");
  if (!v.has_value() || *v > static_cast<std::uint64_t>(f.max)) {  // digits past 2^64 too
    return Status::error(where + f.key + ": " + value + " is above the bound " + std::to_string(f.max) + " " + f.unit);
  }
  *out = static_cast<std::int64_t>(*v);
  return {};
}

}  // namespace

StatusOr<GpuSpec> parse_gpu_spec_text(const std::string& file_name, std::string_view text) {
  std::vector<std::pair<std::string, std::int64_t>> values;  // within their fields' bounds
  std::string name, base = "h100-sxm";
  int line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    const std::string where = file_name + ":" + std::to_string(line_no) + ": ";
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = boost::algorithm::trim_copy(line);
    if (line.empty()) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return Status::error(where + "expected 'key = value', got '" + std::string(line) + "'");
    const std::string key(boost::algorithm::trim_copy(line.substr(0, eq)));
    const std::string value(boost::algorithm::trim_copy(line.substr(eq + 1)));
    if (key == "name") {
      name = value;
      continue;
    }
    if (key == "base") {
      base = value;
      continue;
    }
    const GpuField* field = find_field(key);
    if (field == nullptr) return Status::error(where + "unknown key '" + key + "'");
    std::int64_t v = 0;
    if (Status s = read_field(where, *field, value, &v); !s.ok()) return s;
    values.emplace_back(key, v);
  }
  if (name.empty()) return Status::error(file_name + ": no 'name = ...' line");
  for (const GpuSpec& g : gpu_presets()) {
    if (g.name == name) return Status::error(file_name + ": name '" + name + "' is a built-in preset; choose another");
  }
  auto spec = find_by_name(gpu_presets(), base, "base gpu");
  if (!spec.ok()) return spec.status().with_context(file_name + ": ");
  GpuSpec g = *spec;
  g.name = name;
  for (const auto& [key, v] : values) {
    const GpuField& f = *find_field(key);
    if (f.wide != nullptr)
      g.*f.wide = v;
    else
      g.*f.narrow = static_cast<int>(v);
  }
  if (g.peak_flops <= 0 || g.hbm_bytes_per_s <= 0 || g.memory_bytes <= 0 || g.clock_mhz <= 0 ||
      g.h2d_bytes_per_s <= 0) {
    return Status::error(file_name +
                         ": peak_flops, hbm_bytes_per_s, memory_bytes, clock_mhz and h2d_bytes_per_s must be > 0");
  }
  if (g.compute_efficiency_pct < 1 || g.compute_efficiency_pct > 100 || g.bandwidth_efficiency_pct < 1 ||
      g.bandwidth_efficiency_pct > 100) {
    return Status::error(file_name + ": efficiencies must be in 1..100 percent");
  }
  return g;
}

StatusOr<GpuSpec> load_gpu_spec_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::error("cannot open GPU preset file " + path);
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return parse_gpu_spec_text(path, text);
}

std::string gpu_spec_to_text(const GpuSpec& spec, const std::string& base, const std::string& comment) {
  std::string out;
  std::size_t start = 0;
  while (start < comment.size()) {
    const std::size_t nl = comment.find('\n', start);
    const std::size_t end = nl == std::string::npos ? comment.size() : nl;
    out += "# " + comment.substr(start, end - start) + "\n";
    start = end + 1;
  }
  out += "name = " + spec.name + "\nbase = " + base + "\n";
  const StatusOr<GpuSpec> base_spec = find_gpu_spec(base);
  for (const GpuField& f : gpu_fields()) {
    const std::int64_t v = f.wide != nullptr ? spec.*f.wide : spec.*f.narrow;
    // A per-class 0 is left out (the global terms) unless the base preset's value is not 0:
    // then reading the file back would take the base's.
    const std::int64_t inherited = !base_spec.ok()     ? 0
                                   : f.wide != nullptr ? (*base_spec).*f.wide
                                                       : (*base_spec).*f.narrow;
    if (f.per_class && v == 0 && inherited == 0) continue;
    out += std::string(f.key) + " = " + std::to_string(v) + "\n";
  }
  return out;
}

}  // namespace kv::sim
