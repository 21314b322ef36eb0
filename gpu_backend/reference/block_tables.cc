#include "gpu_backend/reference/block_tables.h"

#include <algorithm>
#include <string>
#include <utility>

#include "model/util/check.h"

namespace kv::gpuref {

BlockTables::BlockTables(int max_rows, int max_blocks_per_row, std::int64_t num_blocks,
                         std::vector<std::int64_t> group_windows, std::vector<int> group_state_block_sizes)
    : max_rows_(max_rows),
      max_blocks_per_row_(max_blocks_per_row),
      num_blocks_(num_blocks),
      windows_(std::move(group_windows)),
      state_block_sizes_(group_state_block_sizes.empty() ? std::vector<int>(windows_.size(), 0)
                                                         : std::move(group_state_block_sizes)),
      rows_(static_cast<std::size_t>(max_rows), BlockTable(static_cast<int>(windows_.size()))) {
  KV_CHECK(state_block_sizes_.size() == windows_.size(),
           state_block_sizes_.size() << " state block sizes for " << windows_.size() << " KV-cache groups");
  for (int r = 0; r < max_rows; ++r) free_rows_.insert(r);
}

int BlockTables::row_of(const RequestId& id) const {
  auto it = row_of_.find(id);
  return it == row_of_.end() ? -1 : it->second;
}

std::vector<std::span<const BlockId>> BlockTables::lists(const ScheduledRequest& r) const {
  if (plain()) return {std::span<const BlockId>(r.block_ids)};
  return {r.group_block_ids.begin(), r.group_block_ids.end()};
}

Status BlockTables::check_lists(const ScheduledRequest& r, int row, const std::string& where) const {
  const std::string who = where + "request '" + r.id + "'";
  if (!plain() && (r.group_block_ids.size() != windows_.size() || !r.block_ids.empty())) {
    return Status::error(who + " carries " + std::to_string(r.group_block_ids.size()) + " group block lists and " +
                         std::to_string(r.block_ids.size()) + " plain block ids for " +
                         std::to_string(windows_.size()) + " KV-cache groups");
  }
  if (plain() && !r.group_block_ids.empty()) {
    return Status::error(who + " carries group block lists, but the device runs one full-attention group");
  }
  const auto ids = lists(r);
  for (int g = 0; g < num_groups(); ++g) {
    const auto& list = ids[static_cast<std::size_t>(g)];
    const std::string in = plain() ? "" : " in group " + std::to_string(g);
    const std::size_t base = row < 0 ? 0 : rows_[static_cast<std::size_t>(row)].size(g);
    if (base + list.size() > static_cast<std::size_t>(max_blocks_per_row_)) {
      return Status::error(who + " needs " + std::to_string(base + list.size()) + " blocks" + in +
                           ", more than max_blocks_per_row " + std::to_string(max_blocks_per_row_));
    }
    for (BlockId b : list) {
      if (b < 0 || b >= num_blocks_) {
        return Status::error(who + ": block id " + std::to_string(b) + in + " is outside the KV cache [0, " +
                             std::to_string(num_blocks_) + ")");
      }
      if (b == kNullBlock && !plain() && window(g) == 0 && !is_state_group(g)) {
        return Status::error(who + ": the null block (0) in full-attention group " + std::to_string(g));
      }
    }
  }
  return Status();
}

Status BlockTables::apply(const StepPlan& plan, std::vector<BlockTableUpdate>* updates) {
  const std::string where = "step " + std::to_string(plan.step) + ": ";
  if (!plain() && plan.group_windows != windows_) {
    return Status::error(where + "the plan's KV-cache groups (" + std::to_string(plan.group_windows.size()) +
                         " windows) are not the device's (" + std::to_string(windows_.size()) + ")");
  }
  const bool plan_states_match =
      plan.group_state_block_sizes.empty()
          ? std::none_of(state_block_sizes_.begin(), state_block_sizes_.end(), [](int b) { return b > 0; })
          : plan.group_state_block_sizes == state_block_sizes_;
  if (!plain() && !plan_states_match) {
    return Status::error(where + "the plan's Mamba groups (" + std::to_string(plan.group_state_block_sizes.size()) +
                         " state block sizes) are not the device's (" + std::to_string(state_block_sizes_.size()) +
                         ")");
  }
  if (plain() && !plan.group_windows.empty()) {
    return Status::error(where + "the plan has " + std::to_string(plan.group_windows.size()) +
                         " KV-cache groups; the device runs one full-attention group");
  }
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
    if (Status st = check_lists(r, r.is_new || !has_row ? -1 : row_of_.at(r.id), where); !st.ok()) return st;
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
    const auto ids = lists(r);
    for (int g = 0; g < num_groups(); ++g) {
      const auto& list = ids[static_cast<std::size_t>(g)];
      for (std::size_t i = 0; updates && i < list.size(); ++i) {
        updates->push_back(
            {row, static_cast<std::int32_t>(entries.size(g) + i), static_cast<std::int32_t>(list[i]), g});
      }
      entries.append(list, g);
    }
  }
  return Status();
}

}  // namespace kv::gpuref
