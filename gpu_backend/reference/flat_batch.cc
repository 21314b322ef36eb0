#include "gpu_backend/reference/flat_batch.h"

#include "model/attention_window.h"
#include "model/slot.h"

#include <algorithm>
#include <string>

namespace kv::gpuref {

namespace {

// A Mamba group: the state r reads (after position num_computed - 1) and the one it writes
// (after its last position) sit in real blocks (gpu_backend/reference/mamba_state.h).
Status check_state_blocks(const ScheduledRequest& r, const BlockTables& tables, int row, int g, int block_tokens,
                          const std::string& who) {
  const auto table = tables.row(row, g);
  const std::int64_t end = r.num_computed_tokens + static_cast<std::int64_t>(r.token_ids.size());
  for (const std::int64_t after : {r.num_computed_tokens, end}) {
    if (after <= 0) continue;
    const std::int64_t i = (after - 1) / block_tokens;
    if (table[static_cast<std::size_t>(i)] == kNullBlock) {
      return Status::error(who + " keeps the state after position " + std::to_string(after - 1) + " in its block " +
                           std::to_string(i) + ", which is the null block");
    }
  }
  return Status();
}

// Every group's table covers the positions r computes, and, with group lists, every key its
// queries read (model/attention_window.h) lies in a real block, never the null block.
Status check_reach(const StepPlan& plan, const ScheduledRequest& r, const BlockTables& tables, int row) {
  const std::int64_t end = r.num_computed_tokens + static_cast<std::int64_t>(r.token_ids.size());
  const std::string who = "step " + std::to_string(plan.step) + ": request '" + r.id + "'";
  for (int g = 0; g < tables.num_groups(); ++g) {
    const std::string in = tables.plain() ? "" : " in group " + std::to_string(g);
    const int block_tokens = tables.group_block_tokens(g, plan.block_size);
    const std::int64_t blocks_needed = (end + block_tokens - 1) / block_tokens;
    if (r.num_computed_tokens < 0 || blocks_needed > tables.num_blocks(row, g)) {
      return Status::error(who + " computes positions up to " + std::to_string(end - 1) + " but its block table" + in +
                           " has " + std::to_string(tables.num_blocks(row, g)) + " blocks of " +
                           std::to_string(block_tokens));
    }
    if (tables.plain()) continue;
    if (tables.is_state_group(g)) {
      if (Status st = check_state_blocks(r, tables, row, g, block_tokens, who + in); !st.ok()) return st;
      continue;
    }
    const auto table = tables.row(row, g);
    const std::int64_t first = attention_begin(tables.window(g), r.num_computed_tokens);
    for (std::int64_t i = block_index(first, plan.block_size); i < blocks_needed; ++i) {
      if (table[static_cast<std::size_t>(i)] == kNullBlock) {
        return Status::error(who + " reads or writes positions from " + std::to_string(first) + in +
                             ", but its block " + std::to_string(i) + " there is the null block");
      }
    }
  }
  return Status();
}

}  // namespace

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
    if (Status st = check_reach(plan, r, tables, row); !st.ok()) return st;
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

std::vector<std::int64_t> host_slot_mapping(const FlatBatch& batch, const BlockTables& tables, int block_size,
                                            int group) {
  std::vector<std::int64_t> slots(batch.token_ids.size(), -1);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const int row = batch.rows[i];
    if (row < 0) continue;
    const std::int32_t pos = batch.positions[i];
    const std::int64_t block = tables.row(row, group)[static_cast<std::size_t>(block_index(pos, block_size))];
    if (block == kNullBlock && !tables.plain()) continue;  // the null block: never written
    slots[i] = slot_in_block(block, block_size, pos);
  }
  return slots;
}

}  // namespace kv::gpuref
