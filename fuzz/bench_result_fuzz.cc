// Fuzz target bench_result: any bytes as a `vllm bench serve` result file, as
// `kvsim calibrate --serve-result` reads it (replay/bench_result.h).
// Properties: the reader never crashes; a result it accepts has the two means the fit needs,
// and every figure it keeps is a finite number >= 0 under one of bench_result_keys().
#include <algorithm>
#include <cmath>
#include <string>

#include "fuzz/fuzz_target.h"
#include "replay/bench_result.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto r = kv::replay::parse_bench_result("fuzz.json", std::string(kv::fuzz::as_text(data, size)));
  if (!r.ok()) {
    FUZZ_CHECK(r.status().message().starts_with("fuzz.json: "), "an error names the file");
    return 0;
  }
  FUZZ_CHECK(r->has("mean_ttft_ms") && r->has("mean_tpot_ms"), "the fit's two means are present");
  const auto& keys = kv::replay::bench_result_keys();
  for (const auto& [key, value] : r->figures) {
    FUZZ_CHECK(std::find(keys.begin(), keys.end(), key) != keys.end(), "a known key");
    FUZZ_CHECK(std::isfinite(value) && value >= 0, "a finite figure >= 0");
  }
  return 0;
}
