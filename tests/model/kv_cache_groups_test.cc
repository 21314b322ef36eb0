// KV-cache specs, vLLM's grouping of layers, lookup sets and pool sizing: exact numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/kv_cache_groups.h"
#include "model/kv_cache_spec.h"

namespace kv {
namespace {

KvCacheSpec full() { return KvCacheSpec{AttentionType::kFullAttention, 16, 2, 64, 64, 2, 0, 0}; }
KvCacheSpec sliding(int window) {
  KvCacheSpec s = full();
  s.type = AttentionType::kSlidingWindow;
  s.window = window;
  return s;
}
KvCacheSpec chunked(int chunk) {
  KvCacheSpec s = full();
  s.type = AttentionType::kChunkedLocalAttention;
  s.chunk = chunk;
  return s;
}

KvCacheSpec mamba(std::int64_t state_bytes, MambaCacheMode mode = MambaCacheMode::kAlign, int block_size = 16) {
  KvCacheSpec s = full();
  s.type = AttentionType::kMamba;
  s.block_size = block_size;
  s.mamba_mode = mode;
  s.mamba_state_bytes = state_bytes;
  return s;
}

// Layers named "L<i>" with the given specs, in model order.
std::vector<LayerKvCacheSpec> model(const std::vector<KvCacheSpec>& specs) {
  std::vector<LayerKvCacheSpec> layers;
  for (std::size_t i = 0; i < specs.size(); ++i) layers.push_back({"L" + std::to_string(i), specs[i]});
  return layers;
}

std::vector<std::vector<std::string>> layers_of(const std::vector<KvCacheGroupSpec>& groups) {
  std::vector<std::vector<std::string>> out;
  for (const auto& g : groups) out.push_back(g.layer_names);
  return out;
}

TEST(KvCacheSpecTest, PageSizeAndSkippedTokens) {
  EXPECT_EQ(full().page_size_bytes(), 16 * 2 * (64 + 64) * 2);  // 8192
  EXPECT_EQ(full().num_skipped_tokens(1000), 0);
  EXPECT_EQ(sliding(32).num_skipped_tokens(10), 0);
  EXPECT_EQ(sliding(32).num_skipped_tokens(47), 16);  // tokens 16..46 are in the window of 47
  EXPECT_EQ(chunked(40).num_skipped_tokens(95), 80);
  EXPECT_EQ(chunked(40).num_skipped_tokens(39), 0);
}

TEST(KvCacheSpecTest, PerRequestCap) {
  // Sliding: ceil(min(window - 1 + in_flight, len) / 16) + 1.
  EXPECT_EQ(sliding(32).max_blocks_per_request(4096, 4096), 257);
  EXPECT_EQ(sliding(32).max_blocks_per_request(4096, 32), 5);  // ceil(63 / 16) + 1
  // Chunked: ceil(min(chunk + in_flight, len) / 16).
  EXPECT_EQ(chunked(64).max_blocks_per_request(4096, 32), 6);
  EXPECT_EQ(full().max_blocks_per_request(4096, 32), 256);
  EXPECT_EQ(sliding(32).max_memory_usage_bytes(4096, 32), 5 * 8192);
}

TEST(KvCacheSpecTest, RefusesWhatItCannotManage) {
  KvCacheSpec stateless = mamba(0);
  EXPECT_NE(validate_spec(stateless).message().find("state size"), std::string::npos);
  KvCacheSpec cramped = mamba(4096);
  cramped.mamba_page_bytes = 2048;
  EXPECT_FALSE(validate_spec(cramped).ok());
  KvCacheSpec stateful_full = full();
  stateful_full.mamba_state_bytes = 64;
  EXPECT_FALSE(validate_spec(stateful_full).ok());
  KvCacheSpec cross = full();
  cross.type = AttentionType::kCrossAttention;
  EXPECT_TRUE(validate_spec(cross).ok());
  KvCacheSpec rswa = full();
  rswa.type = AttentionType::kRSwa;
  EXPECT_FALSE(validate_spec(rswa).ok());  // R-SWA needs its window
  rswa.window = 64;
  EXPECT_TRUE(validate_spec(rswa).ok());
  EXPECT_FALSE(validate_spec(sliding(0)).ok());
  KvCacheSpec windowed_full = full();
  windowed_full.window = 32;
  EXPECT_FALSE(validate_spec(windowed_full).ok());
  EXPECT_TRUE(validate_spec(chunked(64)).ok());
  EXPECT_FALSE(get_kv_cache_groups(model({full(), stateless})).ok());
}

TEST(KvCacheSpecTest, MambaPagesAndSkippedTokens) {
  KvCacheSpec m = mamba(2432);
  EXPECT_EQ(m.page_size_bytes(), 2432);
  m.mamba_page_bytes = 8192;
  EXPECT_EQ(m.page_size_bytes(), 8192);
  // Only the state after the last computed token is read again.
  EXPECT_EQ(m.num_skipped_tokens(0), 0);
  EXPECT_EQ(m.num_skipped_tokens(48), 47);
  m.num_speculative_blocks = 2;
  EXPECT_EQ(m.max_blocks_per_request(4096, 4096), 4);  // align: 2 states + 2 speculative
}

TEST(KvCacheGroupsTest, SmallerMambaPagesArePadded) {
  // Qwen3-Next-like: M M M F, a 2432-byte state next to 8192-byte attention pages.
  auto groups = get_kv_cache_groups(model({mamba(2432), mamba(2432), mamba(2432), full()}));
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  EXPECT_EQ(layers_of(*groups), (std::vector<std::vector<std::string>>{{"L0"}, {"L1"}, {"L2"}, {"L3"}}));
  for (const auto& g : *groups) {
    EXPECT_EQ(g.spec.page_size_bytes(), 8192);
    EXPECT_EQ(g.spec.block_size, 16);
  }
  EXPECT_EQ((*groups)[0].spec.mamba_state_bytes, 2432);
  EXPECT_EQ(lookup_sets(*groups), (std::vector<std::vector<int>>{{3}, {0, 1, 2}}));
}

TEST(KvCacheGroupsTest, LargerMambaPagesScaleTheAttentionBlock) {
  auto groups = get_kv_cache_groups(model({mamba(16384), mamba(16384), full()}));
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  EXPECT_EQ((*groups)[0].spec.block_size, 16);
  EXPECT_EQ((*groups)[2].spec.block_size, 32);  // 16 * 16384 / 8192
  EXPECT_EQ((*groups)[2].spec.page_size_bytes(), 16384);
  EXPECT_EQ(cache_block_size(*groups), 16);
  EXPECT_EQ(scheduler_block_size(*groups), 32);
  EXPECT_EQ(hash_block_size(*groups, /*enable_caching=*/true), 16);
  EXPECT_EQ(hash_block_size(*groups, /*enable_caching=*/false), 32);
  // A Mamba page larger than the attention page but not a multiple of it: refused.
  auto refused = get_kv_cache_groups(model({mamba(12288), full()}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("layer L1: page size 8192 does not divide"), std::string::npos)
      << refused.status().message();
}

TEST(KvCacheGroupsTest, MambaWithoutCachingHashesAtTheSchedulerBlock) {
  // Mode none: one block of max_model_len tokens.
  auto groups = get_kv_cache_groups(model({mamba(8192, MambaCacheMode::kNone, 4096), full()}));
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  EXPECT_EQ(cache_block_size(*groups), 16);
  EXPECT_EQ(scheduler_block_size(*groups), 4096);
  EXPECT_EQ(hash_block_size(*groups, /*enable_caching=*/false), 4096);
  // With caching a Mamba block other than the cache block size hashes at the lcm too.
  EXPECT_EQ(hash_block_size(*groups, /*enable_caching=*/true), 4096);
}

TEST(KvCacheGroupsTest, FullAndRSwaWouldShareAGroupAndAreRefused) {
  KvCacheSpec rswa = full();
  rswa.type = AttentionType::kRSwa;
  rswa.window = 64;
  EXPECT_TRUE(get_kv_cache_groups(model({rswa, rswa})).ok());
  auto mixed = get_kv_cache_groups(model({full(), rswa}));
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("one KV-cache group of two types"), std::string::npos);
}

TEST(KvCacheGroupsTest, OneSpecOrOneTypeMakesOneGroup) {
  auto same = get_kv_cache_groups(model({full(), full(), full()}));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(layers_of(*same), (std::vector<std::vector<std::string>>{{"L0", "L1", "L2"}}));
  // One type with the same window but different head sizes: still one group.
  KvCacheSpec wide = sliding(32);
  wide.head_size = 128;
  auto uniform = get_kv_cache_groups(model({sliding(32), wide}));
  ASSERT_TRUE(uniform.ok());
  ASSERT_EQ(uniform->size(), 1u);
  EXPECT_EQ(uniform->front().group_page_size_bytes, 8192 + 16 * 2 * (128 + 64) * 2);
}

TEST(KvCacheGroupsTest, Gemma3FiveSlidingToOneFull) {
  std::vector<KvCacheSpec> specs;
  for (int i = 0; i < 12; ++i) specs.push_back(i % 6 == 5 ? full() : sliding(32));
  auto groups = get_kv_cache_groups(model(specs));
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ(layers_of(*groups),
            (std::vector<std::vector<std::string>>{
                {"L0", "L6"}, {"L1", "L7"}, {"L2", "L8"}, {"L3", "L9"}, {"L4", "L10"}, {"L5", "L11"}}));
  EXPECT_EQ((*groups)[5].spec, full());
  EXPECT_EQ(lookup_sets(*groups), (std::vector<std::vector<int>>{{5}, {0, 1, 2, 3, 4}}));
}

TEST(KvCacheGroupsTest, Llama4ThreeChunkedToOneFull) {
  std::vector<KvCacheSpec> specs;
  for (int i = 0; i < 8; ++i) specs.push_back(i % 4 == 3 ? full() : chunked(64));
  auto groups = get_kv_cache_groups(model(specs));
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ(layers_of(*groups),
            (std::vector<std::vector<std::string>>{{"L0", "L4"}, {"L1", "L5"}, {"L2", "L6"}, {"L3", "L7"}}));
}

TEST(KvCacheGroupsTest, ShortLastGroupIsPadding) {
  // 7 sliding + 2 full: group size 2, so the sliding layers make 4 groups, the last of one.
  auto groups = get_kv_cache_groups(model(
      {sliding(32), sliding(32), sliding(32), full(), sliding(32), sliding(32), sliding(32), sliding(32), full()}));
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ(layers_of(*groups),
            (std::vector<std::vector<std::string>>{{"L0", "L5"}, {"L1", "L6"}, {"L2", "L7"}, {"L4"}, {"L3", "L8"}}));
  auto size = size_pool_for_budget(*groups, 671743);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->layers_per_group, 2);
  EXPECT_EQ(size->num_blocks, 40);  // floor(floor(671743 / 8192) / 2) = floor(81 / 2)
}

TEST(KvCacheGroupsTest, SimilarBucketsTakeTheLargestSize) {
  // 12 sliding + 13 full: 13 < 1.5 * 12, so group size 13 and one group per type.
  std::vector<KvCacheSpec> specs;
  for (int i = 0; i < 25; ++i) specs.push_back(i % 2 == 1 || i == 24 ? full() : sliding(32));
  auto groups = get_kv_cache_groups(model(specs));
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].layer_names.size(), 12u);
  EXPECT_EQ((*groups)[1].layer_names.size(), 13u);
  auto size = size_pool_for_budget(*groups, 1810431);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->layers_per_group, 13);
  EXPECT_EQ(size->num_blocks, 16);  // floor(220 / 13)
}

