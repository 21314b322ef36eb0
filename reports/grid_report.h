// Grid-sweep outputs: the merged table of a `kvsim sweep --vary ...` run (one row per point,
// one column per varied option, then result.json's headline figures) and its plots:
// latency against throughput (p99 and median TTFT against request throughput, one curve per
// setting of the axes other than request-rate) and, when goodput SLOs were given, goodput
// against request rate.
#pragma once

#include <string>
#include <vector>

#include "model/util/status.h"
#include "replay/grid_sweep.h"

namespace kv::reports {

// RFC 4180 CSV: the header (from the axes of `first`), one row per point. The table is the
// same bytes whatever the number of threads or MPI ranks that ran the points.
std::string grid_csv_header(const replay::GridPoint& first);
std::string grid_csv_row(const replay::GridPoint& point, const replay::ReplaySummary& result);
std::string grid_csv(const std::vector<replay::GridPoint>& points, const std::vector<replay::ReplaySummary>& results);

// What the plots need of one point; one line of text, so that MPI ranks can send it.
struct GridPlotRow {
  std::string curve;  // the point's settings other than request-rate
  double request_throughput = 0, p99_ttft_ms = 0, median_ttft_ms = 0, request_rate = 0, goodput = -1;
  std::string to_text() const;
  static GridPlotRow from_text(const std::string& text);
};
GridPlotRow grid_plot_row(const replay::GridPoint& point, const replay::ReplaySummary& result);

// Writes <out_dir>/latency_throughput.{png,svg} (and goodput.* with SLOs). Needs gnuplot.
Status plot_grid(const std::vector<GridPlotRow>& rows, const std::string& out_dir);

}  // namespace kv::reports
