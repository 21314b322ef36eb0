// CPU reference kernels: slot mapping (the walkthrough's numbers, with padding), block-table
// deltas, paged attention against dense causal attention on random and shared block tables,
// and the rounding emulation.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "gpu_backend/reference/block_tables.h"
#include "gpu_backend/reference/flat_batch.h"
#include "gpu_backend/reference/kernels.h"
#include "gpu_backend/reference/numerics.h"
#include "gpu_backend/reference/prefix_scenario.h"

namespace kv::gpuref {
namespace {

TEST(GpuRefSlotMapping, WalkthroughExampleWithPadding) {
  // block_size 4, row 0 holds blocks [7, 3, 9]; positions 6, 7, 8 go to slots 14, 15, 36.
  RefBlockTable table{{7, 3, 9, 0, 1, 2, 5, 0}, 4};
  const std::vector<std::int32_t> rows = {0, 0, 0, -1, 1, -1};
  const std::vector<std::int32_t> positions = {6, 7, 8, 0, 5, 0};
  EXPECT_EQ(slot_mapping(rows, positions, table, 4), (std::vector<std::int64_t>{14, 15, 36, -1, 9, -1}));
}

TEST(GpuRefCacheWrite, SkipsPaddingSlots) {
  RefKvCache cache(3, 2, 1, 8, -7.0f);  // sentinel -7
  std::vector<float> src(2 * 16);
  std::iota(src.begin(), src.end(), 0.0f);  // row stride 16: K at 0..7, V at 8..15
  cache_write(src.data(), src.data() + 8, 16, {3, -1}, &cache);
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(cache.k[cache.offset(3, 0) + static_cast<std::size_t>(d)], static_cast<float>(d));
    EXPECT_EQ(cache.v[cache.offset(3, 0) + static_cast<std::size_t>(d)], static_cast<float>(8 + d));
  }
  const auto untouched = std::count(cache.k.begin(), cache.k.end(), -7.0f);
  EXPECT_EQ(untouched, static_cast<long>(cache.k.size()) - 8);
}

using scenario::plan;  // a StepPlan of block size 4 from its requests

ScheduledRequest req(const RequestId& id, bool is_new, std::vector<BlockId> blocks, std::int64_t computed,
                     int num_tokens, std::int64_t prompt) {
  ScheduledRequest r;
  r.id = id;
  r.is_new = is_new;
  r.block_ids = std::move(blocks);
  r.num_computed_tokens = computed;
  r.num_prompt_tokens = prompt;
  for (int i = 0; i < num_tokens; ++i) r.token_ids.push_back(100 + computed + i);
  return r;
}

TEST(GpuRefBlockTables, DeltasRowsAndFlattening) {
  BlockTables tables(2, 4, 16);
  std::vector<BlockTableUpdate> updates;
  ASSERT_TRUE(tables.apply(plan(0, {req("a", true, {7, 3}, 0, 6, 6), req("b", true, {5}, 0, 2, 3)}), &updates).ok());
  EXPECT_EQ(tables.row_of("a"), 0);
  EXPECT_EQ(tables.row_of("b"), 1);
  ASSERT_EQ(updates.size(), 3u);
  EXPECT_EQ(updates[2].row, 1);
  EXPECT_EQ(updates[2].column, 0);
  EXPECT_EQ(updates[2].block, 5);

  // a decodes into a new block; b finishes its prompt chunk.
  updates.clear();
  const StepPlan p1 = plan(1, {req("a", false, {9}, 8, 1, 6), req("b", false, {}, 2, 1, 3)});
  ASSERT_TRUE(tables.apply(p1, &updates).ok());
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].row, 0);
  EXPECT_EQ(updates[0].column, 2);
  EXPECT_EQ(std::vector<std::int32_t>(tables.row(0).begin(), tables.row(0).end()),
            (std::vector<std::int32_t>{7, 3, 9}));
  StatusOr<FlatBatch> b = build_flat_batch(p1, tables, 1000);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->positions, (std::vector<std::int32_t>{8, 2}));
  EXPECT_EQ(b->query_start_loc, (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(b->seq_lens, (std::vector<std::int32_t>{9, 3}));
  EXPECT_EQ(b->prompt_tokens, 1);  // b's position 2 < 3
  EXPECT_TRUE(b->uniform_decode());
  EXPECT_EQ(host_slot_mapping(*b, tables, 4), (std::vector<std::int64_t>{36, 22}));
  pad_flat_batch(&b.value(), 4);
  EXPECT_EQ(host_slot_mapping(*b, tables, 4), (std::vector<std::int64_t>{36, 22, -1, -1}));

  // a finishes: its row is reused lowest-first by c; bad input leaves the tables unchanged.
  ASSERT_TRUE(tables.apply(plan(2, {req("c", true, {1}, 0, 1, 1)}, {"a"}), nullptr).ok());
  EXPECT_EQ(tables.row_of("c"), 0);
  EXPECT_EQ(tables.row_of("a"), -1);
  EXPECT_FALSE(tables.apply(plan(3, {req("zz", false, {}, 0, 1, 1)}), nullptr).ok());
  EXPECT_FALSE(tables.apply(plan(3, {req("d", true, {16}, 0, 1, 1)}, {"b"}), nullptr).ok());
  EXPECT_EQ(tables.row_of("b"), 1);
  EXPECT_FALSE(tables.apply(plan(3, {req("d", true, {1}, 0, 1, 1)}), nullptr).ok());  // 3 rows
  EXPECT_FALSE(tables.apply(plan(3, {req("c", false, {1, 2, 3, 4}, 1, 1, 1)}), nullptr).ok());
  // A plan that computes past the row's blocks is caught when flattening.
  const StepPlan past = plan(3, {req("c", false, {}, 4, 1, 1)});
  ASSERT_TRUE(tables.apply(past, nullptr).ok());
  EXPECT_FALSE(build_flat_batch(past, tables, 1000).ok());
}

// Writes each sequence's dense K/V through its block table, then checks that paged attention
// over every position equals dense causal attention over the same data. Sequence 1 shares its
// first two blocks (and their contents) with sequence 0, as a prefix-cache hit does.
TEST(GpuRefPagedAttention, EqualsDenseCausalOnRandomAndSharedBlockTables) {
  const int heads = 4, kv_heads = 2, dim = 16, bs = 4, blocks = 24;
  const float scale = 0.25f;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::int32_t> perm(blocks - 1);
  std::iota(perm.begin(), perm.end(), 1);
  std::shuffle(perm.begin(), perm.end(), rng);
  const std::vector<int> lens = {13, 15, 6};
  RefBlockTable table{std::vector<std::int32_t>(3 * 8, 0), 8};
  int next = 0;
  for (int s = 0; s < 3; ++s) {
    for (int i = 0; i < (lens[static_cast<std::size_t>(s)] + bs - 1) / bs; ++i) {
      const bool shared = s == 1 && i < 2;
      table.table[static_cast<std::size_t>(s * 8 + i)] =
          shared ? table.at(0, i) : perm[static_cast<std::size_t>(next++)];
    }
  }
  RefKvCache cache(blocks, bs, kv_heads, dim, std::nanf(""));  // unread slots stay NaN
  std::vector<std::vector<float>> q(3), k(3), v(3);
  for (int s = 0; s < 3; ++s) {
    const int len = lens[static_cast<std::size_t>(s)];
    auto fill = [&](std::vector<float>& x, int n) {
      x.resize(static_cast<std::size_t>(n));
      for (auto& e : x) e = u(rng);
    };
    fill(q[static_cast<std::size_t>(s)], len * heads * dim);
    fill(k[static_cast<std::size_t>(s)], len * kv_heads * dim);
    fill(v[static_cast<std::size_t>(s)], len * kv_heads * dim);
    if (s == 1) {  // the shared prefix holds the same K/V as sequence 0
      std::copy_n(k[0].begin(), 2 * bs * kv_heads * dim, k[1].begin());
      std::copy_n(v[0].begin(), 2 * bs * kv_heads * dim, v[1].begin());
    }
    std::vector<std::int32_t> rows(static_cast<std::size_t>(len), s), pos(static_cast<std::size_t>(len));
    std::iota(pos.begin(), pos.end(), 0);
    cache_write(k[static_cast<std::size_t>(s)].data(), v[static_cast<std::size_t>(s)].data(), kv_heads * dim,
                slot_mapping(rows, pos, table, bs), &cache);
  }
  for (int s = 0; s < 3; ++s) {
    const int len = lens[static_cast<std::size_t>(s)];
    std::vector<std::int32_t> rows(static_cast<std::size_t>(len), s), pos(static_cast<std::size_t>(len));
    std::iota(pos.begin(), pos.end(), 0);
    rows.push_back(-1);  // a padding token
    pos.push_back(0);
    std::vector<float> qp = q[static_cast<std::size_t>(s)];
    qp.resize(qp.size() + static_cast<std::size_t>(heads * dim), 1.0f);
    std::vector<float> paged(static_cast<std::size_t>((len + 1) * heads * dim), -1.0f);
    paged_attention(qp.data(), heads * dim, rows, pos, table, cache, heads, scale, DType::kFp32, paged.data());
    const std::vector<float> dense =
        dense_causal_attention(q[static_cast<std::size_t>(s)], k[static_cast<std::size_t>(s)],
                               v[static_cast<std::size_t>(s)], len, heads, kv_heads, dim, scale);
    for (std::size_t i = 0; i < dense.size(); ++i) ASSERT_EQ(paged[i], dense[i]) << "seq " << s << " index " << i;
    for (std::size_t i = dense.size(); i < paged.size(); ++i) ASSERT_EQ(paged[i], 0.0f);
  }
}

TEST(GpuRefNumerics, RoundingToNearestEven) {
  EXPECT_EQ(round_bf16(1.0f), 1.0f);
  EXPECT_EQ(round_bf16(1.0f + 1.0f / 512), 1.0f);              // below half an ulp (2^-7)
  EXPECT_EQ(round_bf16(1.0f + 3.0f / 256), 1.0f + 1.0f / 64);  // tie 1.5 ulp -> even (2 ulp)
  EXPECT_EQ(round_bf16(-3.14159f), -3.140625f);
  EXPECT_EQ(round_fp16(1.0f + 1.0f / 4096), 1.0f);
  EXPECT_EQ(round_fp16(65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_fp16(70000.0f)));
  EXPECT_EQ(round_fp16(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(round_fp16(std::ldexp(1.0f, -26)), 0.0f);
  EXPECT_EQ(fp16_bits(1.0f), 0x3C00);
  EXPECT_EQ(bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(fp16_from_bits(0xC000), -2.0f);
}

TEST(GpuRefElementwise, RmsnormRotarySiluMul) {
  const std::vector<float> x = {3.0f, -4.0f};  // mean square 12.5
  const std::vector<float> w = {1.0f, 2.0f};
  std::vector<float> out(2);
  rmsnorm(x.data(), 1, 2, w.data(), 0.0f, DType::kFp32, out.data());
  EXPECT_FLOAT_EQ(out[0], 3.0f / std::sqrt(12.5f));
  EXPECT_FLOAT_EQ(out[1], -8.0f / std::sqrt(12.5f));

  std::vector<float> qkv = {1.0f, 2.0f, 3.0f, 4.0f, 9.0f};  // one head of dim 4, then one extra value
  rotary(qkv.data(), 5, {0}, 1, 0, 4, {1.0f, 0.01f}, DType::kFp32);
  EXPECT_EQ(qkv, (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f, 9.0f}));  // position 0: identity
  rotary(qkv.data(), 5, {1}, 1, 0, 4, {1.0f, 0.01f}, DType::kFp32);
  EXPECT_FLOAT_EQ(qkv[0], 1.0f * std::cos(1.0f) - 3.0f * std::sin(1.0f));
  EXPECT_FLOAT_EQ(qkv[2], 3.0f * std::cos(1.0f) + 1.0f * std::sin(1.0f));
  EXPECT_EQ(qkv[4], 9.0f);

  const std::vector<float> gu = {0.0f, 2.0f, 5.0f, 7.0f};  // gate {0, 2}, up {5, 7}
  silu_mul(gu.data(), 1, 2, DType::kFp32, out.data());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_FLOAT_EQ(out[1], 2.0f / (1.0f + std::exp(-2.0f)) * 7.0f);
}

}  // namespace
}  // namespace kv::gpuref
