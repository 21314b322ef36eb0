#include "reports/run_folder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/util/format_number.h"
#include "reports/result_json.h"

namespace kv::reports {
namespace fs = std::filesystem;

namespace {
std::string fmt(const char* f, double v) { return format_number(f, v); }

// One CSV line of numbers, each written by std::to_chars: the text printf's %lld / %d and
// (fixed6) %.6f give, without parsing a format per row (steps.csv gets one per engine step).
class NumberRow {
 public:
  NumberRow& operator<<(std::int64_t v) {
    separate();
    p_ = std::to_chars(p_, end(), v).ptr;
    return *this;
  }
  void fixed6(double v) {
    separate();
    p_ = std::to_chars(p_, end(), v, std::chars_format::fixed, 6).ptr;
  }
  std::string_view line() {
    *p_++ = '\n';
    return {buf_, static_cast<std::size_t>(p_ - buf_)};
  }

 private:
  void separate() {
    if (p_ != buf_) *p_++ = ',';
  }
  // Room for 20 numbers of 20 characters and one double of up to 316 (1e308 at %.6f), plus
  // separators: no write can be cut short.
  char* end() { return buf_ + sizeof buf_ - 1; }
  char buf_[1024];
  char* p_ = buf_;
};

Status write_file(const fs::path& p, const std::string& text) { return files::write_whole_file(p.string(), text); }

// Microseconds: the rounded percentiles, and mean and std from the millisecond statistics.
nlohmann::ordered_json latency_json(const LatencyPercentiles& p, const replay::LatencyStats& ms) {
  nlohmann::ordered_json j = {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}, {"count", p.count}};
  if (p.count == 0) j = {{"p50", std::llround(ms.median * 1000)}, {"count", ms.count}};
  j["mean"] = ms.mean * 1000;
  j["std"] = ms.std * 1000;
  return j;
}
}  // namespace

StatusOr<std::unique_ptr<RunFolder>> RunFolder::create(const std::string& dir, bool overwrite) {
  auto staging = files::OutputFolder::open(dir, overwrite);
  if (!staging.ok()) return staging.status();
  std::unique_ptr<RunFolder> f(new RunFolder(dir, (*staging)->staging()));
  f->staging_ = std::move(*staging);
  return open_files(std::move(f));
}

StatusOr<std::unique_ptr<RunFolder>> RunFolder::create_inside(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::error("cannot create output directory " + dir + ": " + ec.message());
  return open_files(std::unique_ptr<RunFolder>(new RunFolder(dir, dir)));
}

StatusOr<std::unique_ptr<RunFolder>> RunFolder::child(const std::string& name) const {
  return create_inside(write_dir_ + "/" + name);
}

Status RunFolder::add_file(const std::string& name, const std::string& text) const {
  return write_file(fs::path(write_dir_) / name, text);
}

StatusOr<std::unique_ptr<RunFolder>> RunFolder::open_files(std::unique_ptr<RunFolder> f) {
  auto steps = files::OutputFile::create(f->write_dir_ + "/steps.csv");
  if (!steps.ok()) return steps.status();
  auto requests = files::OutputFile::create(f->write_dir_ + "/requests.csv");
  if (!requests.ok()) return requests.status();
  f->steps_ = std::move(*steps);
  f->requests_ = std::move(*requests);
  f->steps_->write(
      "step,start_us,duration_ns,predicted_ns,measured_ns,num_requests,prefill_tokens,decode_tokens,"
      "cached_tokens,running,waiting,preempted,finished,kv_usage,free_blocks,evictions_total,"
      "tokens_computed,kv_slots_read\n");
  f->requests_->write(
      "id,arrival_us,first_token_us,finish_us,ttft_us,e2e_us,prompt_tokens,output_tokens,"
      "cached_tokens,preemptions,status,reason\n");
  return f;
}

RunFolder::~RunFolder() = default;

Status RunFolder::stream_decisions() {
  auto f = files::OutputFile::create(write_dir_ + "/decisions.log");
  if (!f.ok()) return f.status();
  decisions_ = std::move(*f);
  return {};
}

void RunFolder::add_decision(std::string_view line) {
  if (decisions_) decisions_->write(line);
}

