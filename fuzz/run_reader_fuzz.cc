// Fuzz target run_reader: any bytes as a run folder (reports/run_reader.h). The input is cut at
// each line "#####" into summary.json, steps.csv, requests.csv and, if a fourth part is there,
// kernels.csv, written into a fresh folder that load_run() reads.
// Properties: load_run never crashes; a folder it loads has as many step and request rows as
// its CSV files have records at most, and the report's per-run figures compute on it.
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"
#include "reports/report.h"
#include "reports/run_reader.h"

namespace {

std::vector<std::string_view> split_parts(std::string_view text) {
  constexpr std::string_view kCut = "\n#####\n";
  std::vector<std::string_view> parts;
  while (parts.size() < 3) {
    const std::size_t at = text.find(kCut);
    if (at == std::string_view::npos) break;
    parts.push_back(text.substr(0, at));
    text.remove_prefix(at + kCut.size());
  }
  parts.push_back(text);
  return parts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const char* const kFiles[] = {"summary.json", "steps.csv", "requests.csv", "kernels.csv"};
  const std::string dir = kv::fuzz::scratch_dir() + "/run";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  const std::vector<std::string_view> parts = split_parts(kv::fuzz::as_text(data, size));
  for (std::size_t i = 0; i < parts.size(); ++i) kv::fuzz::write_scratch(std::string("run/") + kFiles[i], parts[i]);
  auto run = kv::reports::load_run(dir);
  if (!run.ok()) return 0;
  FUZZ_CHECK(run->step_rows.size() <= parts[1].size(), "more step rows than bytes");
  FUZZ_CHECK(run->request_rows.size() <= parts[2].size(), "more request rows than bytes");
  for (double e : kv::reports::step_time_errors(*run)) FUZZ_CHECK(e >= 0, std::to_string(e));
  (void)kv::reports::caching_pair(*run, *run);
  return 0;
}
