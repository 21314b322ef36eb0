// A replay whose prompts a second thread prepares (--prepare-prompts on, model/prompt_preparer.h)
// makes every decision of the one-thread replay: Mooncake's block-referenced prompts, sent all
// at once into a pool small enough to preempt, give the same digest and figures either way.
// Runs under ThreadSanitizer too (the tsan preset).
#include <gtest/gtest.h>

#include <string>

#include "replay/fleet_replay.h"

namespace kv {
namespace {

using namespace kv::replay;

ReplaySummary replay_with(const std::string& prepare) {
  ReplayConfig c;
  c.run.replay.keep_decision_text = false;
  for (const auto& [name, value] :
       std::initializer_list<std::pair<const char*, std::string>>{{"model", "llama3-8b"},
                                                                  {"kv-cache-tokens", "150000"},
                                                                  {"limit", "150"},
                                                                  {"request-rate", "inf"},
                                                                  {"prepare-prompts", prepare}}) {
    const Status s = set_option(c, name, value);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  auto summary = run_replay_or_fleet(c, "traces/data/mooncake_conversation.kvtrace");
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return summary.ok() ? *summary : ReplaySummary{};
}

TEST(PreparedReplay, TheSecondThreadChangesNoDecision) {
  const ReplaySummary one = replay_with("off");
  const ReplaySummary two = replay_with("on");
  ASSERT_FALSE(one.digest.empty());
  EXPECT_EQ(two.digest, one.digest);
  EXPECT_EQ(two.steps, one.steps);
  EXPECT_EQ(two.requests_finished, one.requests_finished);
  EXPECT_EQ(two.output_tokens, one.output_tokens);
  EXPECT_EQ(two.sim_time_us, one.sim_time_us);
  EXPECT_GT(one.preemptions, 0);  // the pool is small enough to preempt
  EXPECT_TRUE(two.violations.empty());
}

}  // namespace
}  // namespace kv