TEST(KvCacheGroupsTest, LookupSetsPutFullAttentionFirst) {
  auto groups = get_kv_cache_groups(model({sliding(17), sliding(34), chunked(40), full()}));
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ(lookup_sets(*groups), (std::vector<std::vector<int>>{{3}, {0}, {1}, {2}}));
}

TEST(KvCacheGroupsTest, PoolSizeForOneGroup) {
  auto groups = get_kv_cache_groups(model({sliding(32), sliding(32), sliding(32), sliding(32)}));
  ASSERT_TRUE(groups.ok());
  auto size = size_pool_for_budget(*groups, 557055);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->page_size_bytes, 8192);
  EXPECT_EQ(size->layers_per_group, 4);
  EXPECT_EQ(size->num_blocks, 16);                             // floor(67 / 4)
  EXPECT_FALSE(size_pool_for_budget(*groups, 8192 * 4).ok());  // one block: no room
}

TEST(KvCacheGroupsTest, SmallerPagesGrowTheirBlocks) {
  KvCacheSpec narrow = full();
  narrow.head_size = narrow.head_size_v = 32;  // half the page of sliding(32)
  auto groups = get_kv_cache_groups(model({narrow, sliding(32)}));
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].spec.block_size, 32);
  EXPECT_EQ((*groups)[0].spec.page_size_bytes(), 8192);
  EXPECT_EQ(scheduler_block_size(*groups), 32);
  EXPECT_EQ(hash_block_size(*groups), 16);
}

