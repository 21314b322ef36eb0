// run_hybrid_scenario on small hand-made files: a passing one, a wrong expectation (an
// outcome naming step and field), and malformed files (a Status naming file and field).
#include "ops/hybrid_scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace kv::ops {
namespace {

// One full-attention layer, a 4-block pool (3 usable), and two steps.
std::string scenario(const std::string& extra_config = "", const std::string& layer_type = "full",
                     const std::string& op = "allocate", int expected_free = 1) {
  return R"({"name": "t", "doc": "", "config": {"format_version": 1, "vllm_commit": "x",
    "block_size": 16, "num_blocks": 4, "hash": "sha256_cbor", "hash_seed": "0",
    "free_order": "unhashed_first", "enable_caching": true, "max_model_len": 4096,
    "max_in_flight_tokens": 4096, "scheduler_block_size": 16, "hash_block_size": 16,
    "coordinator": "UnitaryKVCacheCoordinator", "page_size_bytes": 8192,
    "layers_per_group": 1, "memory_budget_bytes": 32867)" +
         extra_config + R"(,
    "layers": [{"name": "L0", "type": ")" +
         layer_type + R"("}],
    "groups": [{"type": "full", "layers": ["L0"]}], "lookup_order": [[0]]},
  "steps": [
    {"op": "add", "req": "a", "prompt": [[0, 20]],
     "expect": {"num_tokens": 20, "num_block_hashes": 1, "free": 3, "evicted": []}},
    {"op": ")" +
         op + R"(", "req": "a", "num_new_tokens": 20,
     "expect": {"ok": true, "new_blocks": [[1, 2]], "num_computed_tokens": 20,
                "held": [[1, 2]], "window_freed": 0, "free": )" +
         std::to_string(expected_free) + R"(, "evicted": []}}],
  "final": {"free_queue": [3], "held": {"a": [[1, 2]]}}})";
}

class HybridScenarioTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const auto path =
        std::filesystem::temp_directory_path() / ("kvsim_hybrid_scenario_test_" + std::to_string(counter_++) + ".json");
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path.string();
  }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  int counter_ = 0;
  std::vector<std::filesystem::path> paths_;
};

TEST_F(HybridScenarioTest, PassesAFileThatMatches) {
  auto outcome = run_hybrid_scenario(write(scenario()));
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_TRUE(outcome->ok) << to_string(*outcome);
}

TEST_F(HybridScenarioTest, NamesTheFirstMismatch) {
  auto outcome = run_hybrid_scenario(write(scenario("", "full", "allocate", 2)));
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  EXPECT_FALSE(outcome->ok);
  EXPECT_EQ(to_string(*outcome), "step 1: expect.free: expected 2, got 1");
}

TEST_F(HybridScenarioTest, MalformedFilesAreAStatusNamingFileAndField) {
  const std::string bad_json = write("{\"config\": ");
  auto s = run_hybrid_scenario(bad_json);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), bad_json + ": not valid JSON");

  const std::string bad_op = write(scenario("", "full", "alloc"));
  s = run_hybrid_scenario(bad_op);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), bad_op + ": steps[1].op: unknown op 'alloc'");

  const std::string bad_field = write(scenario(R"(, "watermark": 0)"));
  s = run_hybrid_scenario(bad_field);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), bad_field + ": config.watermark: unknown field");

  s = run_hybrid_scenario(write(scenario("", "mamba")));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("config.layers[0].mode: missing"), std::string::npos) << s.status().message();

  // The golden-mamba dialect's ops: a rollback past the computed tokens, a new_step with a
  // request.
  s = run_hybrid_scenario(write(scenario("", "full", "rollback")));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("steps[1].num_new_tokens: unknown field for op 'rollback'"), std::string::npos)
      << s.status().message();
  std::string rollback = scenario();
  const auto at = rollback.find(R"({"op": "allocate")");
  rollback = rollback.substr(0, at) + R"({"op": "rollback", "req": "a", "num_rejected": 3}]})";
  s = run_hybrid_scenario(write(rollback));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("steps[1].num_rejected: must be in 0 .. num_computed_tokens (0)"),
            std::string::npos)
      << s.status().message();

  s = run_hybrid_scenario("/nonexistent/scenario.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "/nonexistent/scenario.json: cannot open");
}

}  // namespace
}  // namespace kv::ops
