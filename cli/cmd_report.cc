// kvsim report RUN... [--out DIR]: a Markdown and a self-contained HTML report with plots from
// one or more run folders of kvsim replay (reports/report.h).
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/commands.h"
#include "reports/report.h"

namespace po = boost::program_options;

namespace kv::cli {

int run_report(int argc, char** argv) {
  reports::ReportOptions o;
  po::options_description opts(
      "kvsim report RUN... [--out DIR] [--force]\n\n"
      "Reads run folders of kvsim replay (simulated and/or GPU) and writes DIR/report.md and\n"
      "DIR/report.html (plots inline) with PNG and SVG plots: KV usage and hit rate over time,\n"
      "TTFT/TPOT/E2E CDFs, prefix caching on vs off (runs that differ only in that), per-kernel\n"
      "time (runs with a kernels.csv), and simulated vs measured step times and decisions.\n"
      "Plots need gnuplot (Debian gnuplot-nox). Exit status: 0 ok, 2 bad usage or bad input.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("run", po::value(&o.runs), "run folder (positional, one or more)")(
      "out", po::value(&o.out_dir), "output folder (default: runs/report)")(
      "force", po::bool_switch(&o.force), "replace the report files in an existing non-empty folder");
  po::positional_options_description pos;
  pos.add("run", -1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  if (o.runs.empty()) {
    return usage_error("report", "give at least one run folder (kvsim report --help)");
  }
  if (o.out_dir.empty()) o.out_dir = "runs/report";
  auto r = reports::write_report(o);
  if (!r.ok()) {
    return usage_error("report", r.status().message());
  }
  for (const std::string& n : r->notes) std::cerr << "kvsim report: " << n << "\n";
  std::cout << "wrote " << r->markdown_path << " and " << r->html_path << " (" << r->plots.size() << " plots)\n";
  return 0;
}

}  // namespace kv::cli
