#include "replay/device_options.h"

#include <vector>

#include "model/util/check.h"
#include "model/util/parse_number.h"
#include "replay/option_error.h"

namespace kv::replay {

namespace {

// One term of --host-overhead: a whole-string integer in [0, 1e9] ns.
Status read_term(const std::string& text, std::int64_t* out) {
  const std::int64_t lo = 0, hi = 1'000'000'000;
  const std::optional<std::int64_t> v = parse_int64(text);
  if (!v) return option_error("host-overhead", "'" + text + "' is not an integer");
  if (*v < lo || *v > hi) {
    return option_error("host-overhead",
                        "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + text);
  }
  *out = *v;
  return {};
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    if (ch == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The rules of the model and its number formats.
Status validate_model(const DeviceOptions& d) {
  if (d.sliding_window > 0 && d.model.num_layers_of(AttentionType::kSlidingWindow) == 0) {
    return option_error("sliding-window", "model " + d.model.name + " has no sliding-window layer");
  }
  if (d.host_overhead != "gpu") {
    if (auto terms = host_overhead_terms(d.host_overhead); !terms.ok()) return terms.status();
  }
  if (auto shard = shard_for_tp(d.model, d.tensor_parallel_size); !shard.ok())
    return option_error("tp", shard.status().message());
  if (!d.model_config.empty() && d.kind == DeviceKind::kGpu) {
    return option_error("model-config",
                        "the CUDA device builds its model from a preset (use --model, or --device sim)");
  }
  if (d.tensor_parallel_size > 1 && d.kind == DeviceKind::kGpu) {
    return option_error("tp", "the CUDA device runs one GPU (use --device sim)");
  }
  if (d.tensor_parallel_size > 1 && d.gpu.interconnect_bytes_per_s <= 0) {
    return option_error("tp", "GPU " + d.gpu.name + " has no interconnect_bytes_per_s for the all-reduces");
  }
  const DType kv_dtype = d.kv_cache_dtype.value_or(d.dtype);
  if (d.kind == DeviceKind::kGpu && (d.dtype != DType::kBf16 || kv_dtype != DType::kBf16)) {
    return option_error(d.dtype != DType::kBf16 ? "dtype" : "kv-cache-dtype",
                        "the CUDA device runs bf16 only (use --device sim)");
  }
  if (d.model.is_hybrid() && kv_dtype == DType::kFp4) {
    return option_error("kv-cache-dtype",
                        "fp4 pages of a hybrid model are not supported (half-byte page sizes); use fp8");
  }
  return {};
}

}  // namespace

DeviceOptions::DeviceOptions() {
  model = find_model_shape("llama3-8b").value();
  gpu = sim::find_gpu_spec("h100-sxm").value();
}

StatusOr<std::array<std::int64_t, 3>> host_overhead_terms(const std::string& text) {
  if (text == "none") return std::array<std::int64_t, 3>{0, 0, 0};
  const std::vector<std::string> parts = split_commas(text);
  std::array<std::int64_t, 3> out{};
  if (parts.size() != 3) {
    return option_error("host-overhead", "must be gpu, none or STEP_NS,REQUEST_NS,TOKEN_NS, got '" + text + "'");
  }
  for (std::size_t i = 0; i < 3; ++i) {
    if (Status s = read_term(parts[i], &out[i]); !s.ok()) return s;
  }
  return out;
}

Status DeviceOptions::validate() const {
  if (Status s = validate_model(*this); !s.ok()) return s;
  if (inject_fault && kind != DeviceKind::kSim) return option_error("inject-fault", "needs --device sim");
  if (inject_fault && verify == sim::VerifyMode::kOff) {
    return option_error("inject-fault", "needs --verify fast or full (with off nothing checks the KV memory)");
  }
  return {};
}

ModelShape DeviceOptions::effective_model() const {
  ModelShape m = with_sliding_window(model, sliding_window);
  m.dtype = dtype;
  m.kv_dtype = kv_cache_dtype.value_or(dtype);
  auto shard = shard_for_tp(m, tensor_parallel_size);
  KV_CHECK(shard.ok(), shard.status().message());
  return *shard;
}

sim::GpuSpec DeviceOptions::effective_gpu() const {
  sim::GpuSpec g = gpu;
  if (host_overhead == "gpu") return g;
  auto terms = host_overhead_terms(host_overhead);
  KV_CHECK(terms.ok(), terms.status().message());
  g.host_step_ns = (*terms)[0];
  g.host_per_request_ns = (*terms)[1];
  g.host_per_token_ns = (*terms)[2];
  g.host_per_block_ns = 0;
  return g;
}

}  // namespace kv::replay
