// CudaGraphDispatcher: vLLM's default capture sizes, padding, and the runtime mode each
// cudagraph_mode picks for uniform-decode and mixed batches.
#include "model/cuda_graph_dispatcher.h"

#include <gtest/gtest.h>

#include <vector>

namespace kv {
namespace {

CudaGraphDispatcher make(CudaGraphMode mode, int max_num_seqs = 256, std::vector<std::int64_t> sizes = {}) {
  CudaGraphConfig c;
  c.mode = mode;
  c.max_num_seqs = max_num_seqs;
  c.capture_sizes = std::move(sizes);
  return CudaGraphDispatcher(c);
}

TEST(CudaGraphDispatcherTest, DefaultCaptureSizesForMaxNumSeqs256) {
  // max = min(2 * 256, 512) = 512: [1, 2, 4], 8..248 by 8, 256..512 by 16.
  std::vector<std::int64_t> expected = {1, 2, 4};
  for (std::int64_t s = 8; s <= 248; s += 8) expected.push_back(s);
  for (std::int64_t s = 256; s <= 512; s += 16) expected.push_back(s);
  CudaGraphDispatcher d = make(CudaGraphMode::kFullAndPiecewise);
  EXPECT_EQ(d.capture_sizes(), expected);
  EXPECT_EQ(d.capture_sizes().size(), 51u);
  EXPECT_EQ(d.max_capture_size(), 512);
}

TEST(CudaGraphDispatcherTest, DefaultCaptureSizesSmallAndClamped) {
  EXPECT_EQ(make(CudaGraphMode::kPiecewise, 2).capture_sizes(), (std::vector<std::int64_t>{1, 2, 4}));
  EXPECT_EQ(make(CudaGraphMode::kPiecewise, 8).capture_sizes(), (std::vector<std::int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(make(CudaGraphMode::kPiecewise, 1024).max_capture_size(), 512);  // capped at 512
  EXPECT_EQ(default_capture_sizes(3), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(default_capture_sizes(264),
            (std::vector<std::int64_t>{1,   2,   4,   8,   16,  24,  32,  40,  48,  56,  64,  72,
                                       80,  88,  96,  104, 112, 120, 128, 136, 144, 152, 160, 168,
                                       176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256}));

  CudaGraphConfig c;
  c.max_num_seqs = 256;
  c.max_num_batched_tokens = 100;  // the batch can never exceed 100 tokens
  CudaGraphDispatcher d(c);
  EXPECT_EQ(d.max_capture_size(), 96);
  EXPECT_EQ(d.capture_sizes().size(), 3u + 12u);
}

TEST(CudaGraphDispatcherTest, UserSizesAreSortedAndDeduplicated) {
  CudaGraphDispatcher d = make(CudaGraphMode::kPiecewise, 256, {8, 1, 8, 4});
  EXPECT_EQ(d.capture_sizes(), (std::vector<std::int64_t>{1, 4, 8}));
  EXPECT_EQ(d.padded_size(2), 4);
  EXPECT_EQ(d.dispatch(9, false).runtime_mode, CudaGraphMode::kNone);

  CudaGraphConfig bad;
  bad.capture_sizes = {4, 0};
  EXPECT_EQ(validate(bad).message(), "cuda graph capture size #2 is 0, must be >= 1");
}

TEST(CudaGraphDispatcherTest, PaddingToTheNextCaptureSize) {
  CudaGraphDispatcher d = make(CudaGraphMode::kFullAndPiecewise);
  EXPECT_EQ(d.padded_size(1), 1);
  EXPECT_EQ(d.padded_size(3), 4);
  EXPECT_EQ(d.padded_size(5), 8);
  EXPECT_EQ(d.padded_size(9), 16);
  EXPECT_EQ(d.padded_size(249), 256);
  EXPECT_EQ(d.padded_size(257), 272);
  EXPECT_EQ(d.padded_size(512), 512);
  EXPECT_EQ(d.padded_size(513), 513);
}

TEST(CudaGraphDispatcherTest, FullAndPiecewise) {
  CudaGraphDispatcher d = make(CudaGraphMode::kFullAndPiecewise);
  // Full graphs for uniform decode up to max_num_seqs tokens, piecewise for everything else.
  EXPECT_EQ(d.keys(CudaGraphMode::kFull).size(), 35u);  // the 35 sizes <= 256
  EXPECT_EQ(d.keys(CudaGraphMode::kPiecewise).size(), 51u);

  DispatchResult r = d.dispatch(100, true);
  EXPECT_EQ(r.runtime_mode, CudaGraphMode::kFull);
  EXPECT_EQ(r.batch, (BatchDescriptor{104, true}));

  r = d.dispatch(100, false);
  EXPECT_EQ(r.runtime_mode, CudaGraphMode::kPiecewise);
  EXPECT_EQ(r.batch, (BatchDescriptor{104, false}));

  r = d.dispatch(300, true);  // no full decode graph above 256: the mixed piecewise graph
  EXPECT_EQ(r.runtime_mode, CudaGraphMode::kPiecewise);
  EXPECT_EQ(r.batch, (BatchDescriptor{304, false}));

  r = d.dispatch(100, true, /*uses_cascade_attention=*/true);
  EXPECT_EQ(r.runtime_mode, CudaGraphMode::kPiecewise);

  r = d.dispatch(513, false);
  EXPECT_EQ(r.runtime_mode, CudaGraphMode::kNone);
  EXPECT_EQ(r.batch, (BatchDescriptor{513, false}));
}

TEST(CudaGraphDispatcherTest, FullReusesMixedGraphsForDecode) {
  CudaGraphDispatcher d = make(CudaGraphMode::kFull);
  EXPECT_EQ(d.keys(CudaGraphMode::kPiecewise).size(), 0u);
  EXPECT_EQ(d.dispatch(5, true).batch, (BatchDescriptor{8, false}));
  EXPECT_EQ(d.dispatch(5, true).runtime_mode, CudaGraphMode::kFull);
  EXPECT_EQ(d.dispatch(300, false).runtime_mode, CudaGraphMode::kFull);
  EXPECT_EQ(d.dispatch(5, true, true).runtime_mode, CudaGraphMode::kNone);  // cascade
}

TEST(CudaGraphDispatcherTest, FullDecodeOnlyRunsMixedBatchesEagerly) {
  CudaGraphDispatcher d = make(CudaGraphMode::kFullDecodeOnly);
  DispatchResult r = d.dispatch(5, true);
  EXPECT_EQ(r.runtime_mode, CudaGraphMode::kFull);
  EXPECT_EQ(r.batch, (BatchDescriptor{8, true}));
  r = d.dispatch(5, false);
  EXPECT_EQ(r.runtime_mode, CudaGraphMode::kNone);
  EXPECT_EQ(r.batch, (BatchDescriptor{5, false}));
}

TEST(CudaGraphDispatcherTest, PiecewiseAndNone) {
  CudaGraphDispatcher pw = make(CudaGraphMode::kPiecewise);
  EXPECT_EQ(pw.dispatch(5, true).runtime_mode, CudaGraphMode::kPiecewise);
  EXPECT_EQ(pw.dispatch(5, true).batch, (BatchDescriptor{8, false}));

  CudaGraphDispatcher none = make(CudaGraphMode::kNone);
  EXPECT_TRUE(none.capture_sizes().empty());
  EXPECT_EQ(none.dispatch(5, true).runtime_mode, CudaGraphMode::kNone);
  EXPECT_EQ(none.dispatch(5, true).batch, (BatchDescriptor{5, true}));
}

TEST(CudaGraphDispatcherTest, ModeNames) {
  EXPECT_STREQ(to_string(CudaGraphMode::kFullAndPiecewise), "FULL_AND_PIECEWISE");
  EXPECT_EQ(parse_cuda_graph_mode("full_decode_only"), CudaGraphMode::kFullDecodeOnly);
  EXPECT_EQ(parse_cuda_graph_mode("PIECEWISE"), CudaGraphMode::kPiecewise);
  EXPECT_EQ(parse_cuda_graph_mode("partial"), std::nullopt);
}

}  // namespace
}  // namespace kv
