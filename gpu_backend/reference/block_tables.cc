#include "gpu_backend/reference/block_tables.h"

#include <string>

namespace kv::gpuref {

BlockTables::BlockTables(int max_rows, int max_blocks_per_row, std::int64_t num_blocks)
    : max_rows_(max_rows), max_blocks_per_row_(max_blocks_per_row), num_blocks_(num_blocks),
      rows_(static_cast<std::size_t>(max_rows)) {
  for (int r = 0; r < max_rows; ++r) free_rows_.insert(r);
}

int BlockTables::row_of(const RequestId& id) const {
  auto it = row_of_.find(id);
  return it == row_of_.end() ? -1 : it->second;
}

Status BlockTables::apply(const StepPlan& plan, std::vector<BlockTableUpdate>* updates) {
  const std::string where = "step " + std::to_string(plan.step) + ": ";
  // Validate everything first so that a bad plan changes nothing.
  std::set<RequestId> dropped(plan.finished.begin(), plan.finished.end());
  dropped.insert(plan.preempted.begin(), plan.preempted.end());
  std::size_t live_after = 0;
  for (const auto& [id, row] : row_of_) live_after += dropped.count(id) ? 0 : 1;
  for (const ScheduledRequest& r : plan.requests) {
    const bool has_row = row_of_.count(r.id) && !dropped.count(r.id);
    if (!r.is_new && !has_row) {
      return Status::error(where + "request '" + r.id + "' is running but the device has no block table for it");
    }
    if (r.is_new && !has_row) ++live_after;
    const std::size_t base = (r.is_new || !has_row) ? 0 : rows_[static_cast<std::size_t>(row_of_.at(r.id))].size();
    if (base + r.block_ids.size() > static_cast<std::size_t>(max_blocks_per_row_)) {
      return Status::error(where + "request '" + r.id + "' needs " + std::to_string(base + r.block_ids.size()) +
                           " blocks, more than max_blocks_per_row " + std::to_string(max_blocks_per_row_));
    }
    for (BlockId b : r.block_ids) {
      if (b < 0 || b >= num_blocks_) {
        return Status::error(where + "request '" + r.id + "': block id " + std::to_string(b) +
                             " is outside the KV cache [0, " + std::to_string(num_blocks_) + ")");
      }
    }
  }
  if (live_after > static_cast<std::size_t>(max_rows_)) {
    return Status::error(where + std::to_string(live_after) + " live requests, more than the " +
                         std::to_string(max_rows_) + " block-table rows (max_num_seqs)");
  }
  for (const RequestId& id : dropped) {
    auto it = row_of_.find(id);
    if (it == row_of_.end()) continue;  // finished before it ever reached this device, or twice
    rows_[static_cast<std::size_t>(it->second)].clear();
    free_rows_.insert(it->second);
    row_of_.erase(it);
  }
  for (const ScheduledRequest& r : plan.requests) {
    int row = row_of(r.id);
    if (row < 0) {
      row = *free_rows_.begin();
      free_rows_.erase(free_rows_.begin());
      row_of_[r.id] = row;
    }
    BlockTable& entries = rows_[static_cast<std::size_t>(row)];
    if (r.is_new) entries.clear();
    if (updates) {
      for (std::size_t i = 0; i < r.block_ids.size(); ++i) {
        updates->push_back({row, static_cast<std::int32_t>(entries.size() + i), static_cast<std::int32_t>(r.block_ids[i])});
      }
    }
    entries.append(r.block_ids);
  }
  return Status();
}

}  // namespace kv::gpuref
