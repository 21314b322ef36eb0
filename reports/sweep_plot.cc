#include "reports/sweep_plot.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "model/util/format_number.h"
#include "reports/gnuplot.h"

namespace kv::reports {

namespace fs = std::filesystem;
using replay::SweepPoint;
using replay::trace_label;

namespace {
std::string fmt(const char* f, double v) { return format_number(f, v); }
}  // namespace

Status plot_sweep(const std::vector<replay::SweepPoint>& points, const std::string& out_dir, const std::string& title) {
  // One curve per (trace, policy, block size), in first-appearance order.
  std::vector<std::string> keys;
  std::vector<bool> bound;  // by key: the optimum's curve, drawn as a dashed black line
  std::map<std::string, std::vector<const SweepPoint*>> curves;
  bool serving = false;
  for (const SweepPoint& p : points) {
    std::string key =
        trace_label(p.config.trace) + ", " + p.config.policy + ", block " + std::to_string(p.config.block_size);
    if (!curves.count(key)) {
      keys.push_back(key);
      bound.push_back(p.config.policy == "optimum");
    }
    curves[key].push_back(&p);
    serving = serving || p.has_serving;
  }
  const fs::path dir = fs::absolute(out_dir);  // the scripts work from any directory
  auto write_dat = [&](const std::string& name, auto value) -> Status {
    std::ofstream f(dir / name, std::ios::binary);
    for (const std::string& k : keys) {
      f << "# " << k << "\n";
      std::vector<const SweepPoint*> c = curves[k];
      std::stable_sort(c.begin(), c.end(),
                       [](auto* a, auto* b) { return a->config.capacity_tokens < b->config.capacity_tokens; });
      for (const SweepPoint* p : c) f << p->config.capacity_tokens << ' ' << value(*p) << "\n";
      f << "\n\n";
    }
    if (!f) return Status::error("cannot write " + (dir / name).string());
    return {};
  };
  auto plot_body = [&](const std::string& dat, const std::string& ylabel, const std::string& ptitle,
                       const std::string& extra) {
    std::ostringstream b;
    b << "set title " << gnuplot_quote(ptitle) << " noenhanced\n"
      << "set xlabel 'KV-cache capacity (tokens, log scale)'\nset ylabel " << gnuplot_quote(ylabel) << "\n"
      << "set logscale x\nset format x '10^{%T}'\nset grid xtics ytics mxtics\n"
      << extra << "plot ";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      b << (i ? ", \\\n     " : "") << gnuplot_quote((dir / dat).string()) << " index " << i
        << (bound[i] ? " using 1:2 with linespoints dt 2 lw 3 lc rgb 'black' pt 6 ps 0.8 title "
                     : " using 1:2 with linespoints lw 2 pt 7 ps 0.6 title ")
        << gnuplot_quote(keys[i]) << " noenhanced";
    }
    b << "\n";
    return b.str();
  };
  if (Status s = write_dat("hit_rate.dat", [](const SweepPoint& p) { return fmt("%.6f", p.hit_rate); }); !s.ok())
    return s;
  if (Status s = render_plot((dir / "hit_rate").string(),
                             plot_body("hit_rate.dat", "prefix-cache hit rate (hit tokens / prompt tokens)", title,
                                       "set yrange [0:1]\nset ytics 0.1\nset key inside left top opaque box\n"),
                             1000, 640);
      !s.ok()) {
    return s;
  }
  if (!serving) return {};
  if (Status s = write_dat(
          "ttft.dat",
          [](const SweepPoint& p) { return fmt("%.3f", static_cast<double>(p.serving.ttft_p50_us) / 1000.0); });
      !s.ok())
    return s;
  if (Status s = render_plot((dir / "ttft_p50").string(),
                             plot_body("ttft.dat", "TTFT p50 (ms, log scale)", title + ": median time to first token",
                                       "set logscale y\nset key inside right top opaque box\n"),
                             1000, 640);
      !s.ok()) {
    return s;
  }
  if (Status s =
          write_dat("throughput.dat", [](const SweepPoint& p) { return fmt("%.1f", p.serving.output_tokens_per_s); });
      !s.ok())
    return s;
  return render_plot(
      (dir / "throughput").string(),
      plot_body("throughput.dat", "output throughput (tokens/s, simulated)", title + ": output throughput",
                "set yrange [0:*]\nset key inside right bottom opaque box\n"),
      1000, 640);
}

}  // namespace kv::reports
