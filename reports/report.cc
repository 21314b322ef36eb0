#include "reports/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "files/output_file.h"
#include "files/output_folder.h"
#include "model/util/format_number.h"
#include "model/util/percentile.h"
#include "reports/gnuplot.h"

namespace kv::reports {

namespace fs = std::filesystem;

namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }
std::string ms(std::int64_t us) { return fmt("%.1f", static_cast<double>(us) / 1000.0); }
std::string pct(double v) { return fmt("%.2f%%", 100.0 * v); }

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += k[v & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The report as Markdown and HTML at once.
class Doc {
 public:
  void heading(int level, const std::string& text) {
    md_ << std::string(static_cast<std::size_t>(level), '#') << ' ' << text << "\n\n";
    html_ << "<h" << level << ">" << html_escape(text) << "</h" << level << ">\n";
  }
  void para(const std::string& text) {
    md_ << text << "\n\n";
    html_ << "<p>" << html_escape(text) << "</p>\n";
  }
  void bullets(const std::vector<std::string>& items) {
    html_ << "<ul>\n";
    for (const std::string& i : items) {
      md_ << "- " << i << "\n";
      html_ << "<li>" << html_escape(i) << "</li>\n";
    }
    md_ << "\n";
    html_ << "</ul>\n";
  }
  void table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) {
    md_ << "|";
    html_ << "<div class=\"scroll\"><table>\n<tr>";
    for (const std::string& h : head) {
      md_ << ' ' << h << " |";
      html_ << "<th>" << html_escape(h) << "</th>";
    }
    md_ << "\n|";
    html_ << "</tr>\n";
    for (std::size_t i = 0; i < head.size(); ++i) md_ << (i == 0 ? "---|" : "---:|");
    md_ << "\n";
    for (const auto& r : rows) {
      md_ << "|";
      html_ << "<tr>";
      for (const std::string& c : r) {
        md_ << ' ' << c << " |";
        html_ << "<td>" << html_escape(c) << "</td>";
      }
      md_ << "\n";
      html_ << "</tr>\n";
    }
    md_ << "\n";
    html_ << "</table></div>\n";
  }
  // A folded section (HTML <details>, which Markdown viewers render too): what follows until
  // end_details() shows when the reader opens `summary`.
  void begin_details(const std::string& summary) {
    md_ << "<details><summary>" << html_escape(summary) << "</summary>\n\n";
    html_ << "<details><summary>" << html_escape(summary) << "</summary>\n";
  }
  void end_details() {
    md_ << "</details>\n\n";
    html_ << "</details>\n";
  }
  // A rendered plot: base.png for Markdown, base.svg inline (base64) for HTML.
  void plot(const std::string& base, const std::string& alt) {
    const std::string name = fs::path(base).filename().string();
    md_ << "![" << alt << "](" << name << ".png)\n\n";
    std::ifstream in(base + ".svg", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    html_ << "<figure><img alt=\"" << html_escape(alt) << "\" src=\"data:image/svg+xml;base64," << base64(ss.str())
          << "\"><figcaption>" << html_escape(alt) << "</figcaption></figure>\n";
  }
  std::string markdown() const { return md_.str(); }
  std::string html(const std::string& title) const {
    return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + html_escape(title) +
           "</title>\n<style>\nbody{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\n"
           "table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #bbb;padding:3px 8px;text-align:right}\n"
           "th{background:#eee}td:first-child,th:first-child{text-align:left}\nfigure{margin:1em "
           "0}img{max-width:100%}\n"
           "figcaption{color:#555;font-size:90%}\n.scroll{overflow-x:auto;max-width:100%}\n</style>\n</"
           "head>\n<body>\n" +
           html_.str() + "</body>\n</html>\n";
  }

 private:
  std::ostringstream md_, html_;
};

// Writes one gnuplot data block per series (index i = series i); at most max_points rows each.
Status write_series(const fs::path& path, const std::vector<std::vector<std::pair<double, double>>>& series,
                    std::size_t max_points = 2000) {
  std::ofstream f(path, std::ios::binary);
  for (const auto& s : series) {
    const std::size_t stride = s.size() > max_points ? (s.size() + max_points - 1) / max_points : 1;
    for (std::size_t i = 0; i < s.size(); i += stride)
      f << fmt("%.9g", s[i].first) << ' ' << fmt("%.9g", s[i].second) << "\n";
    if (!s.empty() && (s.size() - 1) % stride != 0)
      f << fmt("%.9g", s.back().first) << ' ' << fmt("%.9g", s.back().second) << "\n";
    f << "\n\n";
  }
  if (!f) return Status::error("cannot write " + path.string());
  return {};
}

std::vector<std::pair<double, double>> cdf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.emplace_back(v[i], static_cast<double>(i + 1) / static_cast<double>(v.size()));
  }
  return out;
}

