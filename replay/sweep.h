// Sweep: prefix-cache hit rate (and, in serving mode, latency and throughput) against KV-cache
// capacity, for every combination of trace, capacity, eviction policy and block size.
//
//   sequence mode: each request of the trace, in arrival order, is looked up, allocated (whole
//                  prompt) and freed on a fresh KvCacheManager of that capacity -- the cache
//                  alone, as the Mooncake paper's Figure 9 measures it. A prompt longer than
//                  the cache is looked up (counted) but not stored (unfit_requests).
//   serving mode:  a full replay (scheduler + simulated device) per configuration, built
//                  from a base ReplayConfig by the replay builder.
// Invariants:
//   1. Configurations are independent; results are kept by configuration index, so the output
//      is the same bytes whatever the number of worker threads.
//   2. Each configuration streams its trace (one request in memory at a time per worker).
//   3. A pool larger than every block the trace ever allocates behaves as an infinite cache:
//      the pool is capped at that size (pool_blocks), which changes no decision or counter.
//   4. Sequence mode adds, unless told not to, one row per (trace, block size, capacity) with
//      policy "optimum": the offline Belady bound (traces/prefix_optimum.h) for a cache of the
//      pool's usable blocks, after the trace's policy rows. No policy's hit rate exceeds it.
// A capacity of C tokens gives ceil(C / block_size) + 1 blocks (the null block), as
// `kvsim replay --kv-cache-tokens C` sizes its pool.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/util/status.h"
#include "replay/replay_config.h"

namespace kv::replay {

struct SweepConfig {
  std::string trace;
  std::int64_t capacity_tokens = 0;
  // lru | lru-unhashed-first (vLLM's queue in either free order) | lfu | slru | leaf-lru |
  // priority (docs/policies.md); "optimum" only in result rows (invariant 4).
  std::string policy = "lru";
  int block_size = 16;
};

struct SweepServing {
  std::int64_t requests_finished = 0, requests_rejected = 0, preemptions = 0;
  std::int64_t ttft_p50_us = 0, ttft_p90_us = 0, tpot_p50_us = 0, tpot_p90_us = 0;
  std::int64_t e2e_p50_us = 0, e2e_p90_us = 0;
  double output_tokens_per_s = 0, requests_per_s = 0;
  std::int64_t simulated_us = 0;
};

struct SweepPoint {
  SweepConfig config;
  std::string mode;              // "sequence" or "serving"
  std::int64_t pool_blocks = 0;  // blocks used, null block included (invariant 3)
  std::int64_t lookups = 0, queries = 0, hits = 0, evictions = 0;
  std::int64_t requests = 0, unfit_requests = 0;
  double hit_rate = 0;  // hits / queries
  bool has_serving = false;
  SweepServing serving;
};

struct SweepOptions {
  std::vector<std::string> traces;
  std::vector<std::int64_t> capacities;  // tokens
  std::vector<std::string> policies = {"lru"};
  std::vector<int> block_sizes = {16};
  std::string mode = "sequence";
  bool optimum = true;     // sequence mode: add the "optimum" rows (invariant 4)
  std::int64_t limit = 0;  // sequence mode: the first `limit` requests only (0: all)
  int jobs = 1;
  ReplayConfig serving;  // serving mode: every other replay setting
  // Called (from worker threads, serialized) after each configuration.
  std::function<void(std::size_t done, std::size_t total)> on_progress;
};

// Every configuration in output order: trace, then policy, then block size, then capacity.
std::vector<SweepConfig> sweep_configs(const SweepOptions& options);

StatusOr<std::vector<SweepPoint>> run_sweep(const SweepOptions& options);

// One sequence-mode configuration. pool_blocks == 0: sized from the capacity alone.
StatusOr<SweepPoint> run_sequence(const SweepConfig& config, std::int64_t pool_blocks = 0, std::int64_t limit = 0);

// The "optimum" row of `trace` at a capacity of capacity_tokens (invariant 4).
StatusOr<std::vector<SweepPoint>> optimum_points(const std::string& trace, int block_size,
                                                 const std::vector<std::int64_t>& capacities, std::int64_t limit = 0);

// The sweep's policy names ("lru, lru-unhashed-first, lfu, ...").
std::string sweep_policy_names();

// One serving-mode configuration: a replay on the simulator of `base` with this
// configuration's trace, block size, free order and a pool of `pool_blocks` blocks.
StatusOr<SweepPoint> run_serving(const ReplayConfig& base, const SweepConfig& config, std::int64_t pool_blocks);

// The stem of a trace path, as the CSV and the plots label it.
std::string trace_label(const std::string& path);

// Blocks that `trace` allocates in total at `block_size` (prompts only, or prompts plus
// outputs), for invariant 3.
struct TraceBlockTotals {
  std::int64_t prompt_blocks = 0, sequence_blocks = 0;
};
StatusOr<TraceBlockTotals> trace_block_totals(const std::string& trace, int block_size, std::int64_t limit = 0);

// "1e4,3e4,1M,2.5G" (suffixes k, M, G) or a log range "1e4:1e9:3" (points per decade).
StatusOr<std::vector<std::int64_t>> parse_capacities(const std::string& text);

std::string sweep_csv(const std::vector<SweepPoint>& points);

}  // namespace kv::replay
