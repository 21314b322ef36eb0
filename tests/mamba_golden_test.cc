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

namespace kv::ops {
namespace {

const std::filesystem::path kDir = std::filesystem::path(KVSIM_SOURCE_DIR) / "tests/golden-mamba";

std::vector<std::string> scenario_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kDir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(MambaGoldenTest, DirectoryHoldsScenarios) {
  EXPECT_FALSE(scenario_files().empty()) << "no *.json scenario in " << kDir;
}

class MambaGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MambaGolden, MatchesVllm) {
  auto outcome = run_hybrid_scenario((kDir / GetParam()).string());
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_TRUE(outcome->ok) << GetParam() << ": " << to_string(*outcome);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.rfind('.'));
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, MambaGolden, ::testing::ValuesIn(scenario_files()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MambaGolden);

}  // namespace
}  // namespace kv::ops