std::string plot_lines(const fs::path& dat, const std::vector<std::string>& titles, const std::string& style) {
  std::ostringstream b;
  b << "plot ";
  bool any = false;
  for (std::size_t i = 0; i < titles.size(); ++i) {
    b << (any ? ", \\\n     " : "") << gnuplot_quote(dat.string()) << " index " << i << " using 1:2 " << style
      << " title " << gnuplot_quote(titles[i]) << " noenhanced";
    any = true;
  }
  b << "\n";
  return b.str();
}

const std::set<std::string> kDeviceKeys = {"device", "clock", "verify", "profile", "gpu"};

// A simulated run that replays the same trace and cache as `m`: most matching keys wins.
const RunData* sim_partner(const RunData& m, const std::vector<RunData>& runs) {
  const RunData* best = nullptr;
  int best_score = -1;
  for (const RunData& r : runs) {
    if (&r == &m || r.measured() || r.config_value("device").rfind("sim", 0) != 0) continue;
    if (r.config_value("trace_source") != m.config_value("trace_source")) continue;
    int score = 0;
    for (const auto& [k, v] : m.config) {
      if (!kDeviceKeys.count(k) && r.config_value(k) == v) ++score;
    }
    if (score > best_score) {
      best = &r;
      best_score = score;
    }
  }
  return best;
}

std::string short_digest(const std::string& d) { return d.size() > 16 ? d.substr(0, 16) + "..." : d; }

}  // namespace

std::vector<double> step_time_errors(const RunData& run) {
  std::vector<double> e;
  for (const StepRow& s : run.step_rows) {
    if (s.measured_ns > 0) {
      e.push_back(std::fabs(static_cast<double>(s.predicted_ns - s.measured_ns)) / static_cast<double>(s.measured_ns));
    }
  }
  std::sort(e.begin(), e.end());
  return e;
}

bool caching_pair(const RunData& a, const RunData& b) {
  if (a.config_value("prefix_caching") == b.config_value("prefix_caching")) return false;
  std::map<std::string, std::string> ca(a.config.begin(), a.config.end()), cb(b.config.begin(), b.config.end());
  ca.erase("prefix_caching");
  cb.erase("prefix_caching");
  return !ca.empty() && ca == cb;
}

namespace {

// One report being written: the runs, the output folder, the document and what came of it.
// Each section is one method; write_report calls them in order.
struct ReportWriter {
  std::vector<RunData> runs;
  fs::path out;
  Doc doc;
  ReportResult result;
  bool plots = false;
  std::string why_no_plots;
  std::vector<std::string> labels;

  void render(const std::string& name, const std::string& body, const std::string& alt) {
    if (!plots) return;
    const std::string base = (out / name).string();
    if (Status s = render_plot(base, body); !s.ok()) {
      result.notes.push_back(s.message());
      doc.para("Plot " + name + " failed: " + s.message());
      return;
    }
    result.plots.push_back(base);
    doc.plot(base, alt);
  }

