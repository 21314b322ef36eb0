// Every vLLM-recorded scenario in tests/golden-hybrid/ (several KV-cache groups in one pool)
// replayed against the HybridKvCacheManager: one test per file, found at run time.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "ops/hybrid_scenario.h"
#include "tests/ops/golden_files.h"

namespace kv::ops {
namespace {

const std::filesystem::path kDir = std::filesystem::path(KVSIM_SOURCE_DIR) / "tests/golden-hybrid";

TEST(HybridGoldenTest, DirectoryHoldsScenarios) {
  EXPECT_FALSE(golden::scenario_files(kDir).empty()) << "no *.json scenario in " << kDir;
}

class HybridGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HybridGolden, MatchesVllm) {
  auto outcome = run_hybrid_scenario((kDir / GetParam()).string());
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_TRUE(outcome->ok) << GetParam() << ": " << to_string(*outcome);
}

INSTANTIATE_TEST_SUITE_P(Files, HybridGolden, ::testing::ValuesIn(golden::scenario_files(kDir)), golden::test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HybridGolden);

}  // namespace
}  // namespace kv::ops
