// RunData: a run folder (reports/run_folder.h) read back for reports: summary.json through
// nlohmann-json, steps.csv and requests.csv through model/util/csv_table.h, the presence of
// decisions.log, and an optional kernels.csv (kernel,launches,total_ns: device time per kernel
// over the run, which a backend may write beside the other files).
// Invariants of a loaded run:
//   1. Every field comes from the files; columns are found by name (extra columns are ignored,
//      missing ones are an error), so older and newer run folders both read. Every row has
//      exactly the header's number of fields; steps.csv has no quoting, requests.csv quotes
//      ids and reasons (line breaks allowed inside quotes), kernels.csv quotes without them.
//   2. A bad folder or file is a Status naming the file and, for CSV and JSON, the line.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/util/status.h"

namespace kv::reports {

struct StepRow {
  std::int64_t step = 0, start_us = 0, duration_ns = 0, predicted_ns = 0, measured_ns = -1;
  std::int64_t prefill_tokens = 0, decode_tokens = 0, cached_tokens = 0;
  double kv_usage = 0;
  std::int64_t evictions_total = 0;
};

struct RequestRow {
  std::string id, status;
  std::int64_t arrival_us = 0, first_token_us = -1, finish_us = -1, ttft_us = -1, e2e_us = -1;
  std::int64_t prompt_tokens = 0, output_tokens = 0, cached_tokens = 0;
  int preemptions = 0;
};

struct KernelRow {
  std::string kernel;
  std::int64_t launches = 0, total_ns = 0;
};

// One second KV-cache tier of a run (summary.json "kv_tiers"; docs/tiers.md).
struct TierRow {
  std::string tier;
  double hit_rate = 0;  // first-scheduling hits over admitted prompt tokens
  std::int64_t loaded_bytes = 0, stored_bytes = 0, dropped_blocks = 0, capacity_bytes = 0;
};

struct Percentiles {
  std::int64_t p50 = 0, p90 = 0, p99 = 0, max = 0;
  double mean = 0;  // microseconds; 0 in run folders written before means were recorded
};

struct RunData {
  std::string dir, label;
  std::vector<std::pair<std::string, std::string>> config;  // summary.json "config", in order
  double hit_rate = 0;          // vLLM's lookup counter: hits / queried tokens of every lookup
  double request_hit_rate = 0;  // hit tokens at first scheduling / prompt tokens, once per request
  std::int64_t queries = 0, hits = 0, evictions = 0, preemptions = 0, steps = 0;
  std::int64_t requests_total = 0, requests_finished = 0, requests_rejected = 0;
  Percentiles ttft_us, tpot_us, e2e_us;
  double output_tokens_per_s = 0, prompt_tokens_per_s = 0, requests_per_s = 0;
  std::int64_t simulated_us = 0, measured_total_ns = -1;
  std::int64_t violations = 0;
  std::string digest;
  bool has_decisions_log = false;
  std::vector<StepRow> step_rows;
  std::vector<RequestRow> request_rows;
  bool has_kernels = false;
  std::vector<KernelRow> kernels;
  std::vector<TierRow> tiers;  // empty: the run had no second tier
  double combined_hit_rate = 0;
  std::int64_t tier_load_ns = 0, tier_stall_ns = 0;

  // The config value of `key`, or "" when absent.
  std::string config_value(const std::string& key) const;
  // True when some step has a measured time (a run on real hardware).
  bool measured() const;
};

StatusOr<RunData> load_run(const std::string& dir);

}  // namespace kv::reports
