// DeviceOptions: what a replay runs on -- the device (the simulator or the CUDA backend), the
// model and its number formats, the GPU and the cost model's inputs, and how much of the GPU's
// memory the KV pool takes. The "Device and model" rows of the option table write here (and
// --sliding-window, --mamba-cache-mode, --kv-cache-tokens, --gpu-memory-utilization of "KV cache").
//
// Invariants:
//   1. validate() accepts exactly the device settings (inside their rows' ranges) that
//      build_replay() can wire on their own; its error names the option. Rules that also need the scheduler or the
//      tiers are ReplayConfig::validate()'s.
//   2. effective_model() and effective_gpu() are what every lower layer sees: nothing below
//      the replay layer reads `model`, `gpu` or `host_overhead` raw.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "model/catalog/model_shape.h"
#include "model/cuda_graph_dispatcher.h"
#include "model/util/status.h"
#include "sim/fault_injection.h"
#include "sim/hardware_specs.h"
#include "sim/shadow_kv.h"

namespace kv::replay {

enum class DeviceKind { kSim, kGpu };

struct DeviceOptions {
  DeviceOptions();  // the llama3-8b and h100-sxm presets

  DeviceKind kind = DeviceKind::kSim;
  ModelShape model;
  std::string model_config;             // --model-config: the config.json `model` came from
  int tensor_parallel_size = 1;         // --tp: ranks the model is split over (a shard each)
  DType dtype = DType::kBf16;           // --dtype: weights and compute
  std::optional<DType> kv_cache_dtype;  // --kv-cache-dtype; empty: auto (= dtype)
  int sliding_window = 0;               // overrides every sliding-window layer's window (0: the model's)
  // --mamba-cache-mode: how a model's Mamba groups keep states; empty: vLLM's default (align
  // with prefix caching on, none with it off).
  std::optional<MambaCacheMode> mamba_cache_mode;
  sim::GpuSpec gpu;
  std::string gpu_preset_file;  // where `gpu` came from, when not built in
  std::string gpu_search_path;  // directories searched for NAME.gpu (colon-separated)
  std::string profile;          // per-kernel profile CSV for the cost model (empty: roofline)
  std::string gpu_profile_out;  // --device gpu: write a per-kernel profile CSV
  // Host work per step (sim/cost_model.h, invariant 7): "gpu" keeps the GPU preset's terms,
  // "none" zeroes them, "STEP,REQ,TOKEN" sets them in ns.
  std::string host_overhead = "gpu";
  bool async_scheduling = false;  // host work of step i+1 overlaps the GPU work of step i
  sim::VerifyMode verify = sim::VerifyMode::kFast;
  CudaGraphMode cuda_graphs = CudaGraphMode::kFullAndPiecewise;
  // The pool's size when --num-blocks is 0 (replay/pool_sizing.h): tokens, or else a share of
  // GPU memory.
  std::int64_t kv_cache_tokens = 0;
  double gpu_memory_utilization = 0.9;
  // A fault planted in the simulator's KV memory (--inject-fault KIND@STEP[:REQUEST]); needs
  // --device sim and --verify fast or full.
  std::optional<sim::FaultSpec> inject_fault;

  Status validate() const;
  // `model` with --sliding-window, --dtype and --kv-cache-dtype applied, and one rank's shard
  // of it under --tp (validate() checked that it splits).
  ModelShape effective_model() const;
  // `gpu` with --host-overhead applied.
  sim::GpuSpec effective_gpu() const;
};

// The host terms of --host-overhead "none" or "STEP,REQUEST,TOKEN" (ns); "gpu" is not here.
StatusOr<std::array<std::int64_t, 3>> host_overhead_terms(const std::string& text);

}  // namespace kv::replay
