// Every vLLM-recorded scenario in tests/golden-mamba/ (Mamba state groups in the modes none,
// align and all, cross attention, R-SWA, lookahead slots, rolled-back drafts, eagle, pages of
// different block sizes) replayed against kvsim's KvCacheManager: one test per file, found at
// run time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "ops/hybrid_scenario.h"
#include "tests/ops/golden_files.h"

namespace kv::ops {
namespace {

const std::filesystem::path kDir = std::filesystem::path(KVSIM_SOURCE_DIR) / "tests/golden-mamba";

TEST(MambaGoldenTest, DirectoryHoldsScenarios) {
  EXPECT_FALSE(golden::scenario_files(kDir).empty()) << "no *.json scenario in " << kDir;
}

class MambaGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MambaGolden, MatchesVllm) {
  auto outcome = run_hybrid_scenario((kDir / GetParam()).string());
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_TRUE(outcome->ok) << GetParam() << ": " << to_string(*outcome);
}

INSTANTIATE_TEST_SUITE_P(Files, MambaGolden, ::testing::ValuesIn(golden::scenario_files(kDir)), golden::test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MambaGolden);

}  // namespace
}  // namespace kv::ops
