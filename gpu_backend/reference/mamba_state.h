// MambaStatePlan: which state block each sequence of a step reads and writes in every Mamba
// group, and the state copies an align-mode move needs before the step; plus the synthetic
// recurrent layer those states feed (the CPU oracle of gpu_backend/mamba_state.cu). Shared
// by the CUDA device and the CPU reference, so both place states identically. The rules are
// the simulated device's (sim/shadow_kv.h invariant 8) and vLLM's runner's
// (vllm/v1/worker/mamba_utils.py, preprocess_mamba):
//   1. A sequence with n computed tokens and end = n + scheduled tokens reads the state after
//      position n - 1 from its table's entry (n - 1) / B (none when n == 0: a zero state) and
//      writes the state after position end - 1 into entry (end - 1) / B, B the group's block
//      size (mode none: one block of max_model_len tokens, so both are entry 0).
//   2. Align mode: when the two entries differ the manager has moved the state; the old
//      state is copied into the new block before the step (vLLM's preprocess_mamba) and the
//      layer then reads and writes the new block in place (read == write). Modes none and
//      all read the old entry and write the new one directly.
//   3. Sequences are those of build_flat_batch (requests with tokens, in plan order).
// The layer, per Mamba layer and sequence, for each state element j in [0, kv_dim), with the
// token's K and V projections (qkv row, no rotary) k_t and v_t:
//   s_j <- a * s_j + (1 - a) * v_t[j],  a = sigmoid(k_t[j]);   out_t[h * head_dim + d] = s_{kvh(h) * head_dim + d}
// with kvh(h) = h / (num_heads / kv_heads) (GQA's mapping); the state stays fp32, out is
// rounded to the dtype; padding rows get zeros.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu_backend/reference/block_tables.h"
#include "gpu_backend/reference/kv_layout.h"
#include "gpu_backend/reference/numerics.h"
#include "model/sched/step_plan.h"
#include "model/util/status.h"

namespace kv::gpuref {

struct StateStep {
  std::int32_t read_block = -1;  // -1: start from a zero state
  std::int32_t write_block = -1;
};

struct StateCopy {
  std::int32_t src = 0;
  std::int32_t dst = 0;
};

struct MambaStatePlan {
  std::vector<std::vector<StateStep>> steps;   // [group][sequence]; empty for attention groups
  std::vector<std::vector<StateCopy>> copies;  // [group]: align moves, run before the step
};

// After tables.apply(plan) (and build_flat_batch, which checks that the blocks are real).
MambaStatePlan plan_mamba_states(const StepPlan& plan, const BlockTables& tables, const KvLayout& layout);

// Copies state_floats values from page src to page dst of `states` (page_floats per block).
void copy_states(const std::vector<StateCopy>& copies, std::int64_t page_floats, int state_floats, float* states);

// The recurrence above over one layer. qkv is [num_tokens, qkv_stride] (K at k_offset, V at
// k_offset + kv_heads * head_dim); states holds page_floats per block, a state at the start of
// its block's page; out is [num_tokens, num_heads * head_dim].
struct MambaScanArgs {
  const float* qkv = nullptr;
  std::int64_t qkv_stride = 0;
  std::int64_t k_offset = 0;
  const std::vector<std::int32_t>* query_start_loc = nullptr;
  const std::vector<StateStep>* steps = nullptr;  // one per sequence
  std::int64_t num_tokens = 0;                    // rows of out (padding included)
  int num_heads = 1;
  int kv_heads = 1;
  int head_dim = 8;
  std::int64_t page_floats = 0;
  DType round = DType::kFp32;
};
void mamba_scan(const MambaScanArgs& a, float* states, float* out);

}  // namespace kv::gpuref
