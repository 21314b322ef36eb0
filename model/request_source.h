// RequestSource: the seam through which a replay receives its requests (a trace reader, a
// generator, a test's list). The core defines it so that every layer above can implement or
// consume it without depending on each other.
// Contract: requests come in non-decreasing arrival order (the replay checks and refuses a
// source that breaks it); next() never blocks forever; bad input is a Status naming the
// file and record.
#pragma once

#include "model/sched/scheduler.h"  // RequestSpec
#include "model/util/status.h"

namespace kv {

class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // Fills *out and returns true, or returns false at the end; a Status on bad input.
  virtual StatusOr<bool> next(RequestSpec* out) = 0;
};

}  // namespace kv
