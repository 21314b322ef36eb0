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
//   5. run() is begin(), advance() while next_time_ns() has a value, then end(): a caller that
//      drives those steps itself (a fleet, replay/fleet_replay.h) gets the same decisions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
#include "replay/latency_record.h"
#include "replay/replay_summary.h"
#include "replay/serving_metrics.h"

namespace kv::replay {

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
  // the decision log are the engine's. With max_concurrency the client is a closed loop: a
  // request holds its slot until its last token reaches the client, and the next request is
  // sent then (in source order), reaching the engine after the front end's request lane.
  FrontendModel frontend;
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

  // The same run, one loop iteration at a time (invariant 5).
  Status begin();
  // When this engine acts next: its clock while it has requests to schedule, the next arrival's
  // time while idle; none when it has nothing to do (done, or waiting for its source to grow).
  std::optional<std::int64_t> next_time_ns() const;
  // One iteration: admits the arrivals the clock has reached, then runs one step (or, idle,
  // jumps the clock to the next arrival). Call only while next_time_ns() has a value.
  Status advance();
  StatusOr<ReplaySummary> end();
  std::int64_t now_ns() const;
  // Keeps the run open when the source reports its end: it may grow later (a fleet engine's
  // queue). An engine with requests none of which can be scheduled then waits for the next
  // one instead of failing (stalled()); source_grew() hands it the new arrival.
  void keep_source_open() { source_open_ = true; }
  Status source_grew();
  // While stalled: the error a lone engine would have stopped with; else ok.
  Status stall_status() const;
  // The client-side record of the requests that ended (a fleet merges its engines').
  const LatencyRecord& latency_record() const;

  const DecisionLog& log() const { return log_; }
  // Every decision-log line, as it is recorded (streaming it to a file); may be empty.
  void set_decision_sink(std::function<void(std::string_view)> sink) { log_.set_line_sink(std::move(sink)); }

 private:
  struct Run;  // the state of one run (replay/replayer.cc)

  Status pull_next(Run& r);
  Status admit_arrivals(Run& r);
  bool send_through_frontend(Run& r);
  // --max-concurrency through a front end: the client is a closed loop (send_through_frontend).
  bool closed_loop_frontend() const { return options_.max_concurrency > 0 && options_.frontend.enabled(); }
  void request_done(Run& r, const RequestMetrics& m);
  Status no_progress(Run& r, const StepPlan& plan);
  void note_first_schedule(Run& r, const StepPlan& plan);
  StepRecord execute(Run& r, const StepPlan& plan, bool* stop);
  void apply_tokens(Run& r, const StepPlan& plan, const StepResult& result, StepRecord& rec);
  void finish(Run& r);
  Status publish_events(const Run& r, std::int64_t step);
  void record_groups(Run& r, StepRecord& rec);

  Scheduler& scheduler_;
  Device& device_;
  RequestSource& source_;
  ReplayOptions options_;
  StepTimePredictor* predictor_;
  DecisionLog log_;
  KvEventSink* event_sink_ = nullptr;
  bool source_open_ = false;
  std::unique_ptr<Run> run_;
};

}  // namespace kv::replay
