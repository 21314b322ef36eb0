// Fuzz target profile: any bytes as a kernel profile CSV (sim/profile_format.md), then what
// `kvsim replay --profile` and `kvsim calibrate` do with a profile that loads.
// Properties: the parser never crashes; a profile it accepts prints back (all_rows) to a CSV
// that parses to the same rows; the cost model prices steps of every size with it (no abort in
// the step DAG, durations >= 0); calibrate() on its rows returns a preset or an error, and a
// fitted preset prices the same steps; its decode_step and prefill_step rows are priced, one
// time each, never negative.
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"
#include "fuzz/price_steps.h"
#include "model/catalog/model_shape.h"
#include "sim/calibration.h"
#include "sim/profile_table.h"

namespace {

std::string to_csv(const std::vector<kv::sim::ProfileRow>& rows) {
  std::string csv = "kernel,num_tokens,num_seqs,context_tokens,time_ns\n";
  for (const kv::sim::ProfileRow& r : rows) {
    csv += std::string(kv::sim::kernel_name(r.kernel)) + "," + std::to_string(r.num_tokens) + "," +
           std::to_string(r.num_seqs) + "," + std::to_string(r.context_tokens) + "," + std::to_string(r.time_ns) + "\n";
  }
  return csv;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kv::sim;
  auto table = ProfileTable::parse("fuzz.csv", kv::fuzz::as_text(data, size));
  if (!table.ok()) return 0;
  const std::vector<ProfileRow> rows = table->all_rows();
  auto again = ProfileTable::parse("again.csv", to_csv(rows));
  FUZZ_CHECK(again.ok(), again.status().message());
  FUZZ_CHECK(again->all_rows().size() == rows.size(), "round trip");
  static const kv::ModelShape model = kv::find_model_shape("llama3-8b").value();
  static const GpuSpec gpu = find_gpu_spec("h100-sxm").value();
  kv::fuzz::price_steps(model, gpu, &*table);
  const std::vector<StepRow>& steps = table->step_rows();
  if (steps.size() <= 64) {  // step rows: priced by the preset and by the profile, never negative
    for (const StepCheck& c : {check_steps(steps, model, gpu), check_steps(steps, model, gpu, &*table)}) {
      FUZZ_CHECK(c.predicted_ns.size() == steps.size(), "one prediction per step row");
      for (std::int64_t ns : c.predicted_ns) FUZZ_CHECK(ns >= 0, "a negative decode-step time");
    }
  }
  if (rows.empty() || rows.size() > 512) return 0;  // calibrate's fit is slower per row
  auto fit = calibrate(rows, model, gpu, "fuzz-fit");
  if (fit.ok()) kv::fuzz::price_steps(model, fit->spec);
  return 0;
}
