// ReplayConfig: every setting of one replay, typed, with vLLM's defaults (block size 16,
// max_num_batched_tokens 8192, max_num_seqs 256, chunked prefill on, FCFS,
// gpu_memory_utilization 0.9, sha256_cbor, the classic free order).
//
// Text enters here and nowhere below: each option of `kvsim replay` is one row of
// config_options() (name, help, how to read it, how to print it). The command line, sweep
// axes and tests all set options through set_option(); lower layers receive typed values.
// Adding an option: a field here, its row in replay_config.cc, its check in validate(), and
// the one place that uses it (docs/architecture.md, "Adding an option").
//
// Invariants:
//   1. validate() accepts a config exactly when build_replay() can wire it; its error names
//      the option (`--block-size: must be 1..1024`). Every number it accepts is finite (or the
//      documented inf of --request-rate) and inside its option's bounds.
//   2. describe() lists every row, in table order, so a run folder records the whole setting.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/block_hasher.h"
#include "model/cuda_graph_dispatcher.h"
#include "model/policies/eviction_policy.h"
#include "model/catalog/model_shape.h"
#include "model/sched/scheduler.h"
#include "model/tiers/tier_connector.h"
#include "model/util/status.h"
#include "replay/arrivals.h"
#include "replay/device_options.h"
#include "replay/replayer.h"
#include "replay/run_options.h"
#include "replay/serving_metrics.h"
#include "sim/fault_injection.h"
#include "sim/hardware_specs.h"
#include "sim/shadow_kv.h"
#include "sim/tier_links.h"

namespace kv::replay {

struct ReplayConfig {
  ReplayConfig();  // the llama3-8b and h100-sxm presets

  // Device and model.
  DeviceKind device = DeviceKind::kSim;
  ModelShape model;
  std::string model_config;              // --model-config: the config.json `model` came from
  int tensor_parallel_size = 1;          // --tp: ranks the model is split over (a shard each)
  DType dtype = DType::kBf16;            // --dtype: weights and compute
  std::optional<DType> kv_cache_dtype;   // --kv-cache-dtype; empty: auto (= dtype)
  sim::GpuSpec gpu;
  std::string gpu_preset_file;   // where `gpu` came from, when not built in
  std::string gpu_search_path;   // directories searched for NAME.gpu (colon-separated)
  std::string profile;           // per-kernel profile CSV for the cost model (empty: roofline)
  std::string gpu_profile_out;   // --device gpu: write a per-kernel profile CSV
  // Host work per step (sim/cost_model.h, invariant 7): "gpu" keeps the GPU preset's terms,
  // "none" zeroes them, "STEP,REQ,TOKEN" sets them in ns.
  std::string host_overhead = "gpu";
  bool async_scheduling = false;         // host work of step i+1 overlaps the GPU work of step i
  ReplayOptions::Clock clock = ReplayOptions::Clock::kVirtual;
  sim::VerifyMode verify = sim::VerifyMode::kFast;
  CudaGraphMode cuda_graphs = CudaGraphMode::kFullAndPiecewise;
  // KV cache.
  bool prefix_caching = true;
  int block_size = 16;
  int sliding_window = 0;            // overrides every sliding-window layer's window (0: the model's)
  std::int64_t num_blocks = 0;       // null block included; 0: from kv_cache_tokens or memory
  std::int64_t kv_cache_tokens = 0;
  double gpu_memory_utilization = 0.9;
  FreeOrder free_order = FreeOrder::kClassic;
  EvictionPolicyKind eviction_policy = EvictionPolicyKind::kLru;  // docs/policies.md
  HashAlgo hash = HashAlgo::kSha256Cbor;
  // Scheduler.
  std::int64_t max_num_batched_tokens = 8192;
  int max_num_seqs = 256;
  std::int64_t max_model_len = 131072;
  bool chunked_prefill = true;
  std::int64_t long_prefill_token_threshold = 0;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  int lookahead = 0;
  bool full_sequence_gate = true;
  // Second KV-cache tiers (docs/tiers.md): blocks evicted from GPU memory kept in host memory
  // (and on disk) and loaded back on a prefix hit. 0 bytes: no such tier.
  std::int64_t host_cache_bytes = 0;
  std::int64_t disk_cache_bytes = 0;
  sim::LinkSpec host_link;           // GPU <-> host memory (sim/tier_links.h presets)
  double disk_read_gbps = 7;         // a PCIe 4.0 NVMe SSD's sequential read
  std::int64_t disk_latency_us = 100;
  TierStorePolicy tier_store = TierStorePolicy::kOnEvict;
  sim::TierLoadMode tier_load = sim::TierLoadMode::kOverlap;
  // Load (replay/arrivals.h) and results (replay/serving_metrics.h).
  double request_rate = 0;           // requests/s; 0: the trace's timestamps; infinity: all at once
  double burstiness = 1;             // gamma shape of the gaps (1: Poisson)
  double rate_scale = 1;             // the trace's timestamps divided by this
  std::int64_t max_concurrency = 0;  // 0: no limit
  std::vector<double> metric_percentiles = {99};
  GoodputSlo goodput;
  double overload_ttft_ms = 60000;
  // The run.
  std::uint64_t seed = 0;            // of generated output tokens and arrival gaps
  std::int64_t limit = 0;            // first N requests (0: all)
  std::int64_t max_steps = 0;        // 0: no limit
  bool check_invariants = false;
  bool keep_decision_text = true;
  // KV events out (replay/kv_event_sink.h); either one turns the core's event queue on.
  std::string kv_events_file;        // JSONL, one batch a step
  std::string kv_events_zmq;         // PUB endpoint (vLLM's wire format)
  std::string kv_events_replay;      // ROUTER endpoint answering replay requests
  std::string kv_events_topic;
  std::int64_t kv_events_buffer_steps = 10000;
  std::int64_t kv_events_linger_ms = 0;
  std::int64_t kv_events_startup_ms = 0;
  // A fault planted in the simulator's KV memory (--inject-fault KIND@STEP[:REQUEST]); needs
  // --device sim and --verify fast or full.
  std::optional<sim::FaultSpec> inject_fault;

