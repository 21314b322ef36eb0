// BlockTables: the device-side view of every live request's block table (model/block_table.h), kept up to date
// from StepPlan deltas exactly as vLLM's InputBatch/BlockTable does (add_row for a new or
// resumed request, append_row for a running one, drop on finished/preempted). Plain C++: the
// CPU reference uses it directly and the CUDA device mirrors it on the GPU by applying the
// (row, column, block) updates that apply() returns.
// Invariants:
//   1. A request id owns at most one row; rows are reused lowest-first (deterministic).
//   2. A row's entries [0, num_blocks(row)) are the request's blocks in logical order.
//   3. Every stored block id is in [0, num_blocks) and a row never exceeds max_blocks_per_row.
// Bad input (unknown running request, too many rows or blocks, block id out of range) is a
// Status and leaves the tables as they were before the plan.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "model/block_table.h"
#include "model/status.h"
#include "model/step_plan.h"

namespace kv::gpuref {

struct BlockTableUpdate {
  std::int32_t row = 0;
  std::int32_t column = 0;
  std::int32_t block = 0;
};

class BlockTables {
 public:
  BlockTables(int max_rows, int max_blocks_per_row, std::int64_t num_blocks);

  // Drops finished and preempted requests, then adds/extends the scheduled ones. Appends the
  // entries that changed to *updates (may be null).
  Status apply(const StepPlan& plan, std::vector<BlockTableUpdate>* updates);

  int row_of(const RequestId& id) const;  // -1 when the request has no row
  int num_blocks(int row) const { return static_cast<int>(rows_[static_cast<std::size_t>(row)].size()); }
  std::span<const BlockId> row(int row) const { return rows_[static_cast<std::size_t>(row)].group(); }
  int max_rows() const { return max_rows_; }
  int max_blocks_per_row() const { return max_blocks_per_row_; }
  std::size_t num_live() const { return row_of_.size(); }

 private:
  int max_rows_;
  int max_blocks_per_row_;
  std::int64_t num_blocks_;
  std::map<RequestId, int> row_of_;               // live requests only
  std::set<int> free_rows_;                       // every row not in row_of_
  std::vector<BlockTable> rows_;                  // empty for a free row
};

}  // namespace kv::gpuref