  void header(const std::string& title) {
    doc.heading(1, title);
    std::vector<std::string> sources;
    for (const RunData& r : runs) {
      sources.push_back(r.label + ": " + r.dir + " (" + r.config_value("device") + ", trace " +
                        r.config_value("trace_source") + ", prefix caching " + r.config_value("prefix_caching") + ")");
    }
    doc.bullets(sources);
    if (!plots) doc.para("Plots are missing: " + why_no_plots + ".");
  }

  // The figures a reader came for, narrow enough for a 1280-px window; the rest of each run's
  // totals in a second table.
  void summary() {
    doc.heading(2, "Summary");
    std::vector<std::vector<std::string>> rows, more;
    const auto p50_p99 = [](const Percentiles& p) { return ms(p.p50) + " / " + ms(p.p99); };
    for (const RunData& r : runs) {
      rows.push_back({r.label, r.config_value("prefix_caching"),
                      std::to_string(r.requests_finished) + " / " + std::to_string(r.requests_rejected),
                      pct(r.request_hit_rate), p50_p99(r.ttft_us), p50_p99(r.tpot_us),
                      fmt("%.0f", r.output_tokens_per_s), std::to_string(r.preemptions)});
      more.push_back({r.label, r.config_value("device"), pct(r.hit_rate), fmt("%.1f", r.ttft_us.mean / 1000),
                      fmt("%.1f", r.tpot_us.mean / 1000), p50_p99(r.e2e_us), std::to_string(r.steps),
                      std::to_string(r.evictions), short_digest(r.digest)});
    }
    doc.table({"run", "caching", "done / rejected", "hit rate", "TTFT ms p50 / p99", "TPOT ms p50 / p99",
               "output tok/s", "preemptions"},
              rows);
    doc.table({"run", "device", "lookup hit rate", "TTFT ms mean", "TPOT ms mean", "E2EL ms p50 / p99", "steps",
               "evictions", "decision log"},
              more);
    doc.para(
        "Hit rate: prompt tokens found in the cache when each request was first scheduled, over "
        "all prompt tokens (each request once). Lookup hit rate: vLLM's counter, hits over queried tokens of "
        "every lookup (a waiting request is looked up again at every attempt). docs/results.md defines both. "
        "Latencies are in device time: simulated for sim runs, the replay clock for GPU runs. Throughput: "
        "output tokens per second of that clock.");
    differing_settings();
    tiers();
  }

  // The settings whose values differ between the runs (what the comparison is about).
  void differing_settings() {
    if (runs.size() < 2) return;
    std::vector<std::string> head = {"setting"};
    for (const RunData& r : runs) head.push_back(r.label);
    std::vector<std::vector<std::string>> rows;
    for (const std::string& k : setting_keys()) {
      std::vector<std::string> row = {k};
      for (const RunData& r : runs) row.push_back(r.config_value(k));
      if (std::any_of(row.begin() + 2, row.end(), [&](const std::string& v) { return v != row[1]; })) {
        rows.push_back(std::move(row));
      }
    }
    doc.heading(3, "Settings that differ");
    if (rows.empty()) {
      doc.para("None: every run has the same configuration (the full list is at the end).");
      return;
    }
    doc.table(head, rows);
  }

