// Running a generated command sequence against a system under test, step by step, with the
// verdict in a CaseOutcome (so it can cross a fork) instead of an exception.
// Invariants:
//   1. run_commands() runs exactly the prefix of `commands` up to and including the first
//      failing one; failed_step names it.
//   2. run_on_new_sut() also turns a failure while building the system under test (an RC_ASSERT
//      in its constructor) into a failed outcome, with failed_step -1.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <exception>
#include <string>

#include "properties/harness.h"

namespace kv::props {

// A command's precondition. RC_PRE decomposes its expression, which defeats the short-circuit
// of && (`r != nullptr && r->x` would dereference null): conditions go through a plain bool.
inline void require(bool ok) { RC_PRE(ok); }

template <typename Cmds, typename Model, typename Sut>
CaseOutcome run_commands(const Cmds& commands, const Model& initial, Sut& sut) {
  CaseOutcome o;
  Model state = initial;
  int i = 0;
  try {
    for (const auto& command : commands) {
      note_step(i);
      command->checkPreconditions(state);
      command->run(state, sut);
      command->apply(state);
      ++i;
    }
  } catch (const rc::detail::CaseResult& r) {
    if (r.type == rc::detail::CaseResult::Type::Failure) {
      o.passed = false;
      o.failed_step = i;
      o.message = r.description;
    }
  } catch (const std::exception& e) {
    o.passed = false;
    o.failed_step = i;
    o.message = std::string("exception: ") + e.what();
  }
  return o;
}

// Builds a Sut from `args` and runs the commands against it.
template <typename Sut, typename Cmds, typename Model, typename... Args>
CaseOutcome run_on_new_sut(const Cmds& commands, const Model& initial, const Args&... args) {
  try {
    Sut sut(args...);
    return run_commands(commands, initial, sut);
  } catch (const rc::detail::CaseResult& e) {
    CaseOutcome o;
    o.passed = false;
    o.message = e.description;
    return o;
  }
}

}  // namespace kv::props