void RunFolder::add_step(const StepRecord& r) {
  NumberRow row;
  row << r.step << r.start_us << r.duration_ns << r.predicted_ns << r.measured_ns << r.num_requests << r.prefill_tokens
      << r.decode_tokens << r.cached_tokens << r.running << r.waiting << r.preempted << r.finished;
  row.fixed6(r.kv_usage);
  row << r.free_blocks << r.evictions_total << r.counters.tokens_computed << r.counters.kv_slots_read;
  steps_->write(row.line());
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void RunFolder::add_request(const RequestMetrics& m) {
  const long long ttft = m.first_token_us >= 0 ? m.first_token_us - m.arrival_us : -1;
  const long long e2e = m.finish_us >= 0 ? m.finish_us - m.arrival_us : -1;
  char numbers[256];
  const int n =
      std::snprintf(numbers, sizeof numbers, ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,",
                    static_cast<long long>(m.arrival_us), static_cast<long long>(m.first_token_us),
                    static_cast<long long>(m.finish_us), ttft, e2e, static_cast<long long>(m.prompt_tokens),
                    static_cast<long long>(m.output_tokens), static_cast<long long>(m.cached_tokens), m.preemptions);
  requests_->write(csv_field(m.id));
  requests_->write(std::string_view(numbers, static_cast<std::size_t>(std::min<int>(n, sizeof numbers - 1))));
  requests_->write(m.status + "," + csv_field(m.reject_reason) + "\n");
}

namespace {
// Second-tier figures (docs/tiers.md): per tier, then the totals.
nlohmann::ordered_json tiers_json(const ReplaySummary& s) {
  const auto rate = [&](std::int64_t tokens) {
    return s.admitted_prompt_tokens > 0 ? static_cast<double>(tokens) / static_cast<double>(s.admitted_prompt_tokens)
                                        : 0.0;
  };
  nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
  for (const TierFigures& t : s.tiers) {
    tiers.push_back({{"tier", t.name},
                     {"capacity_blocks", t.capacity_blocks},
                     {"capacity_bytes", t.capacity_bytes},
                     {"hit_rate", rate(t.first_hit_tokens)},
                     {"first_hit_tokens", t.first_hit_tokens},
                     {"hit_tokens", t.hit_tokens},
                     {"loaded_blocks", t.loaded_blocks},
                     {"loaded_bytes", t.loaded_bytes},
                     {"stored_blocks", t.stored_blocks},
                     {"stored_bytes", t.stored_bytes},
                     {"dropped_blocks", t.dropped_blocks},
                     {"peak_blocks", t.peak_blocks}});
  }
  return {{"tiers", tiers},
          {"gpu_hit_rate", s.request_hit_rate},
          {"tier_hit_rate", s.tier_hit_rate},
          {"combined_hit_rate", s.combined_hit_rate},
          {"admitted_tier_tokens", s.admitted_tier_tokens},
          {"load_ns", s.tier_load_ns},
          {"stall_ns", s.tier_stall_ns}};
}
}  // namespace

std::string summary_json(const RunConfig& config, const ReplaySummary& s, double wall_seconds) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json cfg = nlohmann::ordered_json::object();
  for (const auto& [k, v] : config) cfg[k] = v;
  j["config"] = cfg;
  j["requests"] = {{"total", s.requests_total}, {"finished", s.requests_finished}, {"rejected", s.requests_rejected}};
  j["tokens"] = {
      {"prompt", s.prompt_tokens}, {"output", s.output_tokens}, {"prompt_computed", s.prompt_tokens_computed}};
  j["prefix_cache"] = {{"request_hit_rate", s.request_hit_rate},
                       {"admitted_prompt_tokens", s.admitted_prompt_tokens},
                       {"admitted_hit_tokens", s.admitted_hit_tokens},
                       {"hit_rate", s.hit_rate},
                       {"lookups", s.cache.lookups},
                       {"queries", s.cache.queries},
                       {"hits", s.cache.hits},
                       {"preempted_lookups", s.cache.preempted_lookups},
                       {"preempted_queries", s.cache.preempted_queries},
                       {"preempted_hits", s.cache.preempted_hits},
                       {"evictions", s.evictions}};
  j["scheduler"] = {{"steps", s.steps}, {"preemptions", s.preemptions}, {"recomputed_tokens", s.recomputed_tokens}};
  if (s.encoder_tokens_per_request > 0) {  // encoder-decoder models only
    j["encoder"] = {{"tokens_per_request", s.encoder_tokens_per_request}, {"tokens", s.encoder_tokens}};
  }
  j["latency_us"] = {{"ttft", latency_json(s.ttft_us, s.serving.ttft_ms)},
                     {"tpot", latency_json(s.tpot_us, s.serving.tpot_ms)},
                     {"e2e", latency_json(s.e2e_us, s.serving.e2el_ms)},
                     {"itl", latency_json(LatencyPercentiles{}, s.serving.itl_ms)}};
  // The same figures under vllm bench serve's keys, in milliseconds (as in result.json).
  nlohmann::ordered_json ms = nlohmann::ordered_json::object();
  for (const auto& [name, st] : {std::pair<const char*, const replay::LatencyStats*>{"ttft", &s.serving.ttft_ms},
                                 {"tpot", &s.serving.tpot_ms},
                                 {"itl", &s.serving.itl_ms},
                                 {"e2el", &s.serving.e2el_ms}}) {
    for (const auto& [key, value] : latency_keys(name, *st)) ms[key] = value;
  }
  j["latency_ms"] = ms;
  const double sim_s = static_cast<double>(s.sim_time_us) / 1e6;
  j["time"] = {
      {"simulated_us", s.sim_time_us}, {"measured_total_ns", s.measured_total_ns}, {"wall_seconds", wall_seconds}};
  j["throughput"] = {{"prompt_tokens_per_s", sim_s > 0 ? static_cast<double>(s.prompt_tokens) / sim_s : 0.0},
                     {"output_tokens_per_s", sim_s > 0 ? static_cast<double>(s.output_tokens) / sim_s : 0.0},
                     {"requests_per_s", sim_s > 0 ? static_cast<double>(s.requests_finished) / sim_s : 0.0}};
  j["verification"] = {{"violations", s.violations.size()},
                       {"first", s.violations.empty() ? "" : s.violations.front()}};
  j["overload"] = {{"overloaded", s.overload.overloaded}, {"reason", s.overload.reason}};
  j["decision_log_sha256"] = s.digest;
  j["complete"] = true;       // summary.json is written last: a folder without it is not a finished run
  if (s.groups.size() > 1) {  // hybrid runs: per KV-cache group
    nlohmann::ordered_json groups = nlohmann::ordered_json::array();
    for (std::size_t g = 0; g < s.groups.size(); ++g) {
      const replay::GroupFigures& f = s.groups[g];
      groups.push_back({{"group", g},
                        {"spec", f.spec},
                        {"peak_blocks_in_use", f.peak_blocks_in_use},
                        {"mean_blocks_in_use", f.mean_blocks_in_use},
                        {"hit_tokens", f.hit_tokens}});
    }
    j["kv_cache_groups"] = groups;
  }
  if (!s.tiers.empty()) j["kv_tiers"] = tiers_json(s);
  if (s.spec.num_speculative_tokens > 0) j["spec_decoding"] = spec_decoding_json(s.spec);
  return j.dump(2) + "\n";
}