  // Every setting of any run, in the order the runs list them.
  std::vector<std::string> setting_keys() const {
    std::vector<std::string> keys;
    for (const RunData& r : runs) {
      for (const auto& [k, v] : r.config) {
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
    }
    return keys;
  }

  // Second KV-cache tiers (docs/tiers.md), for runs that had them.
  void tiers() {
    std::vector<std::vector<std::string>> rows;
    for (const RunData& r : runs) {
      for (const TierRow& t : r.tiers) {
        rows.push_back({r.label, t.tier, fmt("%.1f", static_cast<double>(t.capacity_bytes) / 1e9), pct(t.hit_rate),
                        fmt("%.1f", static_cast<double>(t.loaded_bytes) / 1e6),
                        fmt("%.1f", static_cast<double>(t.stored_bytes) / 1e6), std::to_string(t.dropped_blocks),
                        pct(r.combined_hit_rate), fmt("%.3f", static_cast<double>(r.tier_load_ns) / 1e6),
                        fmt("%.3f", static_cast<double>(r.tier_stall_ns) / 1e6)});
      }
    }
    if (rows.empty()) return;
    doc.heading(2, "KV-cache tiers");
    doc.table({"run", "tier", "capacity GB", "hit rate", "loaded MB", "stored MB", "dropped blocks",
               "GPU + tiers hit rate", "load ms", "stall ms"},
              rows);
    doc.para(
        "Hit rate: prompt tokens loaded from the tier when each request was first scheduled, over all prompt "
        "tokens. Load ms: copy time of every load; stall ms: what loads and saves added to the steps' "
        "durations (with --tier-load overlap, only the part the compute did not hide). docs/tiers.md.");
  }

  // Every setting of every run, one row per setting, folded: it comes last.
  void configuration() {
    const std::vector<std::string> keys = setting_keys();
    doc.heading(2, "Configuration");
    doc.begin_details("All " + std::to_string(keys.size()) + " settings of every run");
    std::vector<std::string> head = {"setting"};
    for (const RunData& r : runs) head.push_back(r.label);
    std::vector<std::vector<std::string>> rows;
    for (const std::string& k : keys) {
      std::vector<std::string> row = {k};
      for (const RunData& r : runs) row.push_back(r.config_value(k));
      rows.push_back(std::move(row));
    }
    doc.table(head, rows);
    doc.end_details();
  }

  Status over_time() {
    doc.heading(2, "KV usage and hit rate over time");
    std::vector<std::vector<std::pair<double, double>>> usage, hits;
    for (const RunData& r : runs) {
      std::vector<std::pair<double, double>> u;
      for (const StepRow& s : r.step_rows) u.emplace_back(static_cast<double>(s.start_us) / 1e6, 100.0 * s.kv_usage);
      usage.push_back(std::move(u));
      std::vector<const RequestRow*> started;
      for (const RequestRow& q : r.request_rows) {
        if (q.first_token_us >= 0) started.push_back(&q);
      }
      std::stable_sort(started.begin(), started.end(),
                       [](auto* a, auto* b) { return a->first_token_us < b->first_token_us; });
      std::vector<std::pair<double, double>> h;
      double cached = 0, prompt = 0;
      for (const RequestRow* q : started) {
        cached += static_cast<double>(q->cached_tokens);
        prompt += static_cast<double>(q->prompt_tokens);
        h.emplace_back(static_cast<double>(q->first_token_us) / 1e6, prompt > 0 ? cached / prompt : 0);
      }
      hits.push_back(std::move(h));
    }
    if (Status s = write_series(out / "data" / "kv_usage.dat", usage); !s.ok()) return s;
    if (Status s = write_series(out / "data" / "hit_rate_time.dat", hits); !s.ok()) return s;
    render(
        "kv_usage",
        "set title 'KV-cache usage over time'\nset xlabel 'time (s, replay clock)'\nset ylabel 'KV blocks in use (%)'\n"
        "set yrange [0:105]\nset grid\nset key outside right top\n" +
            plot_lines(out / "data" / "kv_usage.dat", labels, "with lines lw 1.5"),
        "KV-cache usage over time (steps.csv kv_usage)");
    render(
        "hit_rate_time",
        "set title 'Cumulative prefix-cache hit rate over time'\nset xlabel 'time of first token (s, replay clock)'\n"
        "set ylabel 'cached / prompt tokens, cumulative'\nset yrange [0:1]\nset grid\nset key outside right top\n" +
            plot_lines(out / "data" / "hit_rate_time.dat", labels, "with lines lw 2"),
        "Cumulative hit rate: cached_tokens / prompt_tokens of requests by first-token time (requests.csv)");
    doc.para(
        "The cumulative hit rate counts each request once, at its first token, with the hits of its first "
        "scheduling (requests.csv cached_tokens over prompt_tokens).");
    return {};
  }

  Status latency() {
    doc.heading(2, "Latency distributions");
    std::vector<std::vector<std::pair<double, double>>> ttft, tpot, e2e;
    for (const RunData& r : runs) {
      std::vector<double> a, b, c;
      for (const RequestRow& q : r.request_rows) {
        if (q.ttft_us >= 0) a.push_back(static_cast<double>(q.ttft_us) / 1000.0);
        if (q.e2e_us >= 0) c.push_back(static_cast<double>(q.e2e_us) / 1000.0);
        if (q.ttft_us >= 0 && q.e2e_us >= 0 && q.output_tokens > 1) {
          b.push_back(static_cast<double>(q.e2e_us - q.ttft_us) / 1000.0 / static_cast<double>(q.output_tokens - 1));
        }
      }
      ttft.push_back(cdf(a));
      tpot.push_back(cdf(b));
      e2e.push_back(cdf(c));
    }
    struct Cdf {
      const char* name;
      const char* what;
      std::vector<std::vector<std::pair<double, double>>>* data;
    };
    for (const Cdf& c : {Cdf{"ttft_cdf", "TTFT: arrival to first token", &ttft},
                         Cdf{"tpot_cdf", "TPOT: mean time per output token after the first", &tpot},
                         Cdf{"e2e_cdf", "E2E: arrival to last token", &e2e}}) {
      bool any = false;
      for (const auto& s : *c.data) any = any || !s.empty();
      if (!any) {
        doc.para(std::string("No request has a ") + c.name + " value.");
        continue;
      }
      if (Status s = write_series(out / "data" / (std::string(c.name) + ".dat"), *c.data, 1000); !s.ok()) return s;
      render(c.name,
             std::string("set title '") + c.what +
                 " (CDF)'\nset xlabel 'latency (ms, log scale)'\nset ylabel "
                 "'fraction of requests'\nset logscale x\nset yrange [0:1]\nset grid\nset key right bottom\n" +
                 plot_lines(out / "data" / (std::string(c.name) + ".dat"), labels, "with steps lw 2"),
             std::string(c.what) + ", CDF over requests (requests.csv)");
    }
    return {};
  }

  void caching_on_off() {
    doc.heading(2, "Prefix caching on vs off");
    bool any = false;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      for (std::size_t j = i + 1; j < runs.size(); ++j) {
        if (!caching_pair(runs[i], runs[j])) continue;
        any = true;
        const RunData& on = runs[i].config_value("prefix_caching") == "on" ? runs[i] : runs[j];
        const RunData& off = &on == &runs[i] ? runs[j] : runs[i];
        doc.para(on.label + " (on) vs " + off.label + " (off): the configurations differ only in prefix caching.");
        auto row = [](const std::string& m, double a, double b, const char* f) {
          return std::vector<std::string>{m, fmt(f, a), fmt(f, b), fmt(f, a - b),
                                          b != 0 ? fmt("%.3f", a / b) : std::string("-")};
        };
        auto d = [](std::int64_t us) { return static_cast<double>(us) / 1000.0; };
        doc.table(
            {"metric", "on", "off", "on - off", "on / off"},
            {row("hit rate (%)", 100 * on.hit_rate, 100 * off.hit_rate, "%.2f"),
             row("TTFT p50 (ms)", d(on.ttft_us.p50), d(off.ttft_us.p50), "%.1f"),
             row("TTFT p90 (ms)", d(on.ttft_us.p90), d(off.ttft_us.p90), "%.1f"),
             row("TPOT p50 (ms)", d(on.tpot_us.p50), d(off.tpot_us.p50), "%.2f"),
             row("E2E p50 (ms)", d(on.e2e_us.p50), d(off.e2e_us.p50), "%.1f"),
             row("output throughput (tok/s)", on.output_tokens_per_s, off.output_tokens_per_s, "%.0f"),
             row("requests/s", on.requests_per_s, off.requests_per_s, "%.3f"),
             row("preemptions", static_cast<double>(on.preemptions), static_cast<double>(off.preemptions), "%.0f"),
             row("steps", static_cast<double>(on.steps), static_cast<double>(off.steps), "%.0f")});
      }
    }
    if (!any) doc.para("No two runs differ only in prefix caching, so there is no on/off comparison.");
  }

