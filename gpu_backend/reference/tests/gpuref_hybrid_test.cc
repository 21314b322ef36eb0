// The CPU reference on hybrid layouts (docs/hybrid-groups.md, "CUDA backend"): windowed paged
// attention equals dense attention under an explicit mask, null blocks are never read (the
// reference aborts if they are), the whole tiny model over the real scheduler's hybrid plans
// gives the same hidden states with prefix caching on and off, and the window changes exactly
// the positions past it.
// Tolerance: none (exact equality). Paged and dense attention visit the same keys in the same
// order, and every token row is computed independently of the batch (gpuref_model_test).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "gpu_backend/reference/block_tables.h"
#include "gpu_backend/reference/flat_batch.h"
#include "gpu_backend/reference/hybrid_scenario.h"
#include "gpu_backend/reference/kernels.h"
#include "gpu_backend/reference/kv_layout.h"
#include "gpu_backend/reference/ref_model.h"
#include "gpu_backend/reference/tests/ref_engine_run.h"
#include "model/attention_window.h"

namespace kv::gpuref {
namespace {

// The mask from its definition (not through attention_begin): sliding w keeps keys
// p - w < j <= p, a chunk c keeps the keys of p's chunk up to p, full keeps j <= p.
bool allowed(std::int64_t window, int p, int j) {
  if (j > p) return false;
  if (window > 0) return j > p - window;
  if (window < 0) return j / -window == p / -window;
  return true;
}

struct MaskCase {
  std::int64_t window;
  int block_size;
  int len;
  int first_query;  // queries are positions [first_query, len); earlier blocks may be null
};

// One sequence of `len` tokens written through a shuffled block table whose blocks wholly
// before the first query's window are the null block (block 0, filled with NaN, never
// written); paged attention of the queries must equal dense masked attention, bit for bit.
void check_mask_case(const MaskCase& m) {
  SCOPED_TRACE("window " + std::to_string(m.window) + " block " + std::to_string(m.block_size) + " len " +
               std::to_string(m.len) + " first query " + std::to_string(m.first_query));
  const int heads = 4, kv_heads = 2, dim = 8;
  const float scale = 0.35f;
  std::mt19937 rng(static_cast<std::uint32_t>(m.len * 131 + m.block_size * 7 + static_cast<int>(m.window) + 1000));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int nblocks = (m.len + m.block_size - 1) / m.block_size;
  const int pool = nblocks + 3;
  std::vector<std::int32_t> perm(static_cast<std::size_t>(pool - 1));
  std::iota(perm.begin(), perm.end(), 1);
  std::shuffle(perm.begin(), perm.end(), rng);
  const std::int64_t first_key = attention_begin(m.window, m.first_query);
  RefBlockTable table{std::vector<std::int32_t>(static_cast<std::size_t>(nblocks), 0), nblocks};
  int nulls = 0;
  for (int i = 0; i < nblocks; ++i) {
    const bool dropped = (i + 1) * m.block_size <= first_key;
    table.table[static_cast<std::size_t>(i)] = dropped ? 0 : perm[static_cast<std::size_t>(i)];
    nulls += dropped ? 1 : 0;
  }
  if (m.window != 0 && first_key >= m.block_size) {
    EXPECT_GT(nulls, 0);
  }
  auto fill = [&](int n) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& e : x) e = u(rng);
    return x;
  };
  const std::vector<float> q = fill(m.len * heads * dim), k = fill(m.len * kv_heads * dim),
                           v = fill(m.len * kv_heads * dim);
  RefKvCache cache(pool, m.block_size, kv_heads, dim, std::nanf(""));
  std::vector<std::int32_t> rows(static_cast<std::size_t>(m.len), 0), pos(static_cast<std::size_t>(m.len));
  std::iota(pos.begin(), pos.end(), 0);
  const std::vector<std::int64_t> slots = slot_mapping(rows, pos, table, m.block_size, /*null_block=*/true);
  for (int p = 0; p < m.len; ++p) {
    const bool null_entry = table.table[static_cast<std::size_t>(p / m.block_size)] == 0;
    EXPECT_EQ(slots[static_cast<std::size_t>(p)] < 0, null_entry);
  }
  cache_write(k.data(), v.data(), kv_heads * dim, slots, &cache);

