// GraphPolicy: vLLM's capture list and the FULL-for-uniform-decode, eager-otherwise dispatch.
#include <gtest/gtest.h>

#include "gpu_backend/reference/graph_policy.h"

namespace kv::gpuref {
namespace {

TEST(GpuRefGraphPolicy, DefaultCaptureSizesAsVllm) {
  const auto s = vllm_default_capture_sizes(512);
  ASSERT_EQ(s.size(), 3u + 31u + 17u);  // 1,2,4; 8..248 step 8; 256..512 step 16
  EXPECT_EQ(s[0], 1);
  EXPECT_EQ(s[3], 8);
  EXPECT_EQ(s[33], 248);
  EXPECT_EQ(s[34], 256);
  EXPECT_EQ(s.back(), 512);
  EXPECT_EQ(vllm_default_capture_sizes(20), (std::vector<std::int64_t>{1, 2, 4, 8, 16}));
}

TEST(GpuRefGraphPolicy, FullForUniformDecodePaddedEagerOtherwise) {
  auto p = make_graph_policy("FULL_DECODE_ONLY", {}, 64);
  ASSERT_TRUE(p.ok());
  GraphDecision d = (*p)->dispatch(3, true);
  EXPECT_EQ(d.mode, GraphRuntimeMode::kFull);
  EXPECT_EQ(d.padded_tokens, 4);
  d = (*p)->dispatch(33, true);
  EXPECT_EQ(d.padded_tokens, 40);
  d = (*p)->dispatch(65, true);  // above the largest capture size
  EXPECT_EQ(d.mode, GraphRuntimeMode::kNone);
  EXPECT_EQ(d.padded_tokens, 65);
  d = (*p)->dispatch(3, false);  // prefill or mixed
  EXPECT_EQ(d.mode, GraphRuntimeMode::kNone);
  EXPECT_EQ(d.padded_tokens, 3);
  auto none = make_graph_policy("NONE", {}, 64);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->dispatch(4, true).mode, GraphRuntimeMode::kNone);
  auto custom = make_graph_policy("FULL", {16, 2, 2, 8}, 0);
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ((*custom)->capture_sizes(), (std::vector<std::int64_t>{2, 8, 16}));
  EXPECT_FALSE(make_graph_policy("PIECEWISE_ONLY", {}, 64).ok());
  EXPECT_FALSE(make_graph_policy("FULL", {0, 4}, 64).ok());
  // As vLLM: full decode graphs only for batches of at most max_num_seqs requests.
  auto limited = make_graph_policy("FULL_DECODE_ONLY", {}, 64, /*max_num_seqs=*/16);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ((*limited)->dispatch(16, true).mode, GraphRuntimeMode::kFull);
  EXPECT_EQ((*limited)->dispatch(17, true).mode, GraphRuntimeMode::kNone);
}

}  // namespace
}  // namespace kv::gpuref
