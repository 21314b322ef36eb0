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
// A RunFolder of its own (create) is written in a staging folder beside DIR under DIR.lock and
// put in DIR's place as a unit by finish() (files/output_folder.h): DIR holds the previous
// complete run until then, a second writer is refused, and --force leaves no file of the
// previous run. One inside a folder that is itself staged (create_inside: a grid sweep's
// points) is written in place. Rows and decision-log lines are streamed as the run goes, so
// memory stays bounded; summary.json is written last, with "complete": true.
// Invariants:
//   1. Every write error (full disk, file-size limit) makes finish() fail naming the file,
//      and then DIR is not replaced.
//   2. A run folder whose summary.json lacks "complete": true is not a finished run.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "files/output_file.h"
#include "files/output_folder.h"
#include "model/util/status.h"
#include "replay/replayer.h"

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
  static StatusOr<std::unique_ptr<RunFolder>> create_inside(const std::string& dir);
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  void add_step(const StepRecord& r);
  void add_request(const RequestMetrics& m);
  // Opens decisions.log for add_decision() (kvsim replay streams the log instead of keeping it).
  Status stream_decisions();
  void add_decision(std::string_view line);
  // Writes decisions.log (if the text was kept and not streamed), report.md and summary.json
  // last; closes the files and, for a folder of its own, puts it in place.
  // `kernels` (may be empty) goes to kernels.csv: kernel,launches,total_ns.
  Status finish(const RunConfig& config, const ReplaySummary& summary, const DecisionLog& log, double wall_seconds,
                const std::vector<KernelTime>& kernels = {});
  const std::string& dir() const { return dir_; }  // where the run will be once finished
  // A run folder inside this one (a fleet's replica-R/), written in place in its staging; it
  // must be finished before this one.
  StatusOr<std::unique_ptr<RunFolder>> child(const std::string& name) const;
  // A further file of this run (a fleet's replicas.csv), written before finish().
  Status add_file(const std::string& name, const std::string& text) const;
  // The "date" of result.json (vLLM's %Y%m%d-%H%M%S); the caller injects it.
  void set_result_date(std::string date) { result_date_ = std::move(date); }

 private:
  RunFolder(std::string dir, std::string write_dir) : dir_(std::move(dir)), write_dir_(std::move(write_dir)) {}
  static StatusOr<std::unique_ptr<RunFolder>> open_files(std::unique_ptr<RunFolder> f);
  Status write_rest(const RunConfig& config, const ReplaySummary& summary, const DecisionLog& log, double wall_seconds,
                    const std::vector<KernelTime>& kernels);
  std::string dir_, write_dir_;                   // write_dir_: the staging folder, or dir_
  std::unique_ptr<files::OutputFolder> staging_;  // null for create_inside
  std::string result_date_ = "19700101-000000";
  std::optional<files::OutputFile> steps_, requests_, decisions_;
};

// The human summary table printed at the end of a replay.
std::string format_summary(const std::string& title, const ReplaySummary& s, double wall_seconds);

// One CSV field as RFC 4180 writes it: quoted (with quotes doubled) when it holds a comma, a
// quote or a line break; as is otherwise.
std::string csv_field(const std::string& text);

// summary.json's content (stable key order).
std::string summary_json(const RunConfig& config, const ReplaySummary& s, double wall_seconds);

}  // namespace kv::reports