  const std::vector<std::int32_t> qrows(static_cast<std::size_t>(m.len - m.first_query), 0);
  const std::vector<std::int32_t> qpos(pos.begin() + m.first_query, pos.end());
  std::vector<float> paged(qrows.size() * static_cast<std::size_t>(heads * dim), -7.0f);
  paged_attention(q.data() + static_cast<std::ptrdiff_t>(m.first_query) * heads * dim, heads * dim, qrows, qpos, table,
                  cache, heads, scale, DType::kFp32, paged.data(), AttentionMask{m.window, true});

  std::vector<std::uint8_t> mask(static_cast<std::size_t>(m.len) * static_cast<std::size_t>(m.len));
  for (int p = 0; p < m.len; ++p) {
    for (int j = 0; j < m.len; ++j) mask[static_cast<std::size_t>(p * m.len + j)] = allowed(m.window, p, j) ? 1 : 0;
  }
  const std::vector<float> dense = dense_masked_attention(q, k, v, m.len, heads, kv_heads, dim, scale, mask);
  const std::size_t offset = static_cast<std::size_t>(m.first_query) * static_cast<std::size_t>(heads * dim);
  for (std::size_t i = 0; i < paged.size(); ++i) {
    ASSERT_EQ(paged[i], dense[offset + i]) << "query " << m.first_query + static_cast<int>(i) / (heads * dim);
  }
}

