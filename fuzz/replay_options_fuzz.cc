// Fuzz target replay_options: any bytes as `kvsim replay` options, one per line ("NAME VALUE",
// or "NAME" alone for a switch), set through the option table (replay/replay_config.h), then
// validate() and, when it passes, a short replay of the bundled ShareGPT sample on the
// simulator -- or, when the fleet rows ask for one, a fleet of at most 4 such engines. Options that name files to write
// (--kv-events*, --gpu-profile-out) or read
// (--profile, --gpu-preset-file) are skipped; the pool is capped so one input stays small
// (sizing memory blow-ups is not this target's business).
// Properties: setting and validating never crash; a config validate() accepts builds and runs
// to the end or to an error Status, never to a crash, an overflow or a hang.
#include <algorithm>
#include <string>

#include "fuzz/fuzz_target.h"
#include "replay/fleet_replay.h"
#include "replay/replay_config.h"

#ifndef KVSIM_SOURCE_DIR
#error "KVSIM_SOURCE_DIR must name the repository (for the bundled trace)"
#endif

namespace {

bool skipped(std::string_view name) {
  return name.rfind("kv-events", 0) == 0 || name == "gpu-profile-out" || name == "profile" ||
         name == "gpu-preset-file" || name == "device";
}

// The run's size, whatever the input asked for.
void cap(kv::replay::ReplayConfig& c) {
  c.run.limit = c.run.limit == 0 ? 8 : std::min<std::int64_t>(c.run.limit, 8);
  c.run.replay.max_steps = c.run.replay.max_steps == 0 ? 20000 : std::min<std::int64_t>(c.run.replay.max_steps, 20000);
  if (c.scheduler.cache.num_blocks == 0 && c.device.kv_cache_tokens == 0) c.scheduler.cache.num_blocks = 512;
  c.scheduler.cache.num_blocks = std::min(c.scheduler.cache.num_blocks, 4096);
  c.device.kv_cache_tokens = std::min<std::int64_t>(c.device.kv_cache_tokens, 65536);
  c.run.replay.keep_decision_text = false;
  c.fleet.replicas = std::min(c.fleet.replicas, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kv::replay;
  static const std::string trace = std::string(KVSIM_SOURCE_DIR) + "/traces/data/sharegpt_sample.kvtrace";
  ReplayConfig c;
  std::string_view text = kv::fuzz::as_text(data, size);
  while (!text.empty()) {
    const std::size_t nl = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(std::min(nl + 1, text.size()));
    const std::size_t space = line.find(' ');
    const std::string_view name = line.substr(0, space);
    const std::string value = space == std::string_view::npos ? "on" : std::string(line.substr(space + 1));
    if (skipped(name)) continue;
    if (!set_option(c, name, value).ok()) return 0;
  }
  if (!c.validate().ok()) return 0;
  cap(c);
  if (!c.validate().ok()) return 0;  // a cap can make a pool too small for the model
  auto summary = run_replay_or_fleet(c, trace);
  if (summary.ok()) FUZZ_CHECK(summary->sim_time_us >= 0, std::to_string(summary->sim_time_us));
  return 0;
}
