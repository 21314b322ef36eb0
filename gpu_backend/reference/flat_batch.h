// FlatBatch: one step's scheduled tokens flattened as vLLM's model runner does (requests in
// plan order, each request's new tokens contiguous), with what the kernels need per token
// (token id, position, block-table row) and per sequence (query start offsets, context
// lengths after the step). Built on the host by both the CPU reference and the CUDA device.
// Invariants:
//   1. query_start_loc has num_seqs + 1 entries, starts at 0 and ends at num_real_tokens.
//   2. Token i of sequence s has position seq_lens[s] - (query_start_loc[s+1] - i).
//   3. Padding tokens (index >= num_real_tokens) have row -1, position 0 and token 0: their
//      slot is -1 (no cache write) and their attention output is zero.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu_backend/reference/block_tables.h"
#include "model/sched/step_plan.h"
#include "model/util/status.h"

namespace kv::gpuref {

struct FlatBatch {
  std::vector<std::int32_t> token_ids;        // per token, already reduced modulo the vocabulary
  std::vector<std::int32_t> positions;        // per token
  std::vector<std::int32_t> rows;             // per token: block-table row, -1 for padding
  std::vector<std::int32_t> query_start_loc;  // per sequence + 1
  std::vector<std::int32_t> seq_lens;         // per sequence: tokens in the cache after the step
  std::vector<std::int32_t> last_token;       // per sequence: index of its last token
  std::int64_t num_real_tokens = 0;
  std::int64_t prompt_tokens = 0;   // positions < num_prompt_tokens among real tokens
  std::int64_t context_tokens = 0;  // sum of seq_lens
  std::int32_t max_seq_len = 0;
  std::int32_t max_query_len = 0;

  std::int64_t num_tokens() const { return static_cast<std::int64_t>(token_ids.size()); }
  std::int64_t num_seqs() const { return static_cast<std::int64_t>(seq_lens.size()); }
  bool uniform_decode() const { return max_query_len == 1; }
};

// Flattens plan (whose block tables were already applied to tables). Checks that every
// position's block exists in its row in every group and, with group lists, that no key a query
// reads (model/attention_window.h) and no position it writes is in the null block.
StatusOr<FlatBatch> build_flat_batch(const StepPlan& plan, const BlockTables& tables, int vocab);

// Pads to num_tokens (>= current size) with padding tokens (invariant 3).
void pad_flat_batch(FlatBatch* batch, std::int64_t num_tokens);

// vLLM's slot mapping of one group on the host: block_table[row][pos / B] * B + pos % B, -1
// for padding and (with group lists) for the null block.
std::vector<std::int64_t> host_slot_mapping(const FlatBatch& batch, const BlockTables& tables, int block_size,
                                            int group = 0);

}  // namespace kv::gpuref
