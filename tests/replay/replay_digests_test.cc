// Pinned decision-log digests: the bundled traces replayed on the simulated H100 as the demo
// and the benchmarks run them. A change to the core, the scheduler or the replay layer that
// moves any decision of these runs changes a digest here. A digest changes only with a rule
// that changes on purpose (say which in the commit, and update the pin).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "replay/replay_builder.h"

namespace kv {
namespace {

using namespace kv::replay;

std::string digest_of(const std::string& trace, const std::vector<std::pair<std::string, std::string>>& options) {
  ReplayConfig c;
  c.run.replay.keep_decision_text = false;
  for (const auto& [name, value] : options) {
    const Status s = set_option(c, name, value);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  auto built = build_replay(c, trace);
  EXPECT_TRUE(built.ok()) << built.status().message();
  if (!built.ok()) return "";
  auto summary = built->make_replayer(c)->run();
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  if (!summary.ok()) return "";
  EXPECT_TRUE(summary->violations.empty());
  return summary->digest;
}

const char* kShareGpt = "traces/data/sharegpt_sample.kvtrace";
const char* kMooncake = "traces/data/mooncake_conversation.kvtrace";

TEST(ReplayDigests, DemoWithPrefixCachingOnAndOff) {
  EXPECT_EQ(digest_of(kShareGpt, {{"model", "llama3-8b"}, {"prefix-caching", "on"}}),
            "7ef6641f8a5f1a0ad99008a927d0c8d0ab01fdae0f9892e509fb6c5774ac2b35");
  EXPECT_EQ(digest_of(kShareGpt, {{"model", "llama3-8b"}, {"prefix-caching", "off"}}),
            "1a881a6b65804e37bba97972c648f65b1f0dcdd81881c1b25a3f060ca3b798e6");
}

TEST(ReplayDigests, HybridModelOverTwoGroups) {
  EXPECT_EQ(digest_of(kShareGpt, {{"model", "gpt-oss-20b"}}),
            "34c0a02b773c3bbbbc37922862cd6989caa025bad595fd979519cf3520c71d41");
}

TEST(ReplayDigests, FirstThousandMooncakeRequests) {
  EXPECT_EQ(digest_of(kMooncake, {{"model", "llama3-8b"}, {"kv-cache-tokens", "1000000"}, {"limit", "1000"}}),
            "a0f8b15efbde7808cd50d6358acda1cc05a7d8c015dc5018bcbb4ac0f1f99435");
}

}  // namespace
}  // namespace kv
