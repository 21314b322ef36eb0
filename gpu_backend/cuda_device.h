// The CUDA device: kv::Device on a real GPU. It keeps a paged KV cache per layer (K and V,
// [num_blocks, block_size, kv_heads, head_dim], plain cudaMalloc; a hybrid model has one per
// layer of its largest KV-cache group, shared by the groups as vLLM shares them), the block
// tables of live requests on the GPU, one per KV-cache group (updated from each StepPlan's
// deltas), and runs the seeded synthetic
// transformer of gpu_backend/synthetic_model.h over each step's flattened batch: eagerly, or
// as a CUDA graph replay for uniform-decode batches (FULL graphs keyed by the padded batch
// size, as vLLM v1 dispatches them).
// Contract beyond kv::Device:
//   1. Outputs are teacher-forced: execute() returns plan.requests[i].next_token for every
//      request with samples == true; logits are computed (for realistic timing) and unused.
//   2. measured_ns is the CUDA-event time of the step (input upload, block-table update,
//      forward pass). duration_ns is measured_ns unless options.duration_ns is set, in which
//      case it returns the duration (e.g. the simulator's cost-model prediction for --clock
//      virtual).
//   3. A plan the device cannot run (unknown request, block id outside the cache, too many
//      tokens) or a CUDA failure is reported in StepResult::violations; nothing aborts.
// This header includes no CUDA header: the core, the CLI and tests include it freely.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/device.h"
#include "model/kv_cache_groups.h"
#include "model/sched/step_plan.h"
#include "model/util/status.h"

namespace kv::gpu {

struct CudaDeviceOptions {
  std::string model = "tiny";  // preset of model/catalog/model_shape.h: tiny, small, llama3-8b, ...
  // The model's KV-cache groups (ModelShape::kv_cache_groups, layers named "layers.I"); empty:
  // one full-attention group of every layer. With groups, plans must carry group_block_ids and
  // group_windows (docs/hybrid-groups.md); each layer uses its group's block table and window.
  std::vector<KvCacheGroupSpec> kv_cache_groups;
  std::uint64_t seed = 1;      // weights are a pure function of (seed, tensor, index)
  std::string dtype = "bf16";  // bf16 or fp16: weights, activations and the KV cache
  int device_index = 0;
  int block_size = 16;
  std::int64_t num_gpu_blocks = 0;                    // > 0: exactly this many blocks; 0: sized as vLLM from
  double gpu_memory_utilization = 0.9;                // (free memory * this - weights - workspace) / block bytes
  int max_num_seqs = 256;                             // block-table rows (live requests) and logit rows
  std::int64_t max_num_batched_tokens = 8192;         // tokens per step (activation workspace)
  std::int64_t max_model_len = 8192;                  // block-table columns = ceil(this / block_size)
  std::string cudagraph_mode = "FULL_DECODE_ONLY";    // or NONE (FULL*, see graph_policy.h)
  std::vector<std::int64_t> cudagraph_capture_sizes;  // empty: vLLM's default list
  std::int64_t max_cudagraph_capture_size = 0;        // 0: min(2 * max_num_seqs, 512) as vLLM
  bool compute_logits = true;                         // LM head over the last token of each sequence
  // Non-empty: every step runs eagerly and appends one CSV row per kernel
  // (kernel,num_tokens,num_seqs,context_tokens,time_ns: one launch, one layer) to this file.
  std::string profile_csv;
  // Set: StepResult::duration_ns = duration_ns(plan, measured_ns) (the replay's virtual clock).
  std::function<std::int64_t(const StepPlan&, std::int64_t measured_ns)> duration_ns;
  // Set: called after each step with the final (normed) hidden state of every computed token,
  // converted to fp32 (costs a device-to-host copy; for tests and diagnostics).
  std::function<void(const RequestId&, std::int64_t position, const std::vector<float>& hidden)> on_hidden_state;
};

// True when a CUDA device can be used; otherwise false and *why (may be null) says why
// ("no CUDA device: ...").
bool cuda_device_available(std::string* why);

// A clear Status (never a crash) when there is no GPU or driver, the options are bad, or the
// KV cache does not fit (the message names both sizes).
StatusOr<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& options);

}  // namespace kv::gpu