std::string format_summary(const std::string& title, const ReplaySummary& s, double wall_seconds) {
  std::ostringstream o;
  const double sim_s = static_cast<double>(s.sim_time_us) / 1e6;
  auto row = [&](const std::string& k, const std::string& v) {
    o << "  " << k << std::string(k.size() < 26 ? 26 - k.size() : 1, ' ') << v << "\n";
  };
  o << title << "\n";
  row("requests done / rejected", std::to_string(s.requests_finished) + " / " + std::to_string(s.requests_rejected));
  row("prompt / output tokens", std::to_string(s.prompt_tokens) + " / " + std::to_string(s.output_tokens));
  row("prefix-cache hit rate", fmt("%.2f%%", 100.0 * s.request_hit_rate) + " of prompt tokens (" +
                                   std::to_string(s.admitted_hit_tokens) + " of " +
                                   std::to_string(s.admitted_prompt_tokens) + ", once per request)");
  row("  vLLM lookup counter", fmt("%.2f%%", 100.0 * s.hit_rate) + " (" + std::to_string(s.cache.hits) + " of " +
                                   std::to_string(s.cache.queries) + " tokens over " + std::to_string(s.cache.lookups) +
                                   " lookups)");
  row("evictions / preemptions", std::to_string(s.evictions) + " / " + std::to_string(s.preemptions));
  const auto stats = [&](const char* name, const replay::LatencyStats& st) {
    std::string line = fmt("%.1f", st.mean) + " / " + fmt("%.1f", st.median) + " / " + fmt("%.1f", st.std);
    for (const auto& [p, v] : st.percentiles) line += " / p" + fmt("%g", p) + " " + fmt("%.1f", v);
    row(std::string(name) + " mean/median/std ms", line);
  };
  stats("TTFT", s.serving.ttft_ms);
  stats("TPOT", s.serving.tpot_ms);
  stats("ITL ", s.serving.itl_ms);
  stats("E2EL", s.serving.e2el_ms);
  if (s.serving.request_goodput >= 0) {
    row("goodput", fmt("%.3f req/s", s.serving.request_goodput) + " (" + std::to_string(s.serving.good) + " of " +
                       std::to_string(s.serving.completed) + " requests met every SLO)");
  }
  if (s.overload.overloaded) row("OVERLOADED", s.overload.reason);
  row("throughput (simulated)",
      fmt("%.0f prompt tok/s, ", sim_s > 0 ? static_cast<double>(s.prompt_tokens) / sim_s : 0) +
          fmt("%.0f output tok/s", sim_s > 0 ? static_cast<double>(s.output_tokens) / sim_s : 0));
  row("simulated time", fmt("%.3f s", sim_s) + " in " + std::to_string(s.steps) + " steps");
  row("wall time",
      fmt("%.2f s", wall_seconds) + fmt(" (%.1fx real time)", wall_seconds > 0 ? sim_s / wall_seconds : 0));
  row("verification",
      s.violations.empty() ? std::string("no violations") : std::to_string(s.violations.size()) + " VIOLATIONS");
  for (std::size_t g = 0; s.groups.size() > 1 && g < s.groups.size(); ++g) {
    const replay::GroupFigures& f = s.groups[g];
    row("group " + std::to_string(g) + " " + f.spec, "blocks in use peak " + std::to_string(f.peak_blocks_in_use) +
                                                         fmt(", mean %.1f", f.mean_blocks_in_use) + "; hit tokens " +
                                                         std::to_string(f.hit_tokens));
  }
  for (const TierFigures& t : s.tiers) {
    const double rate = s.admitted_prompt_tokens > 0
                            ? static_cast<double>(t.first_hit_tokens) / static_cast<double>(s.admitted_prompt_tokens)
                            : 0.0;
    row(t.name + " tier hit rate", fmt("%.2f%%", 100.0 * rate) + " of prompt tokens (" +
                                       std::to_string(t.first_hit_tokens) + "); loaded " +
                                       fmt("%.1f MB", static_cast<double>(t.loaded_bytes) / 1e6) + ", stored " +
                                       fmt("%.1f MB", static_cast<double>(t.stored_bytes) / 1e6) + ", dropped " +
                                       std::to_string(t.dropped_blocks) + " blocks");
  }
  if (!s.tiers.empty()) {
    row("GPU + tiers hit rate", fmt("%.2f%%", 100.0 * s.combined_hit_rate) + " of prompt tokens");
    row("tier load / stall time", fmt("%.3f ms", static_cast<double>(s.tier_load_ns) / 1e6) + " / " +
                                      fmt("%.3f ms", static_cast<double>(s.tier_stall_ns) / 1e6));
  }
  if (s.encoder_tokens_per_request > 0) {
    row("encoder tokens",
        std::to_string(s.encoder_tokens) + " (" + std::to_string(s.encoder_tokens_per_request) + " per admission)");
  }
  if (s.spec.num_speculative_tokens > 0) {  // vLLM's SpecDecodingLogging figures
    row("spec decoding drafts", std::to_string(s.spec.num_drafts) + " drafts, " +
                                    std::to_string(s.spec.num_draft_tokens) + " draft tokens, " +
                                    std::to_string(s.spec.num_accepted_tokens) + " accepted");
    std::string per_position;
    for (std::size_t i = 0; i < s.spec.accepted_per_position.size(); ++i) {
      per_position += (i ? ", " : "") + fmt("%.3f", s.spec.position_rate(i));
    }
    row("  acceptance rate", fmt("%.2f%%", 100.0 * s.spec.acceptance_rate()) + " (per position: " + per_position + ")");
    row("  mean acceptance length", fmt("%.3f", s.spec.mean_acceptance_length()));
  }
  row("decision log sha256", s.digest);
  return o.str();
}

