// RunFolder: the files a replay writes, for people and for programs.
//
//   summary.json    every figure of the summary, plus the configuration (machine-readable)
//   steps.csv       one row per executed step (time, tokens, KV usage, evictions, ...)
//   requests.csv    one row per request (arrival, TTFT, E2E, hits, preemptions, status)
//   decisions.log   the canonical decision log (its SHA-256 is the run's digest)
//   kernels.csv     device time per kernel (when the device tracks it)
//   report.md       a readable report of the run
//   result.json     the results in the shape of `vllm bench serve` (reports/result_json.h)
//
// A RunFolder refuses an existing non-empty directory unless overwrite is set: a user's files
// are never replaced silently. Rows are streamed as the run goes; memory stays bounded.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "replay/replayer.h"
#include "model/status.h"

namespace kv::reports {

// Ordered key/value description of the run's configuration (printed and saved as given).
using RunConfig = std::vector<std::pair<std::string, std::string>>;
using replay::DecisionLog;
using replay::LatencyPercentiles;
using replay::ReplaySummary;
using replay::RequestMetrics;
using replay::StepRecord;

class RunFolder {
 public:
  static StatusOr<std::unique_ptr<RunFolder>> create(const std::string& dir, bool overwrite);
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  void add_step(const StepRecord& r);
  void add_request(const RequestMetrics& m);
  // Writes summary.json, decisions.log (if the text was kept) and report.md; closes the CSVs.
  // `kernels` (may be empty) goes to kernels.csv: kernel,launches,total_ns.
  Status finish(const RunConfig& config, const ReplaySummary& summary, const DecisionLog& log,
                double wall_seconds, const std::vector<KernelTime>& kernels = {});
  const std::string& dir() const { return dir_; }
  // The "date" of result.json (vLLM's %Y%m%d-%H%M%S); the caller injects it.
  void set_result_date(std::string date) { result_date_ = std::move(date); }

 private:
  explicit RunFolder(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::string result_date_ = "19700101-000000";
  std::FILE* steps_ = nullptr;
  std::FILE* requests_ = nullptr;
};

// The human summary table printed at the end of a replay.
std::string format_summary(const std::string& title, const ReplaySummary& s, double wall_seconds);

// One CSV field as RFC 4180 writes it: quoted (with quotes doubled) when it holds a comma, a
// quote or a line break; as is otherwise.
std::string csv_field(const std::string& text);

// summary.json's content (stable key order).
std::string summary_json(const RunConfig& config, const ReplaySummary& s, double wall_seconds);

}  // namespace kv::reports
