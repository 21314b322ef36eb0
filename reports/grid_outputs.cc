#include "reports/grid_outputs.h"

#include <cctype>
#include <cstdio>

#include "files/output_file.h"
#include "replay/fleet_replay.h"
#include "reports/gnuplot.h"
#include "reports/grid_report.h"
#include "reports/result_json.h"

namespace kv::reports {

namespace {

// A point's folder name: its index and settings, with anything but [A-Za-z0-9._=,-] as '_'.
std::string folder_name(const replay::GridPoint& p) {
  char idx[16];
  std::snprintf(idx, sizeof idx, "%03zu-", p.index);
  std::string name = idx + p.name;
  for (char& c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == ',' || c == '-';
    if (!ok) c = '_';
  }
  return name;
}

}  // namespace

replay::GridHooks grid_folder_hooks(const std::string& staging, std::vector<std::unique_ptr<RunFolder>>& folders) {
  replay::GridHooks h;
  h.before = [&folders, staging](const replay::GridPoint& p, replay::ReplayRun&, replay::Replayer& r) -> Status {
    auto folder = RunFolder::create_inside(staging + "/points/" + folder_name(p));
    if (!folder.ok()) return folder.status();
    (*folder)->set_result_date(result_date_from_environment());
    RunFolder* f = folder->get();
    r.on_step = [f](const replay::StepRecord& s) { f->add_step(s); };
    r.on_request_done = [f](const replay::RequestMetrics& m) { f->add_request(m); };
    folders[p.index] = std::move(*folder);
    return {};
  };
  h.after = [&folders](const replay::GridPoint& p, const replay::ReplayRun& run, const replay::Replayer& r,
                       const replay::ReplaySummary& s) {
    return folders[p.index]->finish(run.description, s, r.log(), 0, run.device->kernel_times());
  };
  // A fleet point: the fleet's folder (its requests, its routes as the decision log).
  h.fleet_before = [&folders, staging](const replay::GridPoint& p, replay::FleetReplay& fleet) -> Status {
    auto folder = RunFolder::create_inside(staging + "/points/" + folder_name(p));
    if (!folder.ok()) return folder.status();
    (*folder)->set_result_date(result_date_from_environment());
    RunFolder* f = folder->get();
    fleet.on_request_done = [f](int, const replay::RequestMetrics& m) { f->add_request(m); };
    folders[p.index] = std::move(*folder);
    return {};
  };
  h.fleet_after = [&folders](const replay::GridPoint& p, const replay::FleetReplay& fleet,
                             const replay::FleetSummary& s) {
    return folders[p.index]->finish(fleet.description(), s.fleet, fleet.routes(), 0);
  };
  return h;
}

std::string grid_point_row(const replay::GridPoint& point, const replay::ReplaySummary& result) {
  return grid_csv_row(point, result) + '\x1f' + grid_plot_row(point, result).to_text();
}

StatusOr<StagedGridOutputs> stage_grid_outputs(const std::vector<replay::GridPoint>& points,
                                               const std::vector<std::string>& rows, files::OutputFolder& folder,
                                               bool plot) {
  StagedGridOutputs out;
  out.csv = grid_csv_header(points.front());
  std::vector<GridPlotRow> plot_rows;
  for (const std::string& r : rows) {
    const std::size_t cut = r.find('\x1f');
    out.csv += r.substr(0, cut);
    plot_rows.push_back(GridPlotRow::from_text(r.substr(cut + 1)));
  }
  if (Status s = files::write_whole_file(folder.staged("sweep.csv"), out.csv); !s.ok()) return s;
  std::string why;
  if (plot && gnuplot_available(&why)) out.plot = plot_grid(plot_rows, folder.staging());
  return out;
}

}  // namespace kv::reports