Status RunFolder::finish(const RunConfig& config, const ReplaySummary& summary, const DecisionLog& log,
                         double wall_seconds, const std::vector<KernelTime>& kernels) {
  for (std::optional<files::OutputFile>* f : {&steps_, &requests_, &decisions_}) {
    if (*f) {
      if (Status s = (*f)->close(); !s.ok()) return s;
    }
  }
  if (Status s = write_rest(config, summary, log, wall_seconds, kernels); !s.ok()) return s;
  if (Status s = write_file(fs::path(write_dir_) / "summary.json", summary_json(config, summary, wall_seconds));
      !s.ok()) {
    return s;
  }
  return staging_ ? staging_->commit() : Status();
}

// Everything but the CSVs and summary.json.
Status RunFolder::write_rest(const RunConfig& config, const ReplaySummary& summary, const DecisionLog& log,
                             double wall_seconds, const std::vector<KernelTime>& kernels) {
  const fs::path d(write_dir_);
  const bool has_log = decisions_.has_value() || !log.text().empty();
  if (Status s = write_file(d / "result.json", result_json(config, summary, result_date_)); !s.ok()) return s;
  if (!decisions_ && !log.text().empty()) {
    if (Status s = write_file(d / "decisions.log", log.text()); !s.ok()) return s;
  }
  if (!kernels.empty()) {
    std::string csv = "kernel,launches,total_ns\n";
    for (const KernelTime& k : kernels) {
      csv += k.name + "," + std::to_string(k.launches) + "," + std::to_string(k.total_ns) + "\n";
    }
    if (Status s = write_file(d / "kernels.csv", csv); !s.ok()) return s;
  }
  std::ostringstream md;
  md << "# kvsim replay report\n\n## Configuration\n\n| option | value |\n|---|---|\n";
  for (const auto& [k, v] : config) md << "| " << k << " | `" << v << "` |\n";
  md << "\n## Summary\n\n```\n" << format_summary("replay", summary, wall_seconds) << "```\n\n";
  md << "## What the numbers mean\n\n"
     << "- **Prefix-cache hit rate**: prompt tokens found in the cache when each request was first scheduled, "
        "over all prompt tokens (each request counted once). The **vLLM lookup counter** is what vLLM's "
        "prefix-cache metric shows: hits over queries of every lookup, and a request waiting at the head "
        "of the queue is looked up again at every admission attempt (lookups of preempted requests are "
        "counted apart: "
     << summary.cache.preempted_hits << " hits of " << summary.cache.preempted_queries << " tokens).\n"
     << "- **Evictions** are cached blocks whose hash was dropped because the block was reused (lazy eviction).\n"
     << "- **TTFT** is arrival to first output token, **TPOT** the mean time between later tokens of a request, "
        "**E2E** arrival to last token; all in simulated (device) time.\n"
     << "- The **decision-log digest** is the SHA-256 of every scheduling decision (`decisions.log`); two runs "
        "with equal digests made identical decisions.\n\n"
     << "Files: `summary.json`, `steps.csv` (one row per step), `requests.csv` (one row per request)"
     << (has_log ? ", `decisions.log`" : "") << ".\n";
  if (summary.overload.overloaded) {
    md << "\n## Overloaded\n\nThe server did not keep up with the arrivals: " << summary.overload.reason
       << ". Latencies of such a run grow with its length; lower --request-rate or add capacity.\n";
  }
  if (!summary.violations.empty()) {
    md << "\n## Verification failures\n\n";
    for (std::size_t i = 0; i < summary.violations.size() && i < 20; ++i) md << "- " << summary.violations[i] << "\n";
  }
  return write_file(d / "report.md", md.str());
}

}  // namespace kv::reports
