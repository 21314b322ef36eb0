// The figures of a replay: per request (RequestMetrics), per step (StepRecord) and over the run
// (ReplaySummary). Plain data: the Replayer (replay/replayer.h) fills them, a fleet
// (replay/fleet_replay.h) adds those of its engines, reports and the Python module read them.
// Invariants: times are on the replay's clock (microseconds unless the name says otherwise);
// counts are never negative; a figure that does not apply keeps its zero (or -1 where noted).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/device.h"
#include "model/kv_cache_manager.h"
#include "model/tiers/kv_connector.h"
#include "model/types.h"
#include "replay/serving_metrics.h"

namespace kv::replay {
// num / den, or 0 when den is 0 (a rate over nothing, e.g. a hit rate without lookups).
inline double rate_or_zero(std::int64_t num, std::int64_t den) {
  return den > 0 ? static_cast<double>(num) / static_cast<double>(den) : 0.0;
}

struct RequestMetrics {
  RequestId id;
  std::int64_t arrival_us = 0;
  std::int64_t first_token_us = -1;
  std::int64_t last_token_us = -1;
  std::int64_t finish_us = -1;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t cached_tokens = 0;  // prefix-cache hits at first scheduling
  std::int64_t tier_tokens = 0;    // second-tier hits at first scheduling (docs/tiers.md)
  int preemptions = 0;
  std::string status;  // finished_length, finished_max_model_len, rejected, ...
  std::string reject_reason;
};

struct StepRecord {
  std::int64_t step = 0;
  std::int64_t start_us = 0;
  std::int64_t duration_ns = 0;
  std::int64_t measured_ns = -1;
  std::int64_t predicted_ns = 0;
  int num_requests = 0;
  std::int64_t prefill_tokens = 0;  // tokens of requests still in their prompt
  std::int64_t decode_tokens = 0;
  std::int64_t cached_tokens = 0;  // prefix-cache hit tokens of newly scheduled requests
  int running = 0, waiting = 0, preempted = 0, finished = 0;
  double kv_usage = 0;
  std::int64_t free_blocks = 0;
  std::int64_t evictions_total = 0;
  DeviceCounters counters;
  std::vector<std::int64_t> group_blocks_in_use;  // hybrid only: real blocks held, per group
};

// One KV-cache group's figures over a hybrid run (summaries of one-group runs have none).
struct GroupFigures {
  std::string spec;                     // describe(KvCacheSpec): "full", "sliding_window(128)"
  std::int64_t peak_blocks_in_use = 0;  // real blocks the running requests held, after a step
  double mean_blocks_in_use = 0;        // the same, averaged over steps
  std::int64_t hit_tokens = 0;          // real hit blocks reused * block size
};

// Speculative decoding, vLLM's spec-decoding metrics (SpecDecodingStats) over the run: drafts
// (one per request and step that verified drafts), draft tokens verified (padding included),
// accepted tokens, and per draft position how many were accepted.
struct SpecDecodingFigures {
  int num_speculative_tokens = 0;  // K; 0: speculation off (no figure is reported)
  std::int64_t num_drafts = 0, num_draft_tokens = 0, num_accepted_tokens = 0;
  std::vector<std::int64_t> accepted_per_position;  // K entries
  double acceptance_rate() const {                  // accepted / draft tokens
    return num_draft_tokens > 0 ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens) : 0;
  }
  double mean_acceptance_length() const {  // 1 + accepted / drafts (vLLM's)
    return 1 + (num_drafts > 0 ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_drafts) : 0);
  }
  double position_rate(std::size_t i) const {  // accepted at position i / drafts
    return num_drafts > 0 ? static_cast<double>(accepted_per_position[i]) / static_cast<double>(num_drafts) : 0;
  }
};

// Percentiles in microseconds, model/util/percentile.h's definition, rounded to the microsecond.
struct LatencyPercentiles {
  std::int64_t p50 = 0, p90 = 0, p99 = 0, max = 0, count = 0;
};

struct ReplaySummary {
  std::int64_t requests_total = 0, requests_finished = 0, requests_rejected = 0;
  std::int64_t prompt_tokens = 0, output_tokens = 0;
  std::int64_t steps = 0, preemptions = 0, recomputed_tokens = 0, evictions = 0;
  // Encoder-decoder models: each request's encoder input positions, and those run over the
  // replay (one per admission, resumptions after a preemption included); 0 otherwise.
  std::int64_t encoder_tokens_per_request = 0, encoder_tokens = 0;
  PrefixCacheStats cache;
  double hit_rate = 0;  // vLLM's counter: hits / queries over every lookup
                        // (a waiting head is looked up at every attempt)
  // Per request, counted once: prefix-cache hit tokens when first scheduled over prompt tokens.
  std::int64_t admitted_prompt_tokens = 0, admitted_hit_tokens = 0;
  double request_hit_rate = 0;
  std::int64_t sim_time_us = 0;        // clock at the end
  std::int64_t measured_total_ns = 0;  // sum of measured step times (-1 if none measured)
  std::int64_t prompt_tokens_computed = 0;
  LatencyPercentiles ttft_us, tpot_us, e2e_us;
  ServingMetrics serving;  // vllm bench serve's figures (replay/serving_metrics.h)
  OverloadVerdict overload;
  std::vector<std::string> violations;
  std::string digest;
  std::vector<GroupFigures> groups;  // hybrid runs only, in group order
  // Second KV-cache tiers (docs/tiers.md); empty without --host-cache-bytes.
  std::vector<TierFigures> tiers;         // host, then disk
  std::int64_t admitted_tier_tokens = 0;  // per request once: tier hits when first scheduled
  double tier_hit_rate = 0;               // admitted_tier_tokens / admitted_prompt_tokens
  double combined_hit_rate = 0;           // (admitted hit + tier tokens) / admitted prompt tokens
  std::int64_t tier_load_ns = 0;          // copy time of every load
  std::int64_t tier_stall_ns = 0;         // what loads and saves added to the steps' durations
  SpecDecodingFigures spec;               // speculative decoding; K == 0 without it
};

}  // namespace kv::replay
