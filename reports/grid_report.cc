#include "reports/grid_report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "model/util/format_number.h"
#include "reports/gnuplot.h"
#include "reports/run_folder.h"

namespace kv::reports {

namespace fs = std::filesystem;
using replay::GridPoint;
using replay::ReplaySummary;

namespace {

std::string num(double v) { return format_number("%.6g", v); }

double percentile_value(const replay::LatencyStats& st, double p) {
  for (const auto& [q, v] : st.percentiles) {
    if (q == p) return v;
  }
  return st.median;
}

// The curve a point belongs to: its settings other than request-rate.
std::string curve_of(const GridPoint& p) {
  std::string key;
  for (const auto& [option, value] : p.settings) {
    if (option == "request-rate") continue;
    key += (key.empty() ? "" : ", ") + option + "=" + value;
  }
  return key.empty() ? "all points" : key;
}

// The second-tier columns (docs/tiers.md): empty cells for a point without --host-cache-bytes.
std::string tier_cells(const ReplaySummary& r) {
  if (r.tiers.empty()) return ",,,,,,,";
  std::int64_t tier_hits[2] = {0, 0}, loaded = 0, stored = 0;
  for (std::size_t i = 0; i < r.tiers.size(); ++i) {
    tier_hits[i < 2 ? i : 1] += r.tiers[i].hit_tokens;
    loaded += r.tiers[i].loaded_bytes;
    stored += r.tiers[i].stored_bytes;
  }
  std::ostringstream o;
  o << ',' << num(r.tier_hit_rate) << ',' << num(r.combined_hit_rate) << ',' << tier_hits[0] << ','
    << (r.tiers.size() > 1 ? std::to_string(tier_hits[1]) : "") << ',' << loaded << ',' << stored << ','
    << num(static_cast<double>(r.tier_stall_ns) / 1e6);
  return o.str();
}

}  // namespace

std::string grid_csv_header(const GridPoint& first) {
  std::ostringstream o;
  o << "point";
  for (const auto& [option, value] : first.settings) o << ',' << csv_field(option);
  o << ",completed,failed,duration_s,request_throughput,output_throughput,total_token_throughput,request_goodput,"
       "mean_ttft_ms,median_ttft_ms,p99_ttft_ms,mean_tpot_ms,median_tpot_ms,p99_tpot_ms,mean_itl_ms,p99_itl_ms,"
       "mean_e2el_ms,p99_e2el_ms,prefix_cache_hit_rate,preemptions,overloaded,tier_hit_rate,combined_hit_rate,"
       "host_hit_tokens,disk_hit_tokens,tier_loaded_bytes,tier_stored_bytes,tier_stall_ms\n";
  return o.str();
}

std::string grid_csv_row(const GridPoint& point, const ReplaySummary& r) {
  const replay::ServingMetrics& m = r.serving;
  std::ostringstream o;
  o << point.index;
  for (const auto& [option, value] : point.settings) o << ',' << csv_field(value);
  o << ',' << m.completed << ',' << m.failed << ',' << num(m.duration_s) << ',' << num(m.request_throughput) << ','
    << num(m.output_throughput) << ',' << num(m.total_token_throughput) << ','
    << (m.request_goodput >= 0 ? num(m.request_goodput) : "") << ',' << num(m.ttft_ms.mean) << ','
    << num(m.ttft_ms.median) << ',' << num(percentile_value(m.ttft_ms, 99)) << ',' << num(m.tpot_ms.mean) << ','
    << num(m.tpot_ms.median) << ',' << num(percentile_value(m.tpot_ms, 99)) << ',' << num(m.itl_ms.mean) << ','
    << num(percentile_value(m.itl_ms, 99)) << ',' << num(m.e2el_ms.mean) << ',' << num(percentile_value(m.e2el_ms, 99))
    << ',' << num(r.request_hit_rate) << ',' << r.preemptions << ',' << (r.overload.overloaded ? "yes" : "no")
    << tier_cells(r) << '\n';
  return o.str();
}

std::string grid_csv(const std::vector<GridPoint>& points, const std::vector<ReplaySummary>& results) {
  if (points.empty()) return "";
  std::string out = grid_csv_header(points[0]);
  for (std::size_t i = 0; i < points.size() && i < results.size(); ++i) out += grid_csv_row(points[i], results[i]);
  return out;
}

std::string GridPlotRow::to_text() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g %.17g %.17g ", request_throughput, p99_ttft_ms, median_ttft_ms,
                request_rate, goodput);
  return buf + curve;
}

