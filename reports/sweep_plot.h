// Sweep plots: renders the points of a capacity sweep (replay/sweep.h) with gnuplot.
// Hit rate against capacity (log scale), one curve per trace, policy and block size (the
// optimum's, when the sweep has one, dashed black: every other curve lies on or below it); in
// serving mode also TTFT p50 and output throughput. Writes <out_dir>/hit_rate.{png,svg,gp,dat}
// (and ttft_p50.*, throughput.* in serving mode). Needs gnuplot (reports/gnuplot.h).
#pragma once

#include <string>
#include <vector>

#include "model/util/status.h"
#include "replay/sweep.h"

namespace kv::reports {

Status plot_sweep(const std::vector<replay::SweepPoint>& points, const std::string& out_dir, const std::string& title);

}  // namespace kv::reports
