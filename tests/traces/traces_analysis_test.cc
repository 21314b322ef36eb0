// analyze_trace on a tiny trace whose every number is checked by hand (block size 2).
#include <gtest/gtest.h>

#include "tests/traces/traces_test_util.h"
#include "traces/trace_analysis.h"
#include "traces/trace_io.h"

namespace kv::trace {
namespace {

using testing::read_bytes;
using testing::scratch_path;

// Blocks of 2 tokens: A=[1,2] B=[3,4] C=[7,8] D=[9,9] (D after A).
//   r0 [1,2,3,4,5]  accesses A B        (positions 0 1)
//   r1 [7,8,9]      accesses C          (2)
//   r2 [1,2,3,4,6]  hits A B = 4 tokens; A reused after 2 requests, B and C between; B likewise
//   r3 [1,2,9,9]    cap (4-1)/2 = 1: hits A = 2 tokens (D is new); A reused after 1 request, B between
// Accesses in order: A B C A B A D (7).
std::string tiny_trace() {
  const std::string path = scratch_path("tiny.kvtrace");
  TraceHeader h;
  h.source = "tiny";
  StatusOr<TraceWriter> w = TraceWriter::create(path, h, /*overwrite=*/true);
  EXPECT_TRUE(w.ok());
  const std::vector<std::vector<TokenId>> prompts = {{1, 2, 3, 4, 5}, {7, 8, 9}, {1, 2, 3, 4, 6}, {1, 2, 9, 9}};
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    TraceRequest r;
    r.id = "r" + std::to_string(i);
    r.arrival_time_us = static_cast<std::int64_t>(i) * 500000;
    r.prompt = prompts[i];
    r.output_length = static_cast<std::int64_t>(i) + 1;
    r.session_id = i % 2 == 0 ? "even" : "odd";
    EXPECT_TRUE(w->write(r).ok());
  }
  EXPECT_TRUE(w->close().ok());
  return path;
}

TEST(TraceAnalysis, TinyTraceExactNumbers) {
  AnalysisOptions o;
  o.block_size = 2;
  o.dot_path = scratch_path("tree.dot");
  StatusOr<TraceAnalysis> a = analyze_trace(tiny_trace(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->requests, 4);
  EXPECT_EQ(a->sessions, 2);
  EXPECT_EQ(a->prompt_tokens, 17);
  EXPECT_EQ(a->output_tokens, 10);
  EXPECT_DOUBLE_EQ(a->prompt_len.mean, 4.25);
  EXPECT_DOUBLE_EQ(a->prompt_len.p50, 4.5);  // numpy's linear method over {3, 4, 5, 5}
  EXPECT_DOUBLE_EQ(a->prompt_len.p90, 5);
  EXPECT_EQ(a->prompt_len.max, 5);
  EXPECT_DOUBLE_EQ(a->output_len.p50, 2.5);
  EXPECT_EQ(a->output_len.max, 4);
  EXPECT_DOUBLE_EQ(a->arrival_rate, 2.0);  // 3 gaps in 1.5 s
  EXPECT_EQ(a->block_accesses, 7);         // A B, C, A B, A D
  EXPECT_EQ(a->distinct_blocks, 4);
  EXPECT_EQ(a->hit_tokens, 6);
  EXPECT_DOUBLE_EQ(a->infinite_cache_hit_rate, 6.0 / 17.0);
  EXPECT_EQ(a->reuse_requests.count, 3);
  EXPECT_EQ(a->reuse_requests.p50, 2);
  EXPECT_EQ(a->reuse_requests.max, 2);
  EXPECT_DOUBLE_EQ(a->reuse_requests.mean, 5.0 / 3.0);
  EXPECT_EQ(a->reuse_blocks.p50, 2);
  EXPECT_EQ(a->reuse_blocks.max, 2);
  EXPECT_EQ(a->reuse_blocks_histogram, (std::vector<std::int64_t>{0, 3}));  // distances 2, 2, 1
  ASSERT_EQ(a->top_prefixes.size(), 2u);
  EXPECT_EQ(a->top_prefixes[0].depth_blocks, 1);  // A: r0 r2 r3
  EXPECT_EQ(a->top_prefixes[0].requests, 3);
  EXPECT_EQ(a->top_prefixes[0].first_request_id, "r0");
  EXPECT_EQ(a->top_prefixes[1].depth_blocks, 2);  // A B: r0 r2
  EXPECT_EQ(a->top_prefixes[1].requests, 2);
  const std::string dot = read_bytes(o.dot_path);
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("blocks 1-1 (2 tokens)\n3 requests"), std::string::npos) << dot;
  EXPECT_NE(dot.find("blocks 2-2 (4 tokens)\n2 requests"), std::string::npos) << dot;
  EXPECT_NE(dot.find("0->1"), std::string::npos) << dot;
  EXPECT_NE(dot.find("1->2"), std::string::npos) << dot;
}

TEST(TraceAnalysis, OutputTokensEnterTheCacheAndSaltSeparates) {
  const std::string path = scratch_path("out.kvtrace");
  StatusOr<TraceWriter> w = TraceWriter::create(path, TraceHeader());
  ASSERT_TRUE(w.ok());
  TraceRequest r;
  r.id = "a";
  r.prompt = {1, 2, 3};
  r.output_tokens = {4, 5, 6};  // cached: [1,2] [3,4] [5]; 6 is never computed
  r.output_length = 3;
  ASSERT_TRUE(w->write(r).ok());
  r = TraceRequest();
  r.id = "b";
  r.prompt = {1, 2, 3, 4, 5, 6, 7};  // hits [1,2] [3,4] = 4 tokens; [5,6] was not cached
  r.output_length = 1;
  ASSERT_TRUE(w->write(r).ok());
  r.id = "c";
  r.cache_salt = "other tenant";  // same tokens, different hashes: no hits
  ASSERT_TRUE(w->write(r).ok());
  ASSERT_TRUE(w->close().ok());
  AnalysisOptions o;
  o.block_size = 2;
  StatusOr<TraceAnalysis> a = analyze_trace(path, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->hit_tokens, 4);
  EXPECT_EQ(a->requests_with_output_tokens, 1);
}

TEST(TraceAnalysis, JsonAndTextAreDeterministic) {
  AnalysisOptions o;
  o.block_size = 2;
  StatusOr<TraceAnalysis> a = analyze_trace(tiny_trace(), o);
  StatusOr<TraceAnalysis> b = analyze_trace(tiny_trace(), o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(analysis_to_json(*a), analysis_to_json(*b));
  EXPECT_EQ(analysis_to_text(*a), analysis_to_text(*b));
  EXPECT_NE(analysis_to_json(*a).find("\"infinite_cache_hit_rate\": 0.35294117647058826"), std::string::npos)
      << analysis_to_json(*a);
}

TEST(TraceAnalysis, BadInputs) {
  AnalysisOptions o;
  o.block_size = 0;
  EXPECT_FALSE(analyze_trace(tiny_trace(), o).ok());
  o.block_size = 16;
  o.hash_algo = "md5";
  StatusOr<TraceAnalysis> a = analyze_trace(tiny_trace(), o);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("unknown hash algorithm 'md5'"), std::string::npos);
  EXPECT_FALSE(analyze_trace(scratch_path("missing.kvtrace"), AnalysisOptions()).ok());
}

}  // namespace
}  // namespace kv::trace
