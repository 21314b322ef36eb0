// DecisionLog: the canonical text of every step's scheduling decisions, and a SHA-256 digest
// of all of it. Two replays made the same decisions exactly when their digests are equal;
// this is how a simulated run and a GPU run (or two versions of kvsim) are compared.
//
// One line per executed step (docs/architecture.md, "The decision log"):
//   step N tokens T | id +n [new@C hit=H] blocks=[...] [sample]; ... | preempted=[...]
//   finished=[...] evictions=E free=F
// A hybrid run's entries read `blocks=[] groups=[g0 ids]/[g1 ids]/...` (0 = the null block);
// one-group lines never carry `groups=`, so their bytes are as before.
// and one line per rejected request: `reject ID: reason`. A fleet logs routes and digests.
// Invariants:
//   1. The digest covers every line recorded so far, in order, whether or not the text is kept.
//   2. The text depends only on the plans and the pool counters: no times, no addresses.
//   3. A line sink, when set, receives every line recorded after it was set, in order, as it
//      is recorded (kvsim replay streams decisions.log through it; the text need not be kept).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/sched/step_plan.h"

namespace kv::replay {

class DecisionLog {
 public:
  // keep_text == false: only the digest is kept (long runs).
  explicit DecisionLog(bool keep_text);
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  void record(const StepPlan& plan, std::int64_t new_evictions, std::int64_t free_blocks);
  void record_rejection(const std::string& request_id, const std::string& reason);
  // A fleet's log (replay/fleet_replay.h): `route ID -> R`, and at the end each engine's
  // digest, `replica R HEX`.
  void record_route(const std::string& request_id, int replica);
  void record_replica_digest(int replica, const std::string& digest_hex);
  void set_line_sink(std::function<void(std::string_view)> sink) { sink_ = std::move(sink); }
  const std::string& text() const { return text_; }
  std::string digest_hex() const;  // of everything recorded so far
  std::int64_t lines() const { return lines_; }

 private:
  void append(std::string_view line);
  struct Sha;
  std::unique_ptr<Sha> sha_;
  bool keep_text_;
  std::string text_;
  std::vector<char> line_;  // record()'s buffer, kept between steps so that a step allocates nothing
  std::function<void(std::string_view)> sink_;  // may be empty
  std::int64_t lines_ = 0;
};

}  // namespace kv::replay
