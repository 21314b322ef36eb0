#include "reports/run_reader.h"

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/util/csv_table.h"
#include "model/util/parse_number.h"

namespace kv::reports {

namespace fs = std::filesystem;

namespace {

// A whole-string number of a cell; `where` names the file and line ("f.csv:3: ").
// An empty cell is an error, never 0.
Status to_int(const std::string& where, const std::string& col, const std::string& text, std::int64_t* out) {
  const std::optional<std::int64_t> v = parse_int64(text);
  if (!v) return Status::error(where + "column " + col + ": '" + text + "' is not an integer");
  *out = *v;
  return {};
}

Status to_double(const std::string& where, const std::string& col, const std::string& text, double* out) {
  const std::optional<double> v = parse_finite_double(text);
  if (!v) return Status::error(where + "column " + col + ": '" + text + "' is not a finite number");
  *out = *v;
  return {};
}

std::string at_line(const std::string& path, int line) { return path + ":" + std::to_string(line) + ": "; }

// The table of the CSV file `path` (model/util/csv_table.h: exact field counts, strict quoting).
StatusOr<CsvTable> read_table(const std::string& path, const CsvRules& rules) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  return parse_csv(path, text.str(), rules);
}

// The indices of `names` in the table's header; a missing column is an error naming it.
Status find_columns(const std::string& path, const CsvTable& table, const std::vector<std::string>& names,
                    std::vector<std::size_t>& out) {
  out.clear();
  for (const std::string& n : names) {
    const std::optional<std::size_t> c = table.column(n);
    if (!c) return Status::error(path + ": header: no column " + n);
    out.push_back(*c);
  }
  return {};
}

// steps.csv holds numbers only: no quoting.
Status read_steps(const std::string& path, std::vector<StepRow>& out) {
  static const std::vector<std::string> kColumns = {"step",        "start_us",       "duration_ns",   "predicted_ns",
                                                    "measured_ns", "prefill_tokens", "decode_tokens", "cached_tokens",
                                                    "kv_usage",    "evictions_total"};
  StatusOr<CsvTable> table = read_table(path, CsvRules{false, false});
  if (!table.ok()) return table.status();
  std::vector<std::size_t> at;
  if (Status s = find_columns(path, *table, kColumns, at); !s.ok()) return s;
  for (const CsvRow& row : table->rows) {
    const std::string where = at_line(path, row.line);
    StepRow r;
    std::int64_t* ints[] = {&r.step,           &r.start_us,      &r.duration_ns,   &r.predicted_ns, &r.measured_ns,
                            &r.prefill_tokens, &r.decode_tokens, &r.cached_tokens, nullptr,         &r.evictions_total};
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      const std::string& cell = row.fields[at[c]];
      Status s = ints[c] != nullptr ? to_int(where, kColumns[c], cell, ints[c])
                                    : to_double(where, kColumns[c], cell, &r.kv_usage);
      if (!s.ok()) return s;
    }
    out.push_back(r);
  }
  return {};
}

// requests.csv: ids and reasons may hold commas, quotes and line breaks (quoted).
Status read_requests(const std::string& path, std::vector<RequestRow>& out) {
  static const std::vector<std::string> kColumns = {
      "id",     "arrival_us",    "first_token_us", "finish_us",     "ttft_us",
      "e2e_us", "prompt_tokens", "output_tokens",  "cached_tokens", "preemptions",
      "status"};
  StatusOr<CsvTable> table = read_table(path, CsvRules{true, true});
  if (!table.ok()) return table.status();
  std::vector<std::size_t> at;
  if (Status s = find_columns(path, *table, kColumns, at); !s.ok()) return s;
  for (const CsvRow& f : table->rows) {
    const std::string where = at_line(path, f.line);
    RequestRow row;
    row.id = f.fields[at[0]];
    row.status = f.fields[at[10]];
    std::int64_t* ints[] = {&row.arrival_us, &row.first_token_us, &row.finish_us,     &row.ttft_us,
                            &row.e2e_us,     &row.prompt_tokens,  &row.output_tokens, &row.cached_tokens};
    for (std::size_t c = 0; c < 8; ++c) {
      if (Status s = to_int(where, kColumns[c + 1], f.fields[at[c + 1]], ints[c]); !s.ok()) return s;
    }
    std::int64_t preemptions = 0;
    if (Status s = to_int(where, "preemptions", f.fields[at[9]], &preemptions); !s.ok()) return s;
    if (preemptions < 0 || preemptions > std::numeric_limits<int>::max()) {
      return Status::error(where + "column preemptions: " + std::to_string(preemptions) + " is out of range");
    }
    row.preemptions = static_cast<int>(preemptions);
    out.push_back(std::move(row));
  }
  return {};
}

