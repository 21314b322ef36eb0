// ReplayBuilder: turns a validated ReplayConfig into a wired run -- request source, scheduler
// with its KV-cache manager, device (the simulator or the CUDA backend) and, beside real
// hardware, the simulator's step-time predictor -- plus the run's full description for the
// run folder. The one place where a replay is assembled: `kvsim replay`, serving sweeps,
// calibration's held-out check, tests and properties all come through here.
// Invariants:
//   1. The predictor's CUDA-graph mode is the mode the device really runs (the GPU backend runs
//      FULL_DECODE_ONLY, or NONE), so predicted and measured steps are comparable.
//   2. The scheduler's pool and the device's pool have the same number of blocks.
//   3. The core queues KV events exactly when the run has an event sink; nothing else differs.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/device.h"
#include "model/request_source.h"
#include "model/sched/scheduler.h"
#include "replay/kv_event_sink.h"
#include "replay/replay_config.h"
#include "replay/replayer.h"
#include "sim/fault_injection.h"
#include "sim/sim_device.h"

namespace kv::replay {

struct ReplayRun {
  std::unique_ptr<RequestSource> source;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Device> device;
  std::unique_ptr<StepTimePredictor> predictor;                  // set only beside real hardware
  std::unique_ptr<KvEventSink> events;                           // set when --kv-events or --kv-events-zmq is given
  sim::FaultInjectingDevice* faults = nullptr;                   // `device` itself when --inject-fault is set
  std::vector<std::pair<std::string, std::string>> description;  // every effective setting

  ReplayOptions replay_options(const ReplayConfig& config) const;
  // A Replayer over this run's parts (the run must outlive it).
  std::unique_ptr<Replayer> make_replayer(const ReplayConfig& config);
};

// Opens `trace_path` (first config.limit requests) and wires the run.
StatusOr<ReplayRun> build_replay(const ReplayConfig& config, const std::string& trace_path);

// Wires a run over a source the caller made; `hash_seed` is the trace header's.
StatusOr<ReplayRun> build_replay(const ReplayConfig& config, std::unique_ptr<RequestSource> source,
                                 const std::string& hash_seed, const std::string& trace_source);

// The simulator's options for `config`, with the given graph mode and verification.
sim::SimOptions sim_options(const ReplayConfig& config, CudaGraphMode mode, sim::VerifyMode verify);

// The second-tier connector `config` asks for (--host-cache-bytes), or null.
std::unique_ptr<KvConnector> make_tier_connector(const ReplayConfig& config);

// The scheduler's configuration for `config` with a pool of `num_blocks` blocks.
SchedulerConfig scheduler_config(const ReplayConfig& config, std::int64_t num_blocks, const std::string& hash_seed);

// The event sink `config` asks for (JSONL file, ZeroMQ publisher, or both), or null.
StatusOr<std::unique_ptr<KvEventSink>> make_event_sink(const ReplayConfig& config);

// The hashes of every block cached in `pool` at this moment, lowercase hex, sorted (a hash
// cached under two blocks is listed twice): what a subscriber rebuilds from the events. With
// `with_group` each entry is "HEX GROUP", the KV-cache group it is cached for (hybrid models).
std::vector<std::string> cached_block_hashes(const BlockPool& pool, bool with_group = false);
// The same for the manager a scheduler runs (the group is listed for a hybrid model).
std::vector<std::string> cached_block_hashes(const Scheduler& scheduler);

// The pool size `config` asks for, and how it was decided ("--num-blocks", "--kv-cache-tokens",
// "gpu memory").
StatusOr<std::pair<std::int64_t, std::string>> pool_blocks(const ReplayConfig& config);

}  // namespace kv::replay
