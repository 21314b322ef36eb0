// RefModel and RefEngine: the whole synthetic transformer on the CPU, the oracle of the CUDA
// backend. RefModel holds the seeded weights (the values the GPU generates, rounded to the
// model dtype); RefEngine executes StepPlans over a paged KV cache exactly as CudaDevice does:
// block tables from plan deltas (one per KV-cache group), flattening, slot mapping per group,
// and per layer, through its group's table and slots and its tensor of the KV cache
// (kv_layout.h), with its group's attention window:
//   x = rmsnorm(h); qkv = x Wqkv^T; rotary(q, k); cache_write(k, v); a = paged_attention(q);
//   h += a Wo^T;
// (a Mamba layer replaces rotary, cache_write and attention by a = mamba_scan(k, v) over its
// state blocks, after the align moves' copies: gpu_backend/reference/mamba_state.h) x = rmsnorm(h); gu = x Wgu^T; m =
// silu(g) * u; h += m Wdown^T then final = rmsnorm(h). The residual stream h stays fp32; every other stored tensor is
// rounded to the dtype (none for DType::kFp32).
// Not thread-safe; one engine per sequence of plans.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu_backend/reference/block_tables.h"
#include "gpu_backend/reference/flat_batch.h"
#include "gpu_backend/reference/kernels.h"
#include "gpu_backend/reference/kv_layout.h"
#include "gpu_backend/reference/mamba_state.h"
#include "gpu_backend/reference/model_config.h"
#include "model/sched/step_plan.h"
#include "model/util/status.h"

namespace kv::gpuref {

struct RefLayerWeights {
  std::vector<float> attn_norm, qkv, o_proj, mlp_norm, gate_up, down;
};

struct RefModel {
  ModelConfig config;
  DType dtype = DType::kBf16;
  std::vector<float> embedding;  // [vocab, hidden]
  std::vector<RefLayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  std::vector<float> inv_freq;    // [head_dim / 2]

  static RefModel generate(const ModelConfig& config, std::uint64_t seed, DType dtype);
};

// Generates one tensor of `count` values exactly as the GPU weight-init kernel does.
std::vector<float> seeded_tensor(std::uint64_t seed, std::uint32_t tensor_id, std::int64_t count, float scale,
                                 DType dtype);

struct RefEngineOptions {
  ModelConfig model;
  std::uint64_t seed = 1;
  DType dtype = DType::kBf16;
  int block_size = 16;
  std::int64_t num_blocks = 256;
  int max_rows = 16;            // max_num_seqs
  int max_blocks_per_row = 64;  // max_model_len / block_size
  // KV-cache groups over layers "layers.0" ..; empty: one full-attention group (dense). A
  // layout make_kv_layout refuses is a bug of the caller (KV_CHECK).
  std::vector<KvCacheGroupSpec> kv_cache_groups;
};

struct RefStepOutput {
  FlatBatch batch;
  std::vector<std::vector<std::int64_t>> slots;  // per group
  std::vector<float> final_hidden;               // [batch.num_tokens(), hidden], after the final norm
};

class RefEngine {
 public:
  explicit RefEngine(const RefEngineOptions& options);

  StatusOr<RefStepOutput> execute(const StepPlan& plan);

  const RefModel& model() const { return model_; }
  const std::vector<RefKvCache>& caches() const { return caches_; }  // one per KV tensor
  const RefKvCache& layer_cache(int layer) const {
    return caches_[static_cast<std::size_t>(layout_.layer_tensor[static_cast<std::size_t>(layer)])];
  }
  const BlockTables& tables() const { return tables_; }
  const KvLayout& layout() const { return layout_; }
  RefBlockTable dense_table(int group = 0) const;

  // Runs the layers over an already-flattened batch (slots given per group), updating the caches
  // (Mamba layers use the state plan of the last execute()).
  std::vector<float> forward(const FlatBatch& batch, const std::vector<std::vector<std::int64_t>>& slots);
  // The state plan of the last execute() (empty lists for attention groups).
  const MambaStatePlan& state_plan() const { return states_; }
  // A Mamba layer's state in block b (kv_dim fp32 values at the start of its K page).
  const float* layer_state(int layer, BlockId b) const { return layer_cache(layer).k.data() + b * state_page_floats(); }

 private:
  std::int64_t state_page_floats() const {
    return static_cast<std::int64_t>(options_.block_size) * options_.model.kv_dim();
  }
  RefEngineOptions options_;
  RefModel model_;
  KvLayout layout_;
  BlockTables tables_;
  std::vector<RefKvCache> caches_;
  MambaStatePlan states_;
};

}  // namespace kv::gpuref