  void kernels() {
    doc.heading(2, "Per-kernel device time");
    bool any = false;
    for (const RunData& r : runs) {
      if (!r.has_kernels) continue;
      any = true;
      std::int64_t total = 0;
      for (const KernelRow& k : r.kernels) total += k.total_ns;
      std::vector<KernelRow> ks = r.kernels;
      std::stable_sort(ks.begin(), ks.end(),
                       [](const KernelRow& a, const KernelRow& b) { return a.total_ns > b.total_ns; });
      std::vector<std::vector<std::string>> krows;
      for (const KernelRow& k : ks) {
        krows.push_back({k.kernel, std::to_string(k.launches), fmt("%.3f", static_cast<double>(k.total_ns) / 1e6),
                         total > 0 ? pct(static_cast<double>(k.total_ns) / static_cast<double>(total)) : "-"});
      }
      doc.para(r.label + " (kernels.csv):");
      doc.table({"kernel", "launches", "time (ms)", "share"}, krows);
    }
    if (!any) {
      doc.para(
          "Skipped: none of these run folders has a per-kernel breakdown (a kernels.csv with "
          "kernel,launches,total_ns); summary.json does not carry one.");
    }
  }

  Status simulated_vs_measured() {
    doc.heading(2, "Simulated vs measured");
    bool any = false;
    for (const RunData& m : runs) {
      if (!m.measured()) continue;
      any = true;
      const RunData* s = sim_partner(m, runs);
      if (s != nullptr) {
        const bool same_digest = !m.digest.empty() && m.digest == s->digest;
        const bool same_hits = m.hits == s->hits && m.queries == s->queries;
        doc.table({"", m.label + " (measured)", s->label + " (simulated)"},
                  {{"device", m.config_value("device"), s->config_value("device")},
                   {"decision-log SHA-256", m.digest, s->digest},
                   {"prefix-cache hit rate",
                    pct(m.hit_rate) + " (" + std::to_string(m.hits) + " / " + std::to_string(m.queries) + ")",
                    pct(s->hit_rate) + " (" + std::to_string(s->hits) + " / " + std::to_string(s->queries) + ")"},
                   {"steps", std::to_string(m.steps), std::to_string(s->steps)}});
        doc.para(same_digest ? "The decision-log digests are equal: both runs made identical scheduling decisions."
                             : "FLAG: the decision-log digests differ: the runs did not make identical decisions "
                               "(expected with --clock wall or a different configuration).");
        doc.para(same_hits ? "The hit rates are equal, as they must be for identical decisions."
                           : "FLAG: the hit rates differ (" + pct(m.hit_rate) + " vs " + pct(s->hit_rate) +
                                 "): the allocator saw different requests or decisions.");
      } else {
        doc.para(m.label +
                 " has measured step times but no simulated run of the same trace is among the inputs; "
                 "its own predicted_ns column (the cost model on the same plans) is compared below.");
      }
      const std::vector<double> e = step_time_errors(m);
      if (e.empty()) {
        doc.para("No step of " + m.label + " has a measured time > 0.");
        continue;
      }
      const double med = percentile_of_sorted(e, 50), p90 = percentile_of_sorted(e, 90), mx = e.back();
      doc.para("Predicted vs measured step time of " + m.label + " over " + std::to_string(e.size()) +
               " steps: absolute percentage error median " + pct(med) + ", p90 " + pct(p90) + ", max " + pct(mx) +
               ". Fidelity target (median <= 5%, p90 <= 10%): " + (med <= 0.05 && p90 <= 0.10 ? "met." : "NOT met."));
      std::vector<std::pair<double, double>> pts;
      for (const StepRow& st : m.step_rows) {
        if (st.measured_ns > 0)
          pts.emplace_back(static_cast<double>(st.measured_ns) / 1e6, static_cast<double>(st.predicted_ns) / 1e6);
      }
      const std::string name = "step_time_" + std::to_string(&m - runs.data() + 1);
      if (Status st = write_series(out / "data" / (name + ".dat"), {pts}, 5000); !st.ok()) return st;
      render(name,
             "set title " + gnuplot_quote("Predicted vs measured step time: " + m.label) +
                 " noenhanced\nset xlabel 'measured step time (ms, log scale)'\nset ylabel 'predicted step time (ms, "
                 "log scale)'\n"
                 "set logscale xy\nset grid\nset key left top\nset size ratio -1\n"
                 "plot " +
                 gnuplot_quote((out / "data" / (name + ".dat")).string()) +
                 " using 1:2 with points pt 7 ps 0.4 title 'steps', x with lines dt 2 lc rgb 'black' title 'predicted "
                 "= measured'\n",
             "Predicted (cost model) vs measured step time, one point per step");
    }
    if (!any) doc.para("No run has measured step times (steps.csv measured_ns >= 0): all runs are simulated.");
    return {};
  }

