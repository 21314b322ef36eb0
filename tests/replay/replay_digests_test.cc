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
            "ced7dc72353a834473166db0a3907edf97afbc7eda18bdba853be534eb60aab7");
  EXPECT_EQ(digest_of(kShareGpt, {{"model", "llama3-8b"}, {"prefix-caching", "off"}}),
            "91104f37f1f30d10f1ee183346a186799103c2a7698f18fb9d4b7abfb3521957");
}

TEST(ReplayDigests, HybridModelOverTwoGroups) {
  EXPECT_EQ(digest_of(kShareGpt, {{"model", "gpt-oss-20b"}}),
            "63ee7982f75184270c9cc13f174091379407a43aca3f141df94a6a1c321c4fe8");
}

TEST(ReplayDigests, FirstThousandMooncakeRequests) {
  EXPECT_EQ(digest_of(kMooncake, {{"model", "llama3-8b"}, {"kv-cache-tokens", "1000000"}, {"limit", "1000"}}),
            "30f0a5ee95c0e1580ff1f84d0abf18a21e59244f1de65ce26ab52e35965d7984");
}

}  // namespace
}  // namespace kv