// The grouping rule written again from vLLM's description (kv_cache_utils.py, uniform pages):
// bucket the layers by spec in order of first appearance; group_size is the largest bucket's
// size when it is under 1.5x the smallest's, else the smallest's; a bucket of n layers makes
// g = ceil(n / group_size) groups, group i holding the bucket's layers i, i + g, i + 2g, ...
std::vector<std::vector<std::string>> reference_groups(const std::vector<LayerKvCacheSpec>& layers) {
  std::vector<KvCacheSpec> specs;
  std::vector<std::vector<std::string>> buckets;
  for (const LayerKvCacheSpec& l : layers) {
    std::size_t b = 0;
    while (b < specs.size() && !(specs[b] == l.spec)) ++b;
    if (b == specs.size()) {
      specs.push_back(l.spec);
      buckets.emplace_back();
    }
    buckets[b].push_back(l.name);
  }
  double smallest = 1e9, largest = 0;
  for (const auto& b : buckets) {
    smallest = std::min(smallest, static_cast<double>(b.size()));
    largest = std::max(largest, static_cast<double>(b.size()));
  }
  const double group_size = largest < 1.5 * smallest ? largest : smallest;
  std::vector<std::vector<std::string>> groups;
  for (const auto& b : buckets) {
    const auto g = static_cast<std::size_t>(std::ceil(static_cast<double>(b.size()) / group_size));
    for (std::size_t i = 0; i < g; ++i) {
      groups.emplace_back();
      for (std::size_t k = i; k < b.size(); k += g) groups.back().push_back(b[k]);
    }
  }
  return groups;
}