  Status write_files(const std::string& title) {
    result.markdown_path = (out / "report.md").string();
    result.html_path = (out / "report.html").string();
    if (Status s = files::write_whole_file(result.markdown_path, doc.markdown()); !s.ok()) return s;
    return files::write_whole_file(result.html_path, doc.html(title));
  }
};

StatusOr<std::vector<RunData>> load_runs(const std::vector<std::string>& dirs) {
  std::vector<RunData> runs;
  for (const std::string& dir : dirs) {
    auto r = load_run(dir);
    if (!r.ok()) return r.status();
    runs.push_back(std::move(*r));
  }
  // Labels: folder names, made unique with their index.
  std::map<std::string, int> seen;
  for (const RunData& r : runs) ++seen[r.label];
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (seen[runs[i].label] > 1) runs[i].label += " (" + std::to_string(i + 1) + ")";
  }
  return runs;
}

}  // namespace

StatusOr<ReportResult> write_report(const ReportOptions& o) {
  if (o.runs.empty()) return Status::error("no run folders given");
  auto runs = load_runs(o.runs);
  if (!runs.ok()) return runs.status();
  ReportWriter w;
  w.runs = std::move(*runs);
  // Written in a staging folder, put in place as a unit at the end (files/output_folder.h).
  auto folder = files::OutputFolder::open(o.out_dir, o.force);
  if (!folder.ok()) return folder.status();
  w.out = fs::absolute((*folder)->staging());  // gnuplot scripts name their data by absolute path
  std::error_code ec;
  fs::create_directories(w.out / "data", ec);
  w.plots = gnuplot_available(&w.why_no_plots);
  if (!w.plots) w.result.notes.push_back("no plots: " + w.why_no_plots);
  for (const RunData& r : w.runs) w.labels.push_back(r.label);
  const std::string title = "kvsim report: " + std::to_string(w.runs.size()) + (w.runs.size() == 1 ? " run" : " runs");
  w.header(title);
  w.summary();
  if (Status s = w.over_time(); !s.ok()) return s;
  if (Status s = w.latency(); !s.ok()) return s;
  w.caching_on_off();
  w.kernels();
  if (Status s = w.simulated_vs_measured(); !s.ok()) return s;
  w.configuration();
  if (Status s = w.write_files(title); !s.ok()) return s;
  if (Status s = (*folder)->commit(); !s.ok()) return s;
  const fs::path final_dir = fs::absolute((*folder)->dir());
  const auto moved = [&](const std::string& p) { return (final_dir / fs::path(p).lexically_relative(w.out)).string(); };
  w.result.markdown_path = moved(w.result.markdown_path);
  w.result.html_path = moved(w.result.html_path);
  for (std::string& p : w.result.plots) p = moved(p);
  return w.result;
}

}  // namespace kv::reports
