// kvsim sweep's library: sequence-mode numbers on a hand-made trace, determinism across thread
// counts, monotonic LRU hit rate, capacity lists and bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "replay/sweep.h"
#include "traces/trace_io.h"

namespace kv::replay {
namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::temp_directory_path() / ("kvsim_sweep_test_" + std::to_string(::getpid())) / info->name();
  fs::create_directories(dir);
  return (dir / name).string();
}

std::vector<TokenId> range(TokenId from, TokenId to) {  // [from, to]
  std::vector<TokenId> v(static_cast<std::size_t>(to - from + 1));
  std::iota(v.begin(), v.end(), from);
  return v;
}

// Five prompts at block size 4; the story is told in SequenceModeCountsEveryLookup.
std::string hand_made_trace() {
  const std::string path = scratch("hand.kvtrace");
  trace::TraceHeader h;
  h.source = "sweep_test";
  auto w = trace::TraceWriter::create(path, h, true);
  EXPECT_TRUE(w.ok()) << w.status().message();
  std::vector<std::vector<TokenId>> prompts = {range(1, 8), range(1, 10), range(1, 4), range(1, 8), range(100, 119)};
  const std::vector<TokenId> tail = range(20, 27);
  prompts[2].insert(prompts[2].end(), tail.begin(), tail.end());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    trace::TraceRequest r;
    r.id = "r" + std::to_string(i + 1);
    r.arrival_time_us = static_cast<std::int64_t>(i) * 1000;
    r.prompt = prompts[i];
    r.output_length = 1;
    EXPECT_TRUE(w->write(r).ok());
  }
  EXPECT_TRUE(w->close().ok());
  return path;
}

TEST(SweepSequence, SequenceModeCountsEveryLookup) {
  // Capacity 12 tokens at block size 4: 3 blocks and the null block.
  //   r1 [1..8]        misses (a lookup may hit at most (8-1)/4 = 1 block); caches A=[1..4], B=[5..8]
  //   r2 [1..10]       hits A, B (8 tokens); its partial block holds [9, 10], unhashed
  //   r3 [1..4,20..27] hits A (4); reuses the partial block and B: 1 eviction
  //   r4 [1..8]        hits A (4; at most 1 block); reuses the block of [24..27]: 1 eviction
  //   r5 20 tokens     needs 5 blocks > 3: looked up (0 hits) but not stored
  auto p = run_sequence(SweepConfig{hand_made_trace(), 12, "lru", 4});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->pool_blocks, 4);
  EXPECT_EQ(p->lookups, 5);
  EXPECT_EQ(p->queries, 8 + 10 + 12 + 8 + 20);
  EXPECT_EQ(p->hits, 0 + 8 + 4 + 4 + 0);
  EXPECT_EQ(p->evictions, 2);
  EXPECT_EQ(p->requests, 5);
  EXPECT_EQ(p->unfit_requests, 1);
  EXPECT_DOUBLE_EQ(p->hit_rate, 16.0 / 58.0);
}

TEST(SweepSequence, LargePoolsAreCappedWithoutChangingCounts) {
  const std::string t = hand_made_trace();
  SweepOptions o;
  o.traces = {t};
  o.capacities = {1000, 1000000};
  o.block_sizes = {4};
  o.optimum = false;
  auto points = run_sweep(o);
  ASSERT_TRUE(points.ok()) << points.status().message();
  ASSERT_EQ(points->size(), 2u);
  // Prompt blocks of the trace: 2 + 3 + 3 + 2 + 5 = 15, plus the null block.
  EXPECT_EQ((*points)[1].pool_blocks, 16);
  auto uncapped = run_sequence(SweepConfig{t, 1000000, "lru", 4});
  ASSERT_TRUE(uncapped.ok());
  EXPECT_EQ((*points)[1].hits, uncapped->hits);
  EXPECT_EQ((*points)[1].evictions, uncapped->evictions);
  EXPECT_EQ((*points)[0].hits, (*points)[1].hits);
}

