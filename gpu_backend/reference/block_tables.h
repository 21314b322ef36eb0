// BlockTables: the device-side view of every live request's block tables (model/block_table.h, one
// list per KV-cache group), kept up to date from StepPlan deltas exactly as vLLM's
// InputBatch/MultiGroupBlockTable does (add_row for a new or resumed request, append_row for a
// running one, drop on finished/preempted). Plain C++: the CPU reference uses it directly and the
// CUDA device mirrors it on the GPU by applying the (group, row, column, block) updates that
// apply() returns. One group of full attention reads StepPlan::block_ids; several groups (or a
// windowed one) read group_block_ids, and the plan's group_windows must be the tables' windows.
// Invariants:
//   1. A request id owns at most one row, the same in every group; rows are reused
//      lowest-first (deterministic).
//   2. A row's entries [0, num_blocks(row, g)) are the request's blocks of group g in logical
//      order.
//   3. Every stored block id is in [0, num_blocks) and a row never exceeds max_blocks_per_row.
//      With group lists, block 0 is the null block and only a windowed or a Mamba group may
//      hold it (a Mamba group's table holds real blocks only where a state is kept).
// Bad input (unknown running request, too many rows or blocks, block id out of range, lists
// that do not match the groups) is a Status and leaves the tables as they were before the plan.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "model/block_table.h"
#include "model/sched/step_plan.h"
#include "model/util/status.h"

namespace kv::gpuref {

struct BlockTableUpdate {
  std::int32_t row = 0;
  std::int32_t column = 0;
  std::int32_t block = 0;
  std::int32_t group = 0;
};

class BlockTables {
 public:
  // group_windows: per KV-cache group, StepPlan::group_windows' convention; {0} is one group of
  // full attention (plans carry block_ids). group_state_block_sizes: StepPlan's convention
  // (empty: no Mamba group; else one entry per group, > 0 for a Mamba group).
  BlockTables(int max_rows, int max_blocks_per_row, std::int64_t num_blocks,
              std::vector<std::int64_t> group_windows = {0}, std::vector<int> group_state_block_sizes = {});

  // Drops finished and preempted requests, then adds/extends the scheduled ones. Appends the
  // entries that changed to *updates (may be null).
  Status apply(const StepPlan& plan, std::vector<BlockTableUpdate>* updates);

  int row_of(const RequestId& id) const;  // -1 when the request has no row
  int num_blocks(int row, int g = 0) const { return static_cast<int>(rows_[static_cast<std::size_t>(row)].size(g)); }
  std::span<const BlockId> row(int row, int g = 0) const { return rows_[static_cast<std::size_t>(row)].group(g); }
  int num_groups() const { return static_cast<int>(windows_.size()); }
  std::int64_t window(int g) const { return windows_[static_cast<std::size_t>(g)]; }
  // The tokens one block of group g covers: block_size for attention, the Mamba group's own.
  int group_block_tokens(int g, int block_size) const {
    return is_state_group(g) ? state_block_sizes_[static_cast<std::size_t>(g)] : block_size;
  }
  bool is_state_group(int g) const { return state_block_sizes_[static_cast<std::size_t>(g)] > 0; }
  // One full-attention group: plans carry block_ids, and block 0 is an ordinary block.
  bool plain() const { return windows_.size() == 1 && windows_[0] == 0 && !is_state_group(0); }
  int max_rows() const { return max_rows_; }
  int max_blocks_per_row() const { return max_blocks_per_row_; }
  std::size_t num_live() const { return row_of_.size(); }

 private:
  int max_rows_;
  int max_blocks_per_row_;
  std::int64_t num_blocks_;
  std::vector<std::int64_t> windows_;
  std::vector<int> state_block_sizes_;  // per group, StepPlan::group_state_block_sizes' convention
  // r's block lists of this plan, one per group (check_lists validates them first).
  std::vector<std::span<const BlockId>> lists(const ScheduledRequest& r) const;
  // row: the row r extends (-1 when r starts a fresh table).
  Status check_lists(const ScheduledRequest& r, int row, const std::string& where) const;
  std::map<RequestId, int> row_of_;  // live requests only
  std::set<int> free_rows_;          // every row not in row_of_
  std::vector<BlockTable> rows_;     // empty for a free row
};

}  // namespace kv::gpuref
