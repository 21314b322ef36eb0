// PromptPreparer: one worker thread that expands deferred prompts and hashes their blocks
// before the scheduler asks for them, as vLLM's engine core builds each Request (block hashes
// included) on its input thread, overlapped with the model's forward pass
// (EngineCoreProc.process_input_sockets -> preprocess_add_request).
//
// The scheduler names, once per step, the waiting requests it may admit next (want()); the
// worker prepares them in that order through Request::prepare(). Whichever thread reaches a
// request first expands it; the other skips it or waits for it, so every hash and every
// decision is the one made without a worker (model/request.h, invariant 5).
// Invariants:
//   1. The worker touches only requests named by want() and not dropped since (by a later
//      want() or forget()), one at a time, through Request::prepare() alone.
//   2. After forget(r) returns, the worker neither holds nor will touch r: the owner calls it
//      before destroying a request it ever named.
//   3. The destructor stops and joins the worker; requests named but not reached stay deferred.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <span>
#include <thread>

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
  void run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<const Request*> queue_;    // guarded by mu_
  const Request* in_flight_ = nullptr;  // guarded by mu_: the one being prepared
  std::int64_t prepared_ = 0;           // guarded by mu_
  bool stop_ = false;                   // guarded by mu_
  std::thread worker_;                  // last: starts once the members above exist
};

}  // namespace kv
