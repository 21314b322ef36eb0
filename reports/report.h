// Report: one Markdown page (report.md) and one self-contained HTML page (report.html, every
// plot inline as SVG) from one or more run folders, simulated and/or measured on a GPU:
//   - a summary of every run (the figures a reader came for, fitting a 1280-px window, then the
//     rest of its totals), and the settings that differ between the runs;
//   - KV usage and cumulative prefix-cache hit rate over time (steps.csv, requests.csv);
//   - TTFT, TPOT and E2E latency CDFs (requests.csv);
//   - prefix caching on vs off, for every two runs whose configurations differ only in that;
//   - per-kernel device time, for runs that have a kernels.csv;
//   - simulated vs measured, for every run with measured step times: decision-log digests and
//     hit rates side by side with the matching simulated run, and predicted vs measured step
//     time (scatter; median, p90 and max absolute percentage error);
//   - last, folded, every setting of every run.
// Plots are PNG + SVG files in the output folder, rendered by gnuplot; without gnuplot the
// report is written without them and says so.
#pragma once

#include <string>
#include <vector>

#include "model/util/status.h"
#include "reports/run_reader.h"

namespace kv::reports {

struct ReportOptions {
  std::vector<std::string> runs;  // run folders
  std::string out_dir;
  bool force = false;  // replace report files in a non-empty out_dir
};

struct ReportResult {
  std::string markdown_path, html_path;
  std::vector<std::string> plots;  // base paths (without .png/.svg) of the plots rendered
  std::vector<std::string> notes;  // e.g. "gnuplot not found: no plots"
};

StatusOr<ReportResult> write_report(const ReportOptions& options);

// Absolute percentage errors |predicted - measured| / measured of the steps with a measured
// time > 0, sorted ascending.
std::vector<double> step_time_errors(const RunData& run);

// True when a and b's configurations differ exactly in prefix_caching.
bool caching_pair(const RunData& a, const RunData& b);

}  // namespace kv::reports