// Every ratio of full, sliding and chunked layers up to 9 of a kind (the 1.5x boundary
// included: 2 and 3, 4 and 6, 6 and 9), in three layer orders, against the reference.
TEST(KvCacheGroupsTest, EveryLayerRatioGroupsAsTheReferenceRule) {
  const std::vector<KvCacheSpec> kinds = {full(), sliding(128), chunked(64)};
  int checked = 0;
  for (int n0 = 1; n0 <= 9; ++n0) {
    for (int n1 = 0; n1 <= 9; ++n1) {
      for (int n2 = 0; n2 <= 9; n2 += 3) {
        std::vector<int> counts = {n0, n1, n2};
        for (int order = 0; order < 3; ++order) {
          std::vector<KvCacheSpec> specs;  // order 0: blocks of a kind; 1: round robin; 2: reversed kinds
          std::vector<int> left = counts;
          for (int k = 0; k < 3; ++k) {
            const int kind = order == 2 ? 2 - k : k;
            if (order != 1) specs.insert(specs.end(), static_cast<std::size_t>(left[kind]), kinds[kind]);
          }
          while (order == 1 && (left[0] + left[1] + left[2]) > 0) {
            for (int k = 0; k < 3; ++k) {
              if (left[k] == 0) continue;
              --left[k];
              specs.push_back(kinds[static_cast<std::size_t>(k)]);
            }
          }
          ASSERT_EQ(specs.size(), static_cast<std::size_t>(n0 + n1 + n2));
          const auto layers = model(specs);
          auto groups = get_kv_cache_groups(layers);
          ASSERT_TRUE(groups.ok()) << groups.status().message();
          EXPECT_EQ(layers_of(*groups), reference_groups(layers))
              << n0 << " full, " << n1 << " sliding, " << n2 << " chunked, order " << order;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 9 * 10 * 4 * 3);
}

}  // namespace
}  // namespace kv
