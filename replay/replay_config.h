// ReplayConfig: every setting of one replay, typed, built from the configs the layers own:
// the core's SchedulerConfig (with its KvCacheConfig), the device, the tiers, the arrivals,
// the KV-event writers and the run. Defaults are each part's (vLLM's: block size 16,
// max_num_batched_tokens 8192, max_num_seqs 256, chunked prefill on, FCFS,
// gpu_memory_utilization 0.9, sha256_cbor, the classic free order), but max_model_len 131072.
//
// Text enters here and nowhere below: each option of `kvsim replay` is one row of
// config_options() (name, help, how to read it, how to print it) pointing at a field of a
// part. The command line, sweep axes and tests all set options through set_option(); lower
// layers receive their part as is. Adding an option: a field in its part, its row (with its
// range, stated nowhere else) in replay_config.cc, a rule in the part's validate() if the
// range is not enough, and the one place that uses it (docs/architecture.md, "Where to add
// things").
//
// Invariants:
//   1. validate() accepts a config exactly when build_replay() can wire it; its error names
//      the option (`--block-size: must be 1..1024`). Every number it accepts is finite (or the
//      documented inf of --request-rate) and inside its option's bounds.
//   2. describe() lists every row, in table order, so a run folder records the whole setting.
//   3. The builder only completes `scheduler` (the pool's num_blocks, the hash seed, the
//      model's groups, the event queue); it copies no option field.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/sched/scheduler.h"
#include "model/util/status.h"
#include "replay/arrivals.h"
#include "replay/device_options.h"
#include "replay/fleet_options.h"
#include "replay/kv_event_sink.h"
#include "replay/run_options.h"
#include "replay/tier_options.h"
#include "sim/hardware_specs.h"

namespace kv::replay {

struct ReplayConfig {
  ReplayConfig();  // every part's defaults, max_model_len 131072

  // --block-size, --prefix-caching, --num-blocks (0: sized from `device`), --free-order,
  // --eviction-policy, --hash and the "Scheduler" rows. The builder completes num_blocks,
  // hash_seed, cache.groups and cache.enable_kv_events.
  SchedulerConfig scheduler;
  DeviceOptions device;
  TierOptions tiers;
  ArrivalOptions arrivals;
  KvEventOptions events;
  RunOptions run;
  FleetOptions fleet;  // the "Fleet" rows: one engine unless kvsim fleet, sweep or capacity ask

  bool kv_events_enabled() const { return events.enabled(); }
  bool tiers_enabled() const { return tiers.enabled(); }
  // The model's KV-cache groups run as vLLM's hybrid manager: a hybrid model without a
  // second tier. With a tier (a KV connector) vLLM turns its hybrid manager off and every
  // layer keeps full-attention blocks in one group; kvsim does the same.
  bool hybrid_kv_cache() const { return !tiers_enabled() && effective_model().is_hybrid(); }
  // The block size the run uses: --block-size, raised for a model with Mamba layers to the
  // attention block whose page holds one state (ModelShape::attention_block_size, vLLM's rule)
  // with num_speculative_tokens() draft tokens.
  int block_size() const;
  // K with speculative decoding on (--speculative-method), else 0: what sizes the Mamba state.
  int num_speculative_tokens() const;
  // The Mamba groups' mode: --mamba-cache-mode, else align with prefix caching on, none off.
  MambaCacheMode mamba_cache_mode() const;
  // The model's KV-cache groups at block_size() and mamba_cache_mode() (hybrid_kv_cache()).
  StatusOr<std::vector<KvCacheGroupSpec>> kv_cache_groups() const;
  // Every row's range, the parts' validate(), then the rules across parts.
  Status validate() const;
  ModelShape effective_model() const { return device.effective_model(); }
  sim::GpuSpec effective_gpu() const { return device.effective_gpu(); }
};

// One option of the table: `--name VALUE` (or a switch: `--name` alone sets it to "on").
struct ConfigOption {
  std::string_view name;
  std::string_view group;  // "Device and model", "KV cache", "Scheduler", "Run", "KV events"
  std::string_view help;
  bool is_switch = false;
  std::function<Status(ReplayConfig&, const std::string&)> set;
  std::function<std::string(const ReplayConfig&)> get;
  // The row's range, the only statement of it: an error naming the option when the field's
  // value lies outside (empty for rows without one). set() applies it to what it parsed and
  // ReplayConfig::validate() to every row, so a config built in code is held to it too.
  std::function<Status(const ReplayConfig&)> check = nullptr;
};

const std::vector<ConfigOption>& config_options();

// Sets one option from its text; the error names the option. Unknown names are an error.
Status set_option(ReplayConfig& config, std::string_view name, const std::string& value);

// Every option's current value, in table order (for run folders and reports).
std::vector<std::pair<std::string, std::string>> describe(const ReplayConfig& config);

// A GPU preset by name: built in, or NAME.gpu in the directories of `search_path`
// (colon-separated; the command line passes $KVSIM_GPU_PRESET_PATH) and then ./presets.
StatusOr<sim::GpuSpec> find_gpu(const std::string& name, const std::string& search_path, std::string* found_file);

}  // namespace kv::replay
