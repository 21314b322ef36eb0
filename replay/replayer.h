// Replayer: drives arrivals -> Scheduler -> Device -> Scheduler, advancing an injected clock,
// and records a DecisionLog and per-request metrics. Pure: the request source, the device and
// the step-time predictor are seams; nothing here reads files or the wall clock.
//
//   Clock::kVirtual: advances by the predicted step time (the predictor if given, else the
//                    device's duration_ns), so decisions are identical on every backend.
//   Clock::kWall:    advances by the device's measured_ns (falls back to the prediction).
//
// Invariants:
//   1. Same source, configuration and device -> same DecisionLog bytes and digest.
//   2. Arrivals are admitted in source order once the clock reaches them; an idle engine jumps
//      to the next arrival. Each plan is executed once, by the device.
//   3. The run ends when the source is exhausted and no request is unfinished, or with an
//      error if no request can make progress (never a hang).
//   4. With an event sink, the manager's KV events are drained after every step (and once at
//      the end) and published in order, stamped with the clock; the sink never feeds back.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/device.h"
#include "model/request_source.h"
#include "model/sched/scheduler.h"
#include "model/tiers/kv_connector.h"
#include "model/util/status.h"
#include "replay/decision_log.h"
#include "replay/frontend.h"
#include "replay/kv_event_sink.h"
#include "replay/serving_metrics.h"

namespace kv::replay {

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

struct ReplayOptions {
  enum class Clock { kVirtual, kWall };
  Clock clock = Clock::kVirtual;
  bool keep_decision_text = true;
  std::int64_t max_steps = 0;  // 0 = unlimited
  bool check_invariants_every_step = false;
  bool stop_on_violation = true;
  std::int64_t max_concurrency = 0;  // requests in flight at most (0: no limit); a held
                                     // request is sent, and timed, when a slot frees
  std::vector<double> metric_percentiles = {99};
  GoodputSlo goodput;
  double overload_ttft_ms = 60000;  // median TTFT above this marks the run overloaded
  // Encoder-decoder models: the encoder input every request brings (Whisper: its
  // max_source_positions, 1500, as vLLM pads every audio input to 30 s); 0: no encoder.
  std::int64_t encoder_tokens_per_request = 0;
  // The serving front end (replay/frontend.h): the engine sees each request once the front end
  // has tokenized it, and the client sees each token once the front end has detokenized it.
  // Every figure of a request (RequestMetrics, ServingMetrics) is the client's; the clock and
  // the decision log are the engine's. Not with max_concurrency (ReplayConfig refuses it).
  FrontendModel frontend;
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

class Replayer {
 public:
  // predictor (optional) supplies the virtual clock's step time when `device` is real hardware.
  Replayer(Scheduler& scheduler, Device& device, RequestSource& source, ReplayOptions options,
           StepTimePredictor* predictor = nullptr);
  ~Replayer();

  // Observers: called after each step and each finished/rejected request (for streaming
  // CSV output and progress); may be empty.
  std::function<void(const StepRecord&)> on_step;
  std::function<void(const RequestMetrics&)> on_request_done;

  // Where the KV events go (the scheduler's cache must have been built with enable_kv_events);
  // null: events are not drained. The sink must outlive run().
  void set_event_sink(KvEventSink* sink) { event_sink_ = sink; }

  StatusOr<ReplaySummary> run();
  const DecisionLog& log() const { return log_; }
  // Every decision-log line, as it is recorded (streaming it to a file); may be empty.
  void set_decision_sink(std::function<void(std::string_view)> sink) { log_.set_line_sink(std::move(sink)); }

 private:
  struct Run;  // the state of one run() (replay/replayer.cc)

  Status pull_next(Run& r);
  Status admit_arrivals(Run& r);
  void request_done(Run& r, const RequestMetrics& m);
  void note_first_schedule(Run& r, const StepPlan& plan);
  StepRecord execute(Run& r, const StepPlan& plan, bool* stop);
  void apply_tokens(Run& r, const StepPlan& plan, const StepResult& result, StepRecord& rec);
  void finish(Run& r);
  void serving_metrics(Run& r);
  Status publish_events(const Run& r, std::int64_t step);
  void record_groups(Run& r, StepRecord& rec);

  Scheduler& scheduler_;
  Device& device_;
  RequestSource& source_;
  ReplayOptions options_;
  StepTimePredictor* predictor_;
  DecisionLog log_;
  KvEventSink* event_sink_ = nullptr;
};

}  // namespace kv::replay
