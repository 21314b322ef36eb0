#include "gpu_backend/reference/flat_batch.h"

#include "model/slot.h"

#include <algorithm>
#include <string>

namespace kv::gpuref {

StatusOr<FlatBatch> build_flat_batch(const StepPlan& plan, const BlockTables& tables, int vocab) {
  FlatBatch b;
  b.query_start_loc.push_back(0);
  if (plan.block_size < 1) return Status::error("step " + std::to_string(plan.step) + ": block_size must be >= 1");
  for (const ScheduledRequest& r : plan.requests) {
    const int row = tables.row_of(r.id);
    if (row < 0) {
      return Status::error("step " + std::to_string(plan.step) + ": request '" + r.id + "' has no block table");
    }
    if (r.token_ids.empty()) continue;
    const std::int64_t end = r.num_computed_tokens + static_cast<std::int64_t>(r.token_ids.size());
    const std::int64_t blocks_needed = (end + plan.block_size - 1) / plan.block_size;
    if (r.num_computed_tokens < 0 || blocks_needed > tables.num_blocks(row)) {
      return Status::error("step " + std::to_string(plan.step) + ": request '" + r.id + "' computes positions up to " +
                           std::to_string(end - 1) + " but its block table has " +
                           std::to_string(tables.num_blocks(row)) + " blocks of " +
                           std::to_string(plan.block_size));
    }
    for (std::size_t j = 0; j < r.token_ids.size(); ++j) {
      const std::int64_t pos = r.num_computed_tokens + static_cast<std::int64_t>(j);
      const TokenId t = r.token_ids[j];
      b.token_ids.push_back(static_cast<std::int32_t>((t < 0 ? -t : t) % vocab));
      b.positions.push_back(static_cast<std::int32_t>(pos));
      b.rows.push_back(row);
      if (pos < r.num_prompt_tokens) ++b.prompt_tokens;
    }
    b.query_start_loc.push_back(static_cast<std::int32_t>(b.token_ids.size()));
    b.seq_lens.push_back(static_cast<std::int32_t>(end));
    b.last_token.push_back(static_cast<std::int32_t>(b.token_ids.size()) - 1);
    b.context_tokens += end;
    b.max_seq_len = std::max(b.max_seq_len, static_cast<std::int32_t>(end));
    b.max_query_len = std::max(b.max_query_len, static_cast<std::int32_t>(r.token_ids.size()));
  }
  b.num_real_tokens = b.num_tokens();
  return b;
}

void pad_flat_batch(FlatBatch* batch, std::int64_t num_tokens) {
  const auto n = static_cast<std::size_t>(num_tokens);
  if (n <= batch->token_ids.size()) return;
  batch->token_ids.resize(n, 0);
  batch->positions.resize(n, 0);
  batch->rows.resize(n, -1);
}

std::vector<std::int64_t> host_slot_mapping(const FlatBatch& batch, const BlockTables& tables,
                                            int block_size) {
  std::vector<std::int64_t> slots(batch.token_ids.size(), -1);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const int row = batch.rows[i];
    if (row < 0) continue;
    const std::int32_t pos = batch.positions[i];
    const std::int64_t block = tables.row(row)[static_cast<std::size_t>(block_index(pos, block_size))];
    slots[i] = slot_in_block(block, block_size, pos);
  }
  return slots;
}

}  // namespace kv::gpuref