Status read_kernels(const std::string& path, std::vector<KernelRow>& out) {
  StatusOr<CsvTable> table = read_table(path, CsvRules{true, false});
  if (!table.ok()) return table.status();
  std::vector<std::size_t> at;
  if (Status s = find_columns(path, *table, {"kernel", "launches", "total_ns"}, at); !s.ok()) return s;
  for (const CsvRow& row : table->rows) {
    const std::string where = at_line(path, row.line);
    KernelRow r;
    r.kernel = row.fields[at[0]];
    if (Status s = to_int(where, "launches", row.fields[at[1]], &r.launches); !s.ok()) return s;
    if (Status s = to_int(where, "total_ns", row.fields[at[2]], &r.total_ns); !s.ok()) return s;
    out.push_back(r);
  }
  return {};
}

Percentiles percentiles(const nlohmann::json& j) {
  Percentiles p;
  p.p50 = j.value("p50", std::int64_t{0});
  p.p90 = j.value("p90", std::int64_t{0});
  p.p99 = j.value("p99", std::int64_t{0});
  p.max = j.value("max", std::int64_t{0});
  p.mean = j.value("mean", 0.0);
  return p;
}

}  // namespace

std::string RunData::config_value(const std::string& key) const {
  for (const auto& [k, v] : config) {
    if (k == key) return v;
  }
  return "";
}

bool RunData::measured() const {
  for (const StepRow& r : step_rows) {
    if (r.measured_ns >= 0) return true;
  }
  return false;
}

namespace {

// summary.json's "kv_tiers" (docs/tiers.md).
void read_tiers(const nlohmann::json& k, RunData& run) {
  for (const auto& t : k.at("tiers")) {
    run.tiers.push_back({t.value("tier", std::string()), t.value("hit_rate", 0.0),
                         t.value("loaded_bytes", std::int64_t{0}), t.value("stored_bytes", std::int64_t{0}),
                         t.value("dropped_blocks", std::int64_t{0}), t.value("capacity_bytes", std::int64_t{0})});
  }
  run.combined_hit_rate = k.value("combined_hit_rate", 0.0);
  run.tier_load_ns = k.value("load_ns", std::int64_t{0});
  run.tier_stall_ns = k.value("stall_ns", std::int64_t{0});
}

// `dir` holds summary.json, steps.csv and requests.csv; an interrupted run (tables without a
// summary) gets its own message.
Status check_run_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::error(dir + ": not a directory (expected a run folder of kvsim replay)");
  const fs::path d(dir);
  if (!fs::is_regular_file(d / "summary.json", ec) &&
      (fs::exists(d / "steps.csv", ec) || fs::exists(d / "requests.csv", ec))) {
    return Status::error(dir +
                         ": incomplete run folder (no summary.json: the run was interrupted or failed "
                         "before it finished); replay again");
  }
  for (const char* f : {"summary.json", "steps.csv", "requests.csv"}) {
    if (!fs::is_regular_file(d / f, ec)) {
      return Status::error(dir + ": not a run folder (no " + f +
                           "; kvsim replay writes summary.json, steps.csv and requests.csv)");
    }
  }
  return {};
}

// The folder's own name ("runs/a/" and "runs/a/." give "a").
std::string run_label(const std::string& dir) {
  std::string label = fs::path(dir).lexically_normal().filename().string();
  if (label.empty() || label == ".") label = fs::path(dir).lexically_normal().parent_path().filename().string();
  return label;
}

StatusOr<nlohmann::json> parse_summary_json(const std::string& summary_path) {
  std::ifstream in(summary_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e400
    return Status::error(summary_path + ": not valid JSON: " + e.what());
  }
}

