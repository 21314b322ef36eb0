// Grid-sweep outputs: the merged table of a `kvsim sweep --vary ...` run (one row per point,
// one column per varied option, then result.json's headline figures) and its plots:
// latency against throughput (p99 and median TTFT against request throughput, one curve per
// setting of the axes other than request-rate) and, when goodput SLOs were given, goodput
// against request rate.
#pragma once

#include <string>
#include <vector>

#include "model/status.h"
#include "replay/grid_sweep.h"

namespace kv::reports {

// RFC 4180 CSV, the same bytes whatever the number of threads that ran the points.
std::string grid_csv(const std::vector<replay::GridPoint>& points, const std::vector<replay::ReplaySummary>& results);

// Writes <out_dir>/latency_throughput.{png,svg} (and goodput.* with SLOs). Needs gnuplot.
Status plot_grid(const std::vector<replay::GridPoint>& points, const std::vector<replay::ReplaySummary>& results,
                 const std::string& out_dir);

}  // namespace kv::reports