GridPlotRow GridPlotRow::from_text(const std::string& text) {
  GridPlotRow r;
  std::istringstream in(text);
  in >> r.request_throughput >> r.p99_ttft_ms >> r.median_ttft_ms >> r.request_rate >> r.goodput;
  in.get();
  std::getline(in, r.curve, '\0');
  return r;
}

GridPlotRow grid_plot_row(const GridPoint& point, const ReplaySummary& r) {
  const replay::ServingMetrics& m = r.serving;
  return {curve_of(point),
          m.request_throughput,
          percentile_value(m.ttft_ms, 99),
          m.ttft_ms.median,
          point.config.arrivals.request_rate,
          m.request_goodput};
}

Status plot_grid(const std::vector<GridPlotRow>& rows, const std::string& out_dir) {
  std::vector<std::string> curves;
  std::map<std::string, std::vector<const GridPlotRow*>> members;
  for (const GridPlotRow& r : rows) {
    if (!members.count(r.curve)) curves.push_back(r.curve);
    members[r.curve].push_back(&r);
  }
  const fs::path dir = fs::absolute(out_dir);
  const fs::path dat = dir / "latency_throughput.dat";
  std::ofstream f(dat, std::ios::binary);
  bool goodput = false;
  for (const std::string& c : curves) {
    f << "# " << c << "\n";
    for (const GridPlotRow* r : members[c]) {
      f << num(r->request_throughput) << ' ' << num(r->p99_ttft_ms) << ' ' << num(r->median_ttft_ms) << ' '
        << num(r->request_rate) << ' ' << num(std::max(r->goodput, 0.0)) << "\n";
      goodput = goodput || r->goodput >= 0;
    }
    f << "\n\n";
  }
  f.close();
  if (!f) return Status::error("cannot write " + dat.string());
  std::ostringstream b;
  b << "set title 'TTFT against request throughput (p99 solid, median dashed)'\n"
    << "set xlabel 'request throughput (req/s)'\nset ylabel 'TTFT (ms, log scale)'\nset logscale y\nset grid\n"
    << "set key outside right top\nplot ";
  for (std::size_t i = 0; i < curves.size(); ++i) {
    b << (i ? ", \\\n     " : "") << gnuplot_quote(dat.string()) << " index " << i
      << " using 1:2 with linespoints lw 2 pt 7 lc " << i + 1 << " title " << gnuplot_quote(curves[i])
      << " noenhanced, " << gnuplot_quote(dat.string()) << " index " << i << " using 1:3 with linespoints dt 2 pt 6 lc "
      << i + 1 << " notitle";
  }
  b << "\n";
  if (Status s = render_plot((dir / "latency_throughput").string(), b.str()); !s.ok()) return s;
  if (!goodput) return {};
  std::ostringstream g;
  g << "set title 'Goodput against offered request rate'\nset xlabel 'request rate (req/s)'\n"
    << "set ylabel 'goodput (req/s meeting every SLO)'\nset grid\nset key outside right top\nplot ";
  for (std::size_t i = 0; i < curves.size(); ++i) {
    g << (i ? ", \\\n     " : "") << gnuplot_quote(dat.string()) << " index " << i
      << " using 4:5 with linespoints lw 2 pt 7 title " << gnuplot_quote(curves[i]) << " noenhanced";
  }
  g << "\n";
  return render_plot((dir / "goodput").string(), g.str());
}

}  // namespace kv::reports