  bool kv_events_observed = false;   // not an option: a caller's own sink (the Python module)
  bool overwrite_outputs = false;    // not an option: kvsim replay --force (replace --kv-events FILE)

  bool kv_events_enabled() const {
    return kv_events_observed || !kv_events_file.empty() || !kv_events_zmq.empty();
  }
  bool tiers_enabled() const { return host_cache_bytes > 0; }
  // The model's KV-cache groups run as vLLM's hybrid manager: a hybrid model without a
  // second tier. With a tier (a KV connector) vLLM turns its hybrid manager off and every
  // layer keeps full-attention blocks in one group; kvsim does the same.
  bool hybrid_kv_cache() const { return !tiers_enabled() && effective_model().is_hybrid(); }
  Status validate() const;
  // The model as the run uses it: `model` with --sliding-window, --dtype and --kv-cache-dtype
  // applied, and one rank's shard of it under --tp (validate() checked that it splits).
  ModelShape effective_model() const;
  // The GPU as the run uses it: `gpu` with --host-overhead applied.
  sim::GpuSpec effective_gpu() const;
};

// One option of the table: `--name VALUE` (or a switch: `--name` alone sets it to "on").
struct ConfigOption {
  std::string_view name;
  std::string_view group;  // "Device and model", "KV cache", "Scheduler", "Run", "KV events"
  std::string_view help;
  bool is_switch = false;
  std::function<Status(ReplayConfig&, const std::string&)> set;
  std::function<std::string(const ReplayConfig&)> get;
};

const std::vector<ConfigOption>& config_options();

// Sets one option from its text; the error names the option. Unknown names are an error.
Status set_option(ReplayConfig& config, std::string_view name, const std::string& value);

// Every option's current value, in table order (for run folders and reports).
std::vector<std::pair<std::string, std::string>> describe(const ReplayConfig& config);

// A GPU preset by name: built in, or NAME.gpu in the directories of `search_path`
// (colon-separated; the command line passes $KVSIM_GPU_PRESET_PATH) and then ./presets.
StatusOr<sim::GpuSpec> find_gpu(const std::string& name, const std::string& search_path,
                                std::string* found_file);

}  // namespace kv::replay
