// The property harness (properties/harness.h): a property's cases run together in one child;
// a failure, a crash or a hang there sends the property to one child per case, where a crash is
// a failing case that RapidCheck shrinks; a property that fails only with its cases together is
// reported as such.
#include "properties/harness.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace kv::props {
namespace {

PropertyParams params(int cases) {
  PropertyParams p;
  p.seed = 7;
  p.cases = cases;
  return p;
}

// Runs `body` on a drawn value through run_isolated, as the project's properties do.
template <typename Body>
void isolated_case(int x, Body body) {
  const CaseOutcome o = run_isolated([&] {
    body(x);
    return CaseOutcome{};
  });
  if (!o.passed) RC_FAIL(o.message + "\nx = " + std::to_string(x));
}

TEST(PropertyHarness, PassingPropertyRunsEveryCase) {
  const PropertyResult r = check_property(
      "passes", [] { isolated_case(*rc::gen::inRange(0, 100), [](int) {}); }, params(50));
  EXPECT_TRUE(r.passed) << r.report;
  EXPECT_EQ(r.cases_run, 50);
}

TEST(PropertyHarness, CrashIsAShrunkFailingCase) {
  const PropertyResult r = check_property(
      "aborts from 5 up",
      [] {
        isolated_case(*rc::gen::inRange(0, 1000), [](int x) {
          if (x >= 5) std::abort();
        });
      },
      params(100));
  ASSERT_FALSE(r.passed);
  EXPECT_NE(r.report.find("the case crashed: signal 6"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("int:\n5\n"), std::string::npos) << "not shrunk to the smallest crash:\n" << r.report;
}

TEST(PropertyHarness, HangIsAFailingCase) {
  const PropertyResult r = check_property(
      "hangs",
      [] {
        const CaseOutcome o = run_isolated(
            [] {
              pause();
              return CaseOutcome{};
            },
            1);
        if (!o.passed) RC_FAIL(o.message);
      },
      params(3));
  ASSERT_FALSE(r.passed);
  EXPECT_NE(r.report.find("ran past its time limit"), std::string::npos) << r.report;
}

TEST(PropertyHarness, StateSharedAcrossCasesIsReported) {
  // Each case bumps a counter that lives in the process: with the cases together it passes 3.
  static int cases_seen = 0;
  const PropertyResult r = check_property(
      "counts its cases",
      [] {
        isolated_case(*rc::gen::inRange(0, 10), [](int) {
          if (++cases_seen > 3) RC_FAIL("more than three cases in this process");
        });
      },
      params(20));
  ASSERT_FALSE(r.passed);
  EXPECT_NE(r.report.find("passed with each case in a process of its own"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("more than three cases"), std::string::npos) << r.report;
  EXPECT_EQ(cases_seen, 0) << "the cases ran in the test's own process";
}

}  // namespace
}  // namespace kv::props
