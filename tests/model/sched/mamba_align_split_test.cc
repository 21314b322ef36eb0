// The Mamba align split with exact numbers, from the recorded stories of tests/golden-spec
// (18: chunks on block boundaries, 19: a split to 0, 22: the shared-prefix junction).
#include "model/sched/mamba_align_split.h"

#include <gtest/gtest.h>

namespace kv {
namespace {

AlignSplitInput chunk(std::int64_t start, std::int64_t n, std::int64_t prompt, bool eagle = false,
                      std::int64_t junction = 0) {
  AlignSplitInput in;
  in.start = start;
  in.num_new_tokens = n;
  in.num_prompt_tokens = prompt;
  in.num_tokens = prompt;
  in.use_eagle = eagle;
  in.shared_prefix_boundary = junction;
  return in;
}

// A 100-token prompt, a budget of 40, eagle: the last cacheable position is 96 - 16 = 80, so
// the chunks are 32, 32, 16 (stopping at 80), then the last 20.
TEST(MambaAlignSplitTest, ChunksEndOnBlockBoundariesAndTheLastCacheablePosition) {
  EXPECT_EQ(mamba_align_split(chunk(0, 40, 100, true)), 32);
  EXPECT_EQ(mamba_align_split(chunk(32, 40, 100, true)), 32);
  EXPECT_EQ(mamba_align_split(chunk(64, 36, 100, true)), 16);
  EXPECT_EQ(mamba_align_split(chunk(80, 20, 100, true)), 20);
  // Without eagle the last cacheable position is 96.
  EXPECT_EQ(mamba_align_split(chunk(64, 36, 100)), 32);
}

// A decode, or a resumed request replaying its last token, is never cut.
TEST(MambaAlignSplitTest, DecodesKeepTheirTokens) {
  AlignSplitInput decode = chunk(100, 3, 100, true);
  decode.num_tokens = 101;
  EXPECT_EQ(mamba_align_split(decode), 3);
  AlignSplitInput resumed = chunk(48, 1, 30);  // a 30-token prompt and 19 outputs, 48 hit
  resumed.num_tokens = 49;
  EXPECT_EQ(mamba_align_split(resumed), 1);
}

// 15 tokens from 16 of a 60-token prompt reach no boundary (31 < 32): 0, the request waits.
// A 2-token prompt has no boundary at all and runs whole.
TEST(MambaAlignSplitTest, ABudgetShortOfTheNextBoundaryGivesZero) {
  EXPECT_EQ(mamba_align_split(chunk(16, 15, 60, true)), 0);
  EXPECT_EQ(mamba_align_split(chunk(0, 12, 40, true)), 0);
  EXPECT_EQ(mamba_align_split(chunk(0, 2, 2, true)), 2);
}

// A chunk that starts inside a block (after a hit of another group's size, or a resumed
// request) first ends on the next boundary.
TEST(MambaAlignSplitTest, AnUnalignedStartEndsOnTheNextBoundary) {
  EXPECT_EQ(mamba_align_split(chunk(20, 40, 100)), 12);  // 20 -> 32
}

// b shares 48 tokens' worth of full-attention blocks with a, but no Mamba state: its first
// chunk of 110 tokens stops at 48 so that the state there is cached; then 48 to 96, then 14.
TEST(MambaAlignSplitTest, TheFirstChunkStopsAtTheSharedPrefixJunction) {
  EXPECT_EQ(mamba_align_split(chunk(0, 110, 110, false, 48)), 48);
  EXPECT_EQ(mamba_align_split(chunk(48, 62, 110, false, 48)), 48);
  EXPECT_EQ(mamba_align_split(chunk(96, 14, 110, false, 48)), 14);
  // From an unaligned start the next boundary (16) comes before the junction's cut, which
  // keeps whole blocks from the start (5 + 32 = 37).
  EXPECT_EQ(mamba_align_split(chunk(5, 105, 110, false, 50)), 11);
}

}  // namespace
}  // namespace kv