// The configuration, prefix-cache, scheduler and request counts of the summary.
void read_summary_counts(const nlohmann::json& j, RunData& run) {
  for (const auto& [k, v] : j.at("config").items())
    run.config.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
  const auto& pc = j.at("prefix_cache");
  run.hit_rate = pc.value("hit_rate", 0.0);
  run.request_hit_rate = pc.value("request_hit_rate", run.hit_rate);
  run.queries = pc.value("queries", std::int64_t{0});
  run.hits = pc.value("hits", std::int64_t{0});
  run.evictions = pc.value("evictions", std::int64_t{0});
  if (j.contains("scheduler")) {
    run.steps = j["scheduler"].value("steps", std::int64_t{0});
    run.preemptions = j["scheduler"].value("preemptions", std::int64_t{0});
  }
  if (j.contains("requests")) {
    run.requests_total = j["requests"].value("total", std::int64_t{0});
    run.requests_finished = j["requests"].value("finished", std::int64_t{0});
    run.requests_rejected = j["requests"].value("rejected", std::int64_t{0});
  }
}

// The latencies, throughput, times, verification, digest and tiers of the summary.
void read_summary_results(const nlohmann::json& j, RunData& run) {
  const auto& lat = j.at("latency_us");
  if (lat.contains("ttft")) run.ttft_us = percentiles(lat["ttft"]);
  if (lat.contains("tpot")) run.tpot_us = percentiles(lat["tpot"]);
  if (lat.contains("e2e")) run.e2e_us = percentiles(lat["e2e"]);
  if (j.contains("throughput")) {
    run.output_tokens_per_s = j["throughput"].value("output_tokens_per_s", 0.0);
    run.prompt_tokens_per_s = j["throughput"].value("prompt_tokens_per_s", 0.0);
    run.requests_per_s = j["throughput"].value("requests_per_s", 0.0);
  }
  if (j.contains("time")) {
    run.simulated_us = j["time"].value("simulated_us", std::int64_t{0});
    run.measured_total_ns = j["time"].value("measured_total_ns", std::int64_t{-1});
  }
  if (j.contains("verification")) run.violations = j["verification"].value("violations", std::int64_t{0});
  run.digest = j.value("decision_log_sha256", std::string());
  if (j.contains("kv_tiers")) read_tiers(j["kv_tiers"], run);
}

// summary.json of run folder `dir`: a kvsim run summary, complete, read into `run`.
Status read_summary(const std::string& dir, RunData& run) {
  const std::string summary_path = (fs::path(dir) / "summary.json").string();
  StatusOr<nlohmann::json> parsed = parse_summary_json(summary_path);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  try {
    if (!j.is_object() || !j.contains("config") || !j.contains("prefix_cache") || !j.contains("latency_us")) {
      return Status::error(summary_path + ": not a kvsim run summary (needs config, prefix_cache and latency_us)");
    }
    if (!j.contains("complete") || j.at("complete") != true) {
      return Status::error(dir +
                           ": incomplete run folder (summary.json lacks \"complete\": true, which kvsim "
                           "replay writes last); replay again");
    }
    read_summary_counts(j, run);
    read_summary_results(j, run);
  } catch (const nlohmann::json::exception& e) {
    return Status::error(summary_path + ": unexpected content: " + e.what());
  }
  return {};
}

// steps.csv, requests.csv and, when present, kernels.csv of run folder `dir`.
Status read_tables(const std::string& dir, RunData& run) {
  std::error_code ec;
  const fs::path d(dir);
  run.has_decisions_log = fs::is_regular_file(d / "decisions.log", ec);
  if (Status s = read_steps((d / "steps.csv").string(), run.step_rows); !s.ok()) return s;
  if (Status s = read_requests((d / "requests.csv").string(), run.request_rows); !s.ok()) return s;
  if (fs::is_regular_file(d / "kernels.csv", ec)) {
    run.has_kernels = true;
    if (Status s = read_kernels((d / "kernels.csv").string(), run.kernels); !s.ok()) return s;
  }
  return {};
}

}  // namespace

StatusOr<RunData> load_run(const std::string& dir) {
  if (Status s = check_run_folder(dir); !s.ok()) return s;
  RunData run;
  run.dir = dir;
  run.label = run_label(dir);
  if (Status s = read_summary(dir, run); !s.ok()) return s;
  if (Status s = read_tables(dir, run); !s.ok()) return s;
  return run;
}

}  // namespace kv::reports
