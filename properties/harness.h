// Property harness: runs RapidCheck properties with explicit, deterministic parameters. A
// property's cases first run together in one forked child; when that child fails or dies, the
// property runs again with each case in a forked child of its own, so that a crash (a KV_CHECK
// abort, a segfault, a hang) is a failing case that RapidCheck can shrink like any other,
// instead of the end of the test binary. (A fork per case from the start would cost more than
// the cases under AddressSanitizer, whose children inherit large heap and shadow mappings.)
// Contract:
//   1. A property is a `void()` callable that draws its inputs with `*gen` and fails with
//      RC_ASSERT/RC_FAIL; its failure description is the whole report (for the manager and
//      scheduler levels it ends with an `ops` script reproducing the shrunk case).
//   2. Parameters are a pure function of (property name, seed, case count): no wall clock.
//   3. run_isolated() returns the child's verdict; the parent's state is never touched by it.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace kv::props {

// The verdict on one case. failed_step: index of the command that failed (or was running when
// the child died), -1 when unknown or when the case passed.
struct CaseOutcome {
  bool passed = true;
  int failed_step = -1;
  std::string message;
};

// Writes a failed case's commands up to the failing one (all when failed_step < 0), one a line
// through each command's show(), the failing one marked with `marker`.
template <typename Commands>
void show_commands(std::ostream& os, const Commands& commands, int failed_step,
                   const char* marker = "    # <- fails here") {
  int i = 0;
  for (const auto& cmd : commands) {
    if (failed_step >= 0 && i > failed_step) break;
    cmd->show(os);
    os << (i == failed_step ? marker : "") << "\n";
    ++i;
  }
}

// Progress reporting from inside a case body: the step now running (for crash attribution).
void note_step(int step);

// Runs body in a forked child (unless KVSIM_PROPS_FORK=0) with a timeout, capturing its stderr.
// A child killed by a signal, timed out, or exiting abnormally is a failed outcome whose message
// names the signal and carries the captured stderr. Inside the one child that runs a whole
// property, body runs in that child under the same timeout.
CaseOutcome run_isolated(const std::function<CaseOutcome()>& body, int timeout_s = 30);

struct PropertyParams {
  std::uint64_t seed = 1;
  int cases = 100;
  int max_size = 100;
};

struct PropertyResult {
  bool passed = true;
  int cases_run = 0;
  std::string report;  // RapidCheck's failure message, with the counterexample
};

// Checks one property with the given parameters (quietly; nothing is printed): its cases in one
// child, then, when that fails, each case in its own child. A property that fails only in the
// first way fails, and says so (its cases share state).
PropertyResult check_property(const std::string& name, const std::function<void()>& property,
                              const PropertyParams& params);

// Default parameters of a property in ctest: cases = base_cases scaled by the environment
// (KVSIM_PROP_CASES overrides the count, KVSIM_PROP_SEED the seed); when RC_PARAMS is set, its
// seed/max_success/max_size win. The seed depends on the property name, so properties differ.
PropertyParams default_params(const std::string& name, int base_cases);

// A named property of one level, for `kvsim fuzz` and the test binaries.
struct PropertyDef {
  std::string name;   // "manager/classic/caching"
  std::string level;  // queue | manager | hybrid | scheduler
  std::function<void()> property;
  int base_cases = 100;  // per ctest run
};

// Every property of the project, in a fixed order.
const std::vector<PropertyDef>& all_properties();

}  // namespace kv::props
