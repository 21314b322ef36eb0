// The vLLM-recorded scheduler scenarios (tests/golden-scheduler/*.json, found at run time):
// every step of every file must match exactly; the two files with a configuration vLLM
// refuses at start-up must be refused. Plus the runner's own errors for malformed files.
#include "ops/scheduler_scenario.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/sched/scheduler.h"
#include "tests/ops/golden_files.h"

namespace kv::ops {
namespace {

namespace fs = std::filesystem;

const char kDir[] = "tests/golden-scheduler";  // ctest runs from the repository root

TEST(SchedulerGoldenTest, FindsTheScenarioFiles) {
  EXPECT_FALSE(golden::scenario_files(kDir).empty()) << "no *.json under " << kDir << " (run from the repository root)";
}

class SchedulerGolden : public testing::TestWithParam<std::string> {};

TEST_P(SchedulerGolden, MatchesVllm) {
  const std::string path = std::string(kDir) + "/" + GetParam();
  StatusOr<ScenarioOutcome> outcome = run_scheduler_scenario(path);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_TRUE(outcome->ok) << path << ": " << to_string(*outcome);
  // 09 and 10 break vLLM's pool check on purpose (their README); every other file is valid.
  const bool invalid = GetParam().starts_with("09_") || GetParam().starts_with("10_");
  EXPECT_EQ(outcome->refused, invalid) << path << ": " << to_string(*outcome);
  if (outcome->refused) {
    EXPECT_NE(outcome->refusal_reason.find("max_model_len"), std::string::npos) << outcome->refusal_reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, SchedulerGolden, testing::ValuesIn(golden::scenario_files(kDir)), golden::test_name);

// 09's configuration, which vLLM refuses (8 usable blocks, max_model_len 512), run anyway: the
// request that can never fit (x, 13 blocks) is rejected when added instead of blocking the
// queue, so y runs beside z at once and nothing ever admits x.
TEST(SchedulerScenarioTest, ARequestThatNeverFitsIsRejectedNotQueued) {
  SchedulerConfig c;
  c.cache.num_blocks = 9;
  c.cache.block_size = 16;
  c.cache.free_order = FreeOrder::kUnhashedFirst;
  c.cache.max_model_len = 512;
  c.max_num_batched_tokens = 64;
  c.max_num_seqs = 4;
  ASSERT_FALSE(c.validate().ok());
  Scheduler s(c);
  const auto request = [](const std::string& id, TokenId first, int len, int outputs) {
    RequestSpec r;
    r.id = id;
    for (int k = 0; k < len; ++k) r.prompt.push_back(first + k);
    for (int k = 0; k < outputs; ++k) r.outputs.push_back(90000 + k);
    return r;
  };
  ASSERT_TRUE(s.add_request(request("z", 50000, 20, 8)).ok());
  EXPECT_EQ(s.add_request(request("x", 51000, 200, 4)).message(), "request x: needs 13 KV blocks, the pool has 8");
  ASSERT_TRUE(s.add_request(request("y", 52000, 30, 4)).ok());
  const StepPlan first = s.schedule();
  ASSERT_EQ(first.requests.size(), 2u);
  EXPECT_EQ(first.requests[1].id, "y");
  EXPECT_EQ(s.find("x"), nullptr);
}

// A copy of 01 with one edit, written to a temporary file.
std::string edited_copy(const std::string& from, const std::string& to, const std::string& name) {
  return golden::edited_copy(std::string(kDir) + "/01_chunked_off_exact_budget.json", from, to, name);
}

TEST(SchedulerScenarioTest, AnUnknownFieldIsAnErrorNamingFileAndField) {
  const std::string path = edited_copy("\"max_num_seqs\":4", "\"max_num_seqs\":4,\"swap_space\":4", "kv_unknown.json");
  StatusOr<ScenarioOutcome> outcome = run_scheduler_scenario(path);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().message(), path + ": config.swap_space: unknown field");
}

TEST(SchedulerScenarioTest, AnUnknownTopLevelFieldIsNamedAlone) {
  const std::string path = edited_copy("{\"name\"", "{\"extra\":1,\"name\"", "kv_unknown_top.json");
  EXPECT_EQ(run_scheduler_scenario(path).status().message(), path + ": extra: unknown field");
}

TEST(SchedulerScenarioTest, AnExpectKeyOutsideTheFormatIsAnError) {
  const std::string path = edited_copy("\"total_tokens\":80", "\"total_tokens\":80,\"num_tokens\":1", "kv_key.json");
  EXPECT_EQ(run_scheduler_scenario(path).status().message(), path + ": steps[0].expect.num_tokens: unknown field");
}

TEST(SchedulerScenarioTest, AWrongTypeIsAnErrorNamingTheField) {
  const std::string path = edited_copy("\"prompt_len\":40", "\"prompt_len\":\"40\"", "kv_type.json");
  StatusOr<ScenarioOutcome> outcome = run_scheduler_scenario(path);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().message(), path + ": requests[0].prompt_len: must be an integer, got \"40\"");
}

TEST(SchedulerScenarioTest, NotJsonAndMissingFilesAreErrors) {
  const std::string path = edited_copy("{\"name\"", "{name", "kv_not_json.json");
  EXPECT_EQ(run_scheduler_scenario(path).status().message(), path + ": not valid JSON");
  EXPECT_EQ(run_scheduler_scenario("no/such.json").status().message(), "no/such.json: cannot open");
}

TEST(SchedulerScenarioTest, AWrongExpectationIsTheFirstMismatch) {
  // Step 2 admits c with 126 tokens; claim 125.
  const std::string path = edited_copy("[[\"c\",126,0]]", "[[\"c\",125,0]]", "kv_mismatch.json");
  StatusOr<ScenarioOutcome> outcome = run_scheduler_scenario(path);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_EQ(to_string(*outcome), "step 2: expect.scheduled_new: expected [[\"c\",125,0]], got [[\"c\",126,0]]");
}

TEST(SchedulerScenarioTest, AValidConfigMarkedInvalidIsAMismatch) {
  const std::string path =
      edited_copy("\"valid_vllm_config\":true", "\"valid_vllm_config\":false", "kv_marked_invalid.json");
  StatusOr<ScenarioOutcome> outcome = run_scheduler_scenario(path);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_FALSE(outcome->ok);
  EXPECT_EQ(outcome->mismatch.field, "config.valid_vllm_config");
}

// vLLM's start-up checks, one each.
TEST(SchedulerScenarioTest, ValidateRefusesWhatVllmRefuses) {
  SchedulerConfig c;
  c.cache.num_blocks = 65;  // 64 usable blocks of 16 = 1024 tokens
  c.cache.block_size = 16;
  c.cache.max_model_len = 1024;
  c.max_num_batched_tokens = 512;
  c.max_num_seqs = 8;
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  SchedulerConfig off = c;
  off.enable_chunked_prefill = false;
  EXPECT_EQ(off.validate().message(),
            "max_num_batched_tokens (512) is smaller than max_model_len (1024) with chunked prefill off: a long "
            "prompt could never be scheduled");
  SchedulerConfig seqs = c;
  seqs.max_num_seqs = 513;
  EXPECT_EQ(seqs.validate().message(), "max_num_batched_tokens (512) must be at least max_num_seqs (513)");
  SchedulerConfig thr = c;
  thr.long_prefill_token_threshold = 1025;
  EXPECT_EQ(thr.validate().message(), "long_prefill_token_threshold (1025) cannot exceed max_model_len (1024)");
  SchedulerConfig pool = c;
  pool.cache.num_blocks = 64;
  EXPECT_EQ(pool.validate().message(),
            "the KV cache holds 1008 tokens (63 blocks of 16), less than one sequence of max_model_len (1024)");
}

}  // namespace
}  // namespace kv::ops
