// The files of a grid sweep (`kvsim sweep --vary ...`): one run folder per point under
// <staging>/points/, and the merged sweep.csv and plots, all inside the sweep's OutputFolder.
// Invariants:
//   1. Point folders are named "<index>-<settings>" (index as %03zu, anything but
//      [A-Za-z0-9._=,-] as '_'), so they sort in point order.
//   2. A point's row is one line of text (CSV row, '\x1f', plot row) that MPI ranks can send;
//      the merged files are built from the rows in index order, the same bytes for any number
//      of threads or ranks.
//   3. Nothing here commits the folder or prints: the caller does, after a plotting failure
//      has been reported (the CSV is complete without the plots).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "files/output_folder.h"
#include "model/util/status.h"
#include "replay/grid_sweep.h"
#include "reports/run_folder.h"

namespace kv::reports {

// Hooks that write one run folder per point under staging/points; `folders` has one slot per
// point of the grid and must outlive the run.
replay::GridHooks grid_folder_hooks(const std::string& staging, std::vector<std::unique_ptr<RunFolder>>& folders);

// A point's row (invariant 2).
std::string grid_point_row(const replay::GridPoint& point, const replay::ReplaySummary& result);

struct StagedGridOutputs {
  std::string csv;  // sweep.csv as written
  Status plot;      // not ok when plotting failed; never when plots were not asked for
};

// Writes sweep.csv and, when gnuplot is there and `plot`, the plots into the folder's staging
// folder, from every point's row in index order.
StatusOr<StagedGridOutputs> stage_grid_outputs(const std::vector<replay::GridPoint>& points,
                                               const std::vector<std::string>& rows, files::OutputFolder& folder,
                                               bool plot);

}  // namespace kv::reports
