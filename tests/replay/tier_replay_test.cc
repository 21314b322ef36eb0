// Second KV-cache tiers end to end (docs/tiers.md): a host tier serves hits that GPU memory
// evicted and lands mean TTFT between the GPU-only and the infinite-GPU runs; an infinitely
// large, infinitely fast tier gives the hit rate of an infinite GPU cache; with the tier off
// the decisions are the same bytes; the shadow memory checks what a load brings back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "replay/replay_builder.h"
#include "reports/grid_report.h"
#include "reports/result_json.h"
#include "reports/run_folder.h"
#include "sim/shadow_kv.h"

namespace kv {
namespace {

using namespace kv::replay;

const char* kTrace = "traces/data/mooncake_conversation.kvtrace";

ReplayConfig base(std::int64_t kv_cache_tokens) {
  ReplayConfig c;
  c.run.limit = 400;
  c.arrivals.rate_scale = 0.25;  // the trace's arrivals, four times slower: a loaded, not overloaded, server
  c.device.kv_cache_tokens = kv_cache_tokens;
  c.run.replay.keep_decision_text = false;
  c.device.verify = sim::VerifyMode::kFast;
  return c;
}

ReplaySummary run(const ReplayConfig& c) {
  auto built = build_replay(c, kTrace);
  EXPECT_TRUE(built.ok()) << built.status().message();
  if (!built.ok()) return {};
  auto summary = built->make_replayer(c)->run();
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  if (!summary.ok()) return {};
  EXPECT_TRUE(summary->violations.empty()) << summary->violations.front();
  return *summary;
}

void set(ReplayConfig& c, const std::string& option, const std::string& value) {
  Status s = set_option(c, option, value);
  ASSERT_TRUE(s.ok()) << s.message();
}

constexpr std::int64_t kSmallGpu = 200000;      // tokens: the trace's prefixes do not stay
constexpr std::int64_t kInfiniteGpu = 8000000;  // every block of the run fits: no eviction

TEST(TierReplay, HostTierServesEvictedPrefixesAndLandsTtftBetween) {
  const ReplaySummary gpu_only = run(base(kSmallGpu));
  const ReplaySummary infinite = run(base(kInfiniteGpu));
  ReplayConfig c = base(kSmallGpu);
  set(c, "host-cache-bytes", "256000000000");
  set(c, "host-link", "pcie5");
  const ReplaySummary tier = run(c);
  EXPECT_EQ(infinite.evictions, 0);
  ASSERT_EQ(tier.tiers.size(), 1u);
  EXPECT_EQ(tier.tiers[0].name, "host");
  EXPECT_GT(tier.tiers[0].first_hit_tokens, 0);
  EXPECT_GT(tier.tiers[0].loaded_bytes, 0);
  EXPECT_GT(tier.tier_load_ns, 0);
  EXPECT_GT(tier.combined_hit_rate, gpu_only.request_hit_rate);
  EXPECT_LE(tier.combined_hit_rate, infinite.request_hit_rate + 1e-12);
  EXPECT_GT(gpu_only.serving.ttft_ms.mean, tier.serving.ttft_ms.mean);
  EXPECT_GT(tier.serving.ttft_ms.mean, infinite.serving.ttft_ms.mean);
  EXPECT_NE(tier.digest, gpu_only.digest);
}

// Every eviction policy reports the blocks it evicts to the tier, on one group and on a
// hybrid model (whose groups run as full attention under a tier, as vLLM turns its hybrid
// manager off with a KV connector): a host tier that fits the run gets hits with each.
TEST(TierReplay, EveryPolicyFeedsTheHostTierOnEveryLayout) {
  for (const char* model : {"llama3-8b", "gpt-oss-20b"}) {
    for (const char* policy : {"lru", "lfu", "slru", "leaf-lru", "priority"}) {
      ReplayConfig c = base(kSmallGpu);
      c.run.limit = 200;
      set(c, "model", model);
      set(c, "eviction-policy", policy);
      set(c, "host-cache-bytes", "256000000000");
      const ReplaySummary s = run(c);
      ASSERT_EQ(s.tiers.size(), 1u) << model << " " << policy;
      EXPECT_GT(s.evictions, 0) << model << " " << policy;
      EXPECT_GT(s.tiers[0].stored_bytes, 0) << model << " " << policy;
      EXPECT_GT(s.tiers[0].first_hit_tokens, 0) << model << " " << policy;
      EXPECT_TRUE(s.groups.empty()) << model << ": one group under a tier";
    }
  }
}

TEST(TierReplay, FiguresReachTheSummaryAndBothJsonFiles) {
  ReplayConfig c = base(kSmallGpu);
  set(c, "host-cache-bytes", "512000000000");
  set(c, "disk-cache-bytes", "512000000000");
  const ReplaySummary s = run(c);
  ASSERT_EQ(s.tiers.size(), 2u);
  const std::string text = reports::format_summary("replay", s, 1.0);
  EXPECT_NE(text.find("host tier hit rate"), std::string::npos) << text;
  EXPECT_NE(text.find("disk tier hit rate"), std::string::npos) << text;
  EXPECT_NE(text.find("tier load / stall time"), std::string::npos) << text;
  const std::string summary = reports::summary_json({}, s, 1.0);
  EXPECT_NE(summary.find("\"kv_tiers\""), std::string::npos);
  EXPECT_NE(summary.find("\"loaded_bytes\": " + std::to_string(s.tiers[0].loaded_bytes)), std::string::npos);
  const std::string result = reports::result_json({}, s, "20260101-000000");
  EXPECT_NE(result.find("\"combined_hit_rate\""), std::string::npos);
  EXPECT_NE(result.find("\"stored_bytes\": " + std::to_string(s.tiers[1].stored_bytes)), std::string::npos);
  // Without a tier nothing of it appears.
  const ReplaySummary plain = run(base(kSmallGpu));
  EXPECT_EQ(reports::format_summary("replay", plain, 1.0).find("tier"), std::string::npos);
  EXPECT_EQ(reports::result_json({}, plain, "20260101-000000").find("kv_tiers"), std::string::npos);
  // A --vary sweep's sweep.csv: the tier columns, filled for the tiered point, empty without.
  GridPoint point;
  point.settings = {{"host-cache-bytes", "512000000000"}};
  const std::string csv = reports::grid_csv({point, point}, {s, plain});
  EXPECT_NE(csv.find(",overloaded,tier_hit_rate,combined_hit_rate,host_hit_tokens,disk_hit_tokens,"
                     "tier_loaded_bytes,tier_stored_bytes,tier_stall_ms\n"),
            std::string::npos)
      << csv;
  const std::string loaded_stored = "," + std::to_string(s.tiers[0].loaded_bytes + s.tiers[1].loaded_bytes) + "," +
                                    std::to_string(s.tiers[0].stored_bytes + s.tiers[1].stored_bytes) + ",";
  EXPECT_NE(csv.find("," + std::to_string(s.tiers[0].hit_tokens) + "," + std::to_string(s.tiers[1].hit_tokens) +
                     loaded_stored),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find(",no,,,,,,,\n"), std::string::npos) << csv;
}

TEST(TierReplay, InfiniteInstantTierGivesTheInfiniteGpuHitRate) {
  // One request at a time: every request's hit is the longest prefix computed before it,
  // wherever that prefix now lives.
  ReplayConfig gpu = base(kInfiniteGpu);
  set(gpu, "max-concurrency", "1");
  const ReplaySummary infinite = run(gpu);
  for (const char* store : {"on-evict", "every-full-block"}) {
    ReplayConfig c = base(kSmallGpu);
    set(c, "max-concurrency", "1");
    set(c, "host-cache-bytes", "1000000000000000");
    set(c, "host-link", "1000000000:0");
    set(c, "tier-store", store);
    const ReplaySummary tier = run(c);
    EXPECT_GT(tier.admitted_tier_tokens, 0) << store;
    EXPECT_EQ(tier.admitted_hit_tokens + tier.admitted_tier_tokens, infinite.admitted_hit_tokens) << store;
    EXPECT_DOUBLE_EQ(tier.combined_hit_rate, infinite.request_hit_rate) << store;
    EXPECT_EQ(tier.tiers[0].dropped_blocks, 0) << store;
  }
}

TEST(TierReplay, DiskTierBelowASmallHostTierServesHitsToo) {
  ReplayConfig c = base(kSmallGpu);
  set(c, "host-cache-bytes", "16000000000");
  set(c, "disk-cache-bytes", "1000000000000");
  set(c, "tier-load", "stall");
  const ReplaySummary tier = run(c);
  ASSERT_EQ(tier.tiers.size(), 2u);
  EXPECT_GT(tier.tiers[0].dropped_blocks, 0);  // the host tier overflowed into the disk tier
  EXPECT_GT(tier.tiers[1].stored_blocks, 0);
  EXPECT_GT(tier.tiers[1].first_hit_tokens, 0);
  EXPECT_GT(tier.tier_stall_ns, 0);
}

TEST(TierReplay, StallingLoadsCostMoreThanOverlappedOnes) {
  ReplayConfig overlap = base(kSmallGpu);
  set(overlap, "host-cache-bytes", "256000000000");
  set(overlap, "host-link", "pcie4");
  ReplayConfig stall = overlap;
  set(stall, "tier-load", "stall");
  const ReplaySummary a = run(overlap);
  const ReplaySummary b = run(stall);
  EXPECT_GT(b.tier_stall_ns, a.tier_stall_ns);
}

TEST(TierReplay, SameInputsSameDecisions) {
  ReplayConfig c = base(kSmallGpu);
  set(c, "host-cache-bytes", "8000000000");
  set(c, "disk-cache-bytes", "64000000000");
  EXPECT_EQ(run(c).digest, run(c).digest);
}

TEST(TierReplay, OptionsAreCheckedWithTheirNames) {
  ReplayConfig c = base(kSmallGpu);
  EXPECT_EQ(set_option(c, "host-link", "pcie9").message().rfind("--host-link: ", 0), 0u);
  ASSERT_TRUE(set_option(c, "disk-cache-bytes", "1000000000").ok());
  EXPECT_NE(c.validate().message().find("--disk-cache-bytes: needs --host-cache-bytes"), std::string::npos);
  ASSERT_TRUE(set_option(c, "host-cache-bytes", "1000").ok());
  EXPECT_NE(c.validate().message().find("--host-cache-bytes: holds less than one block"), std::string::npos);
  ASSERT_TRUE(set_option(c, "host-cache-bytes", "1000000000").ok());
  ASSERT_TRUE(set_option(c, "prefix-caching", "off").ok());
  EXPECT_NE(c.validate().message().find("needs --prefix-caching on"), std::string::npos);
}

// Hand-made plans: request a computes 8 tokens in blocks 1 and 2 and finishes; block 1 is
// saved to the host tier under `key`; request b is admitted with its first block loaded
// from the tier into block 3.
struct TierPlans {
  BlockHash key;
  StepPlan first, second;
  explicit TierPlans(std::vector<TokenId> b_context) {
    key.size = 32;
    key.bytes[0] = 7;
    first.block_size = second.block_size = 4;
    ScheduledRequest a;
    a.id = "a";
    a.is_new = true;
    a.block_ids = {1, 2};
    a.token_ids = {10, 11, 12, 13, 14, 15, 16, 17};
    a.num_prompt_tokens = 8;
    first.requests.push_back(a);
    second.step = 1;
    second.finished = {"a"};
    second.tier_stores_before.push_back({1, key, 0, {}, -1});
    ScheduledRequest b;
    b.id = "b";
    b.is_new = true;
    b.block_ids = {3, 4};
    b.num_computed_tokens = 4;
    b.context_token_ids = std::move(b_context);
    b.token_ids = {20, 21};
    b.num_prompt_tokens = 6;
    second.requests.push_back(b);
    second.tier_loads.push_back({3, key, 0, "b", 0});
  }
};

TEST(TierShadow, ALoadBringsBackWhatWasStored) {
  TierPlans p({10, 11, 12, 13});
  sim::ShadowKv shadow(sim::VerifyMode::kFull);
  std::vector<sim::Violation> v;
  shadow.apply(p.first, &v);
  shadow.apply(p.second, &v);
  EXPECT_TRUE(v.empty()) << v.front().to_string();
  EXPECT_EQ(shadow.num_tier_copies(), 1u);
}

TEST(TierShadow, ALoadOfOtherContentsIsAMismatchAtLoad) {
  TierPlans p({10, 11, 99, 13});  // b's prefix differs at position 2
  sim::ShadowKv shadow(sim::VerifyMode::kFast);
  std::vector<sim::Violation> v;
  shadow.apply(p.first, &v);
  shadow.apply(p.second, &v);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].kind, sim::Violation::Kind::kMismatch);
  EXPECT_STREQ(v[0].when, "tier load");
  EXPECT_EQ(v[0].position, 2);
  EXPECT_EQ(v[0].more, 1);  // position 3 differs too (the fingerprints chain the prefix)
}

TEST(TierShadow, ALoadOfAnEntryNeverStoredOrDroppedIsABadPlan) {
  TierPlans p({10, 11, 12, 13});
  p.second.tier_stores_before.clear();
  sim::ShadowKv shadow(sim::VerifyMode::kFast);
  std::vector<sim::Violation> v;
  shadow.apply(p.first, &v);
  shadow.apply(p.second, &v);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].kind, sim::Violation::Kind::kBadPlan);
  EXPECT_NE(v[0].detail.find("no tier store kept"), std::string::npos);
}

}  // namespace
}  // namespace kv