TEST(GpuRefWindowedAttention, EqualsDenseMaskedAttentionWithNullBlocks) {
  int cases = 0;
  for (const std::int64_t window : {0, 1, 3, 8, 13, 37, -1, -4, -6, -16, -24}) {
    for (const int block_size : {1, 4, 16}) {
      for (const int len : {1, 9, 40, 100}) {
        for (const int first_query : {0, len / 2, len - 1}) {
          check_mask_case({window, block_size, len, first_query});
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 11 * 3 * 4 * 3);
}

TEST(GpuRefWindowedAttention, SlidingAndChunkedMasksDifferFromFullAttention) {
  // The masks the cases above use are not all the causal mask: at position 39, a window of 8
  // keeps 8 keys and a chunk of 16 keeps 8 (32..39), full attention 40.
  int sliding = 0, chunked = 0;
  for (int j = 0; j < 40; ++j) {
    sliding += allowed(8, 39, j) ? 1 : 0;
    chunked += allowed(-16, 39, j) ? 1 : 0;
  }
  EXPECT_EQ(sliding, 8);
  EXPECT_EQ(chunked, 8);
  EXPECT_EQ(attention_begin(8, 39), 32);
  EXPECT_EQ(attention_begin(-16, 39), 32);
  EXPECT_EQ(attention_begin(8, 3), 0);
  EXPECT_EQ(attention_begin(-16, 15), 0);
}

TEST(GpuRefWindowedAttentionDeathTest, ReadingTheNullBlockAborts) {
  // Block size 4, window 8, query at 10 reads 3..10; block 0 (positions 0..3) is null.
  const RefBlockTable table{{0, 2, 3}, 3};
  const RefKvCache cache(4, 4, 1, 8, 0.0f);
  const std::vector<float> q(8, 1.0f);
  std::vector<float> out(8);
  EXPECT_DEATH(
      paged_attention(q.data(), 8, {0}, {10}, table, cache, 1, 1.0f, DType::kFp32, out.data(), AttentionMask{8, true}),
      "null block");
  // Window 7 reads 4..10 only: fine.
  paged_attention(q.data(), 8, {0}, {10}, table, cache, 1, 1.0f, DType::kFp32, out.data(), AttentionMask{7, true});
  EXPECT_EQ(out[0], 0.0f);
}

TEST(GpuRefKvLayout, GroupsMapLayersToTablesTensorsAndWindows) {
  const std::vector<KvCacheGroupSpec> groups = find_model_shape("gpt-oss-20b")->kv_cache_groups(16).value();
  StatusOr<KvLayout> l = make_kv_layout(groups, 24);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->group_windows, (std::vector<std::int64_t>{128, 0}));
  EXPECT_EQ(l->num_tensors, 12);
  EXPECT_EQ(l->layer_group[0], 0);
  EXPECT_EQ(l->layer_group[1], 1);
  EXPECT_EQ(l->layer_tensor[22], 11);
  EXPECT_EQ(l->layer_tensor[23], 11);
  EXPECT_FALSE(l->plain());
  EXPECT_TRUE(dense_kv_layout(3).plain());
  EXPECT_EQ(dense_kv_layout(3).layer_tensor, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(make_kv_layout(groups, 23).ok());  // layers.23 does not exist
  EXPECT_FALSE(make_kv_layout(groups, 25).ok());  // layers.24 is in no group
  const std::vector<KvCacheGroupSpec> scout = find_model_shape("llama-4-scout")->kv_cache_groups(16).value();
  StatusOr<KvLayout> s = make_kv_layout(scout, 48);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->group_windows, (std::vector<std::int64_t>{-8192, -8192, -8192, 0}));
}

ScheduledRequest hybrid_req(const RequestId& id, std::vector<BlockId> g0, std::vector<BlockId> g1,
                            std::int64_t computed, int n) {
  ScheduledRequest r;
  r.id = id;
  r.is_new = true;
  r.group_block_ids = {std::move(g0), std::move(g1)};
  r.num_computed_tokens = computed;
  r.context_token_ids.assign(static_cast<std::size_t>(computed), 1);
  r.token_ids.assign(static_cast<std::size_t>(n), 2);
  r.num_prompt_tokens = computed + n;
  return r;
}

StepPlan hybrid_plan(std::vector<ScheduledRequest> reqs) {
  StepPlan p = scenario::plan(0, std::move(reqs));
  p.group_windows = {8, 0};
  return p;
}

TEST(GpuRefBlockTables, GroupListsAreCheckedAndTheNullBlockIsNeverReached) {
  // Sliding window 8, block size 4: 12 computed tokens, the next query (12) reads 5..12, so
  // block 0 (0..3) may be null and block 1 (4..7) may not.
  BlockTables ok_tables(2, 8, 16, {8, 0});
  const StepPlan good = hybrid_plan({hybrid_req("a", {0, 2, 3, 4}, {5, 6, 7, 8}, 12, 2)});
  ASSERT_TRUE(ok_tables.apply(good, nullptr).ok());
  StatusOr<FlatBatch> b = build_flat_batch(good, ok_tables, 1000);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(host_slot_mapping(*b, ok_tables, 4, 0), (std::vector<std::int64_t>{16, 17}));  // block 4
  EXPECT_EQ(host_slot_mapping(*b, ok_tables, 4, 1), (std::vector<std::int64_t>{32, 33}));  // block 8

  BlockTables t(2, 8, 16, {8, 0});
  const StepPlan reads_null = hybrid_plan({hybrid_req("a", {0, 0, 3, 4}, {5, 6, 7, 8}, 12, 2)});
  ASSERT_TRUE(t.apply(reads_null, nullptr).ok());
  const StatusOr<FlatBatch> bad = build_flat_batch(reads_null, t, 1000);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("null block"), std::string::npos) << bad.status().message();

  BlockTables u(2, 8, 16, {8, 0});
  EXPECT_FALSE(
      u.apply(hybrid_plan({hybrid_req("a", {0, 2, 3, 4}, {0, 6, 7, 8}, 12, 2)}), nullptr).ok());  // null in full
  StepPlan wrong_windows = good;
  wrong_windows.group_windows = {16, 0};
  EXPECT_FALSE(u.apply(wrong_windows, nullptr).ok());
  StepPlan one_list = good;
  one_list.requests[0].group_block_ids.pop_back();
  EXPECT_FALSE(u.apply(one_list, nullptr).ok());
  BlockTables dense(2, 8, 16);
  EXPECT_FALSE(dense.apply(good, nullptr).ok());  // a dense device refuses hybrid plans
  EXPECT_EQ(u.num_live(), 0u);                    // refused plans changed nothing
}

using scenario::HiddenLog;

struct HybridRun {
  HiddenLog hidden;
  int null_entries = 0;     // null blocks the plans carried
  std::int64_t cached = 0;  // tokens served by prefix-cache hits
};

HybridRun run_engine(const std::vector<KvCacheGroupSpec>& groups, const std::vector<StepPlan>& plans) {
  const RefEngineOptions o = scenario::engine_options(groups, scenario::kHybridBlockSize);
  RefEngine engine(o);
  HybridRun run;
  for (const StepPlan& p : plans) {
    StatusOr<RefStepOutput> out = engine.execute(p);
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return run;
    for (const ScheduledRequest& r : p.requests) {
      for (const auto& list : r.group_block_ids)
        run.null_entries += static_cast<int>(std::count(list.begin(), list.end(), 0));
      run.cached += r.num_cached_tokens;
    }
    scenario::record_hidden(p, *out, o.model.hidden, run.hidden);
  }
  return run;
}

class GpuRefHybridModel : public ::testing::TestWithParam<int> {};

TEST_P(GpuRefHybridModel, CachingOnAndOffAgreeAndTheWindowActsOnlyPastItsReach) {
  const int reach = GetParam();  // > 0 sliding window, < 0 chunk
  const std::vector<KvCacheGroupSpec> groups = scenario::tiny_hybrid_groups(reach);
  ASSERT_EQ(groups.size(), 2u);
  const HybridRun on = run_engine(groups, scenario::hybrid_plans(groups, true));
  const HybridRun off = run_engine(groups, scenario::hybrid_plans(groups, false));
  EXPECT_GT(on.null_entries, 0);  // the plans exercise the null block
  EXPECT_GT(on.cached, 0);        // and prefix-cache hits
  EXPECT_EQ(off.cached, 0);
  for (const auto& [key, h] : on.hidden) {
    ASSERT_TRUE(off.hidden.count(key)) << key.first << "@" << key.second;
    EXPECT_EQ(h, off.hidden.at(key)) << key.first << "@" << key.second << " caching on vs off";
  }
  // The dense twin (both layers full attention, plain plans): identical while the window
  // reaches back to position 0, different somewhere past it.
  const HybridRun dense = run_engine({}, scenario::hybrid_plans({}, false));
  const std::int64_t reach_all = reach > 0 ? reach : -reach;  // positions below it see every key
  int same = 0, differ = 0;
  for (const auto& [key, h] : off.hidden) {
    ASSERT_TRUE(dense.hidden.count(key));
    if (key.second < reach_all) {
      EXPECT_EQ(h, dense.hidden.at(key)) << key.first << "@" << key.second << " inside the window";
      ++same;
    } else {
      differ += h != dense.hidden.at(key) ? 1 : 0;
    }
  }
  EXPECT_GT(same, 0);
  EXPECT_GT(differ, 0);
}

INSTANTIATE_TEST_SUITE_P(Reaches, GpuRefHybridModel, ::testing::Values(8, 6, 13, -8, -6, -12),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return (i.param > 0 ? "sliding" : "chunked") +
                                  std::to_string(i.param > 0 ? i.param : -i.param);
                         });

}  // namespace
}  // namespace kv::gpuref