TEST(SweepSequence, CsvIsTheSameBytesWhateverTheJobs) {
  SweepOptions o;
  o.traces = {"traces/data/sharegpt_sample.kvtrace"};
  o.capacities = {5000, 20000, 80000};
  o.policies = {"lru", "lru-unhashed-first"};
  o.jobs = 1;
  auto one = run_sweep(o);
  o.jobs = 2;
  auto two = run_sweep(o);
  o.jobs = 7;
  auto seven = run_sweep(o);
  ASSERT_TRUE(one.ok() && two.ok() && seven.ok());
  const std::string csv = sweep_csv(*one);
  EXPECT_EQ(csv, sweep_csv(*two));
  EXPECT_EQ(csv, sweep_csv(*seven));
  // header + 6 configurations + the optimum at each of the 3 capacities, after them
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 10);
  EXPECT_NE(csv.find("\nsharegpt_sample,80000,lru-unhashed-first,16,sequence,"), std::string::npos);
  EXPECT_NE(csv.find("\nsharegpt_sample,5000,optimum,16,sequence,"), std::string::npos);
  EXPECT_LT(csv.find(",lru-unhashed-first,"), csv.find(",optimum,"));
  EXPECT_EQ(csv.rfind("trace,capacity_tokens,policy,block_size,mode,hit_rate,", 0), 0u);
}

TEST(SweepSequence, LruHitRateGrowsWithCapacity) {
  SweepOptions o;
  o.traces = {"traces/data/sharegpt_sample.kvtrace"};
  o.capacities = {1000, 3000, 10000, 30000, 100000, 300000, 1000000};
  o.jobs = 2;
  o.optimum = false;
  auto points = run_sweep(o);
  ASSERT_TRUE(points.ok()) << points.status().message();
  for (std::size_t i = 1; i < points->size(); ++i) {
    EXPECT_GE((*points)[i].hits, (*points)[i - 1].hits) << "capacity " << (*points)[i].config.capacity_tokens;
  }
  EXPECT_LT(points->front().hit_rate, 0.35);
  EXPECT_GT(points->back().hit_rate, 0.7);
  EXPECT_EQ(points->back().evictions, 0);
}

TEST(SweepCapacities, ListsSuffixesAndLogRanges) {
  auto list = parse_capacities("1e4,3e4,1M,2.5k,1G");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(*list, (std::vector<std::int64_t>{10000, 30000, 1000000, 2500, 1000000000}));
  auto range3 = parse_capacities("1e4:1e6:3");
  ASSERT_TRUE(range3.ok());
  EXPECT_EQ(*range3, (std::vector<std::int64_t>{10000, 21544, 46416, 100000, 215443, 464159, 1000000}));
  EXPECT_FALSE(parse_capacities("1e4,,2").ok());
  EXPECT_NE(parse_capacities("ten").status().message().find("'ten' is not a positive number"), std::string::npos);
  EXPECT_FALSE(parse_capacities("-5").ok());
  EXPECT_FALSE(parse_capacities("1e6:1e4:3").ok());
  EXPECT_FALSE(parse_capacities("1e4:1e6").ok());
  for (const char* bad : {"0x10", "inf", "nan", "1e30", "0.4", "1e4:0x1p20:3"})
    EXPECT_FALSE(parse_capacities(bad).ok()) << bad;
}

TEST(SweepBadInput, NamesWhatIsWrong) {
  SweepOptions o;
  o.traces = {"traces/data/sharegpt_sample.kvtrace"};
  o.capacities = {1000};
  o.policies = {"fifo"};
  auto bad_policy = run_sweep(o);
  ASSERT_FALSE(bad_policy.ok());
  EXPECT_NE(bad_policy.status().message().find("unknown policy 'fifo'"), std::string::npos);
  o.policies = {"optimum"};
  auto optimum = run_sweep(o);
  ASSERT_FALSE(optimum.ok());
  EXPECT_NE(optimum.status().message().find("'optimum' is not a policy to run"), std::string::npos);
  o.policies = {"lru"};
  o.traces = {scratch("missing.kvtrace")};
  auto missing = run_sweep(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.kvtrace"), std::string::npos);
  o.traces = {"traces/data/sharegpt_sample.kvtrace"};
  o.mode = "serving";
  o.serving.scheduler.max_num_seqs = 0;  // the serving replay's configuration is checked before any work
  auto bad_serving = run_sweep(o);
  ASSERT_FALSE(bad_serving.ok());
  EXPECT_NE(bad_serving.status().message().find("--max-num-seqs"), std::string::npos);
}

}  // namespace
}  // namespace kv::replay
