// PromptPreparer: one worker thread that expands deferred prompts and hashes their blocks
// before the scheduler asks for them, as vLLM's engine core builds each Request (block hashes
// included) on its input thread, overlapped with the model's forward pass
// (EngineCoreProc.process_input_sockets -> preprocess_add_request).
//
// The scheduler names, once per step, the waiting requests it may admit next (want()); the
// worker takes them in that order and hashes up to kSha256MaxLanes prompts at once, their
// chains in lockstep (BlockHasher::extend_stream): a request's blocks wait on each other,
// several requests' do not. Whichever thread reaches a request first expands it; the other
// skips it or waits for it, so every hash and every decision is the one made without a worker
// (model/request.h, invariant 5).
// Invariants:
//   1. The worker touches only requests named by want() and not dropped since (by a later
//      want() or forget()), at most kSha256MaxLanes at a time, through Request's prepare() or
//      its halves alone.
//   2. After forget(r) returns, the worker neither holds nor will touch r: the owner calls it
//      before destroying a request it ever named.
//   3. The destructor stops and joins the worker; requests named but not reached stay deferred.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "model/request.h"

namespace kv {

class PromptPreparer {
 public:
  PromptPreparer();
  ~PromptPreparer();
  PromptPreparer(const PromptPreparer&) = delete;
  PromptPreparer& operator=(const PromptPreparer&) = delete;

  // Replaces the list of requests to prepare (first = soonest needed).
  void want(std::span<const Request* const> requests);
  // Drops r from the list and waits until the worker is not preparing it.
  void forget(const Request* r);

  // Requests the worker expanded (not those the owner's thread reached first).
  std::int64_t num_prepared() const;

 private:
  class Lanes;
  void run();
  // Pops the front request, marks it in flight and claims it (false: another thread had).
  // Called with `lock` held; returns with it held.
  bool take_front(std::unique_lock<std::mutex>& lock, const Request** taken);
  // Called with mu_ held: r is done with, prepared by the worker or not.
  void land(const Request* r, bool prepared);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<const Request*> queue_;       // guarded by mu_
  std::vector<const Request*> in_flight_;  // guarded by mu_: those being prepared
  std::int64_t prepared_ = 0;              // guarded by mu_
  bool stop_ = false;                      // guarded by mu_
  std::thread worker_;                     // last: starts once the members above exist
};

}  // namespace kv
