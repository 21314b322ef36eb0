// The vLLM-recorded speculative-decoding scenarios (tests/golden-spec/*.json, found at run
// time): every step of every file must match exactly, the 14 whose KV cache has a Mamba
// group (hybrid full attention + Mamba, "align" mode) included. Plus the runner's errors for
// malformed speculative files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/scheduler_scenario.h"
#include "tests/ops/golden_files.h"

namespace kv::ops {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(KVSIM_SOURCE_DIR) / "tests/golden-spec";

// The file's config lists a KV-cache group of type mamba.
bool needs_mamba(const fs::path& path) {
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("config") || !doc["config"].contains("kv_cache_groups")) return false;
  const nlohmann::json& groups = doc["config"]["kv_cache_groups"];
  return groups.is_array() && std::any_of(groups.begin(), groups.end(), [](const nlohmann::json& g) {
           return g.is_object() && g.value("type", "") == "mamba";
         });
}

TEST(SpecGoldenTest, FindsTheScenarioFiles) { EXPECT_EQ(golden::scenario_files(kDir).size(), 61u) << "in " << kDir; }

class SpecGolden : public testing::TestWithParam<std::string> {};

TEST_P(SpecGolden, MatchesVllm) {
  const fs::path path = kDir / GetParam();
  StatusOr<ScenarioOutcome> outcome = run_scheduler_scenario(path.string());
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_TRUE(outcome->ok) << path << ": " << to_string(*outcome);
  EXPECT_FALSE(outcome->refused) << path << ": every file of the set is a valid vLLM configuration";
}

INSTANTIATE_TEST_SUITE_P(Files, SpecGolden, testing::ValuesIn(golden::scenario_files(kDir)), golden::test_name);

// Exactly the 14 files of the hybrid set (18..23, 54..61) have a Mamba group.
TEST(SpecGoldenTest, OnlyTheHybridFilesNeedMamba) {
  std::vector<std::string> mamba;
  for (const std::string& f : golden::scenario_files(kDir)) {
    if (needs_mamba(kDir / f)) mamba.push_back(f.substr(0, 2));
  }
  EXPECT_EQ(mamba, (std::vector<std::string>{"18", "19", "20", "21", "22", "23", "54", "55", "56", "57", "58", "59",
                                             "60", "61"}));
}

// A copy of 01 (EAGLE, K = 3) with one edit, written to a temporary file.
std::string edited_copy(const std::string& from, const std::string& to, const std::string& name) {
  return golden::edited_copy(kDir / "01_verify_rollback_keeps_blocks.json", from, to, name);
}

TEST(SpecScenarioTest, AnUnknownMethodIsAnErrorNamingTheField) {
  const std::string path = edited_copy("\"spec_method\":\"eagle\"", "\"spec_method\":\"lookahead\"", "kv_spec_m.json");
  EXPECT_EQ(run_scheduler_scenario(path).status().message(),
            path +
                ": config.spec_method: must be eagle, eagle3, mtp, dspark, dflash, draft_model, ngram, suffix or "
                "medusa, got 'lookahead'");
}

TEST(SpecScenarioTest, AcceptedForAnUnknownRequestIsAnError) {
  const std::string path = edited_copy("\"accepted\":{\"a\":3}", "\"accepted\":{\"z\":3}", "kv_spec_z.json");
  EXPECT_EQ(run_scheduler_scenario(path).status().message(), path + ": steps[1].accepted.z: unknown request");
}

TEST(SpecScenarioTest, MoreDraftsThanKIsAnError) {
  const std::string path = edited_copy("\"drafts\":{\"a\":3}", "\"drafts\":{\"a\":4}", "kv_spec_k.json");
  EXPECT_EQ(run_scheduler_scenario(path).status().message(), path + ": steps[0].drafts.a: must be from 0 to 3, got 4");
}

TEST(SpecScenarioTest, AMissingInputIsAnError) {
  const std::string path = edited_copy("\"accepted\":{},", "", "kv_spec_missing.json");
  EXPECT_EQ(run_scheduler_scenario(path).status().message(), path + ": steps[0].accepted: missing");
}

TEST(SpecScenarioTest, AStopTokenThatIsNotAnIdIsAnError) {
  const std::string path =
      edited_copy("\"output_start\":90000}", "\"output_start\":90000,\"stop_token_ids\":[\"x\"]}", "kv_spec_stop.json");
  EXPECT_EQ(run_scheduler_scenario(path).status().message(),
            path + ": requests[0].stop_token_ids: must hold token ids (integers >= 0), got \"x\"");
}

TEST(SpecScenarioTest, ADerivedNumberKvsimDisagreesWithIsAMismatch) {
  const std::string path =
      edited_copy("\"num_lookahead_tokens\":3", "\"num_lookahead_tokens\":2", "kv_spec_lookahead.json");
  StatusOr<ScenarioOutcome> outcome = run_scheduler_scenario(path);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_EQ(to_string(*outcome), "config.num_lookahead_tokens: expected 2, got 3");
}

TEST(SpecScenarioTest, AWrongAcceptanceShowsInTheExpects) {
  // Step 1 accepts all 3 drafts of a; claim 2: a gets 3 tokens instead of 4.
  const std::string path = edited_copy("\"accepted\":{\"a\":3}", "\"accepted\":{\"a\":2}", "kv_spec_acc.json");
  StatusOr<ScenarioOutcome> outcome = run_scheduler_scenario(path);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_EQ(to_string(*outcome), "step 1: expect.new_tokens: expected [[\"a\",4]], got [[\"a\",3]]");
}

}  // namespace
}  // namespace kv::ops
