// Replayer: drives arrivals -> Scheduler -> Device -> Scheduler, advancing an injected clock,
// and records a DecisionLog and per-request metrics. Pure: the request source and the device
// are seams; nothing here reads files or the wall clock.
//
//   clock kVirtual: advances by the predicted step time (the predictor device if given, else
//                   the device's duration_ns), so decisions are identical on every backend.
//   clock kWall:    advances by the device's measured_ns (falls back to duration_ns).
//
// Invariants:
//   1. Same source, configuration and device -> same DecisionLog bytes and digest.
//   2. Arrivals are admitted in source order once the clock reaches them; an idle engine jumps
//      to the next arrival.
//   3. The run ends when the source is exhausted and no request is unfinished, or with an
//      error if no request can make progress (never a hang).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/device.h"
#include "model/scheduler.h"
#include "model/status.h"

namespace kv {

// Yields requests in non-decreasing arrival order.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // Fills *out and returns true, or returns false at the end; a Status on bad input.
  virtual StatusOr<bool> next(RequestSpec* out) = 0;
};

// The canonical text of every step's decisions, and a SHA-256 digest of all of it.
class DecisionLog {
 public:
  // keep_text == false: only the digest is kept (for long runs).
  explicit DecisionLog(bool keep_text);
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  // Appends the line for one executed step.
  void record(const StepPlan& plan, std::int64_t new_evictions, std::int64_t free_blocks);
  void record_rejection(const std::string& request_id, const std::string& reason);
  const std::string& text() const { return text_; }
  std::string digest_hex() const;  // of everything recorded so far
  std::int64_t lines() const { return lines_; }

 private:
  void append(const std::string& line);
  struct Sha;
  Sha* sha_;
  bool keep_text_;
  std::string text_;
  std::int64_t lines_ = 0;
};

struct RequestMetrics {
  RequestId id;
  std::int64_t arrival_us = 0;
  std::int64_t first_token_us = -1;
  std::int64_t finish_us = -1;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t cached_tokens = 0;  // prefix-cache hits at first scheduling
  int preemptions = 0;
  std::string status;              // finished_length, finished_max_model_len, rejected, ...
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
  std::int64_t cached_tokens = 0;   // prefix-cache hit tokens of newly scheduled requests
  int running = 0, waiting = 0, preempted = 0, finished = 0;
  double kv_usage = 0;
  std::int64_t free_blocks = 0;
  std::int64_t evictions_total = 0;
  DeviceCounters counters;
};

struct ReplayOptions {
  enum class Clock { kVirtual, kWall };
  Clock clock = Clock::kVirtual;
  bool keep_decision_text = true;
  std::int64_t max_steps = 0;           // 0 = unlimited
  bool check_invariants_every_step = false;
  bool stop_on_violation = true;
};

struct LatencyPercentiles {
  std::int64_t p50 = 0, p90 = 0, p99 = 0, max = 0, count = 0;
};

struct ReplaySummary {
  std::int64_t requests_total = 0, requests_finished = 0, requests_rejected = 0;
  std::int64_t prompt_tokens = 0, output_tokens = 0;
  std::int64_t steps = 0, preemptions = 0, recomputed_tokens = 0, evictions = 0;
  PrefixCacheStats cache;
  double hit_rate = 0;                  // vLLM's counter: hits / queries over every lookup
                                        // (a waiting head is looked up at every attempt)
  // Per request, counted once: prefix-cache hit tokens when first scheduled over prompt tokens.
  std::int64_t admitted_prompt_tokens = 0, admitted_hit_tokens = 0;
  double request_hit_rate = 0;
  std::int64_t sim_time_us = 0;         // clock at the end
  std::int64_t measured_total_ns = 0;   // sum of measured step times (-1 if none measured)
  std::int64_t prompt_tokens_computed = 0;
  LatencyPercentiles ttft_us, tpot_us, e2e_us;
  std::vector<std::string> violations;
  std::string digest;
};

class Replayer {
 public:
  // predictor (optional) supplies duration_ns for the virtual clock when `device` is real
  // hardware; it sees the same plans.
  Replayer(Scheduler& scheduler, Device& device, RequestSource& source, ReplayOptions options,
           Device* predictor = nullptr);

  // Observers: called after each step and each finished/rejected request (for streaming
  // CSV output and progress); may be empty.
  std::function<void(const StepRecord&)> on_step;
  std::function<void(const RequestMetrics&)> on_request_done;

  StatusOr<ReplaySummary> run();
  const DecisionLog& log() const { return log_; }

 private:
  Scheduler& scheduler_;
  Device& device_;
  RequestSource& source_;
  ReplayOptions options_;
  Device* predictor_;
  DecisionLog log_;
};

// Percentile by nearest rank over a copy of `values` (p in [0, 100]); 0 for an empty set.
std::int64_t percentile(std::vector<std::int64_t> values, double p);

}  // namespace kv
