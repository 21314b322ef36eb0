// Scheduler stories with exact numbers: chunked prefill, admission, preemption, rejection.
#include "model/sched/scheduler.h"

#include <gtest/gtest.h>

#include <numeric>

#include "model/kv_cache_groups.h"

namespace kv {
namespace {

std::vector<TokenId> range_tokens(TokenId from, TokenId to) {
  std::vector<TokenId> v(static_cast<std::size_t>(to - from));
  std::iota(v.begin(), v.end(), from);
  return v;
}

RequestSpec spec(const std::string& id, std::vector<TokenId> prompt, int outputs, int priority = 0,
                 std::int64_t arrival = 0) {
  RequestSpec s;
  s.id = id;
  s.prompt = std::move(prompt);
  s.outputs.assign(static_cast<std::size_t>(outputs), 7);
  s.priority = priority;
  s.arrival_time_us = arrival;
  return s;
}

SchedulerConfig small_config(int blocks, std::int64_t budget, int block_size = 4) {
  SchedulerConfig c;
  c.cache.num_blocks = blocks;
  c.cache.block_size = block_size;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 8;
  return c;
}

// Echoes the teacher-forced token of every sampling request, as a device must.
StepResult echo(const StepPlan& plan) {
  StepResult r;
  for (const auto& s : plan.requests) {
    if (s.samples) r.sampled.emplace_back(s.id, s.next_token);
  }
  r.duration_ns = 1000;
  return r;
}

void expect_ok(const Scheduler& s) {
  std::string why;
  EXPECT_TRUE(s.check_invariants(&why)) << why;
}

std::vector<std::pair<std::string, std::size_t>> scheduled(const StepPlan& p) {
  std::vector<std::pair<std::string, std::size_t>> v;
  for (const auto& r : p.requests) v.emplace_back(r.id, r.token_ids.size());
  return v;
}

using Sched = std::vector<std::pair<std::string, std::size_t>>;

// The same request with its prompt deferred; *expansions counts the prompts expanded.
RequestSpec deferred(RequestSpec s, int* expansions) {
  s.deferred_prompt.size = static_cast<std::int64_t>(s.prompt.size());
  s.deferred_prompt.expand = [tokens = std::move(s.prompt), expansions](std::vector<TokenId>& out) {
    ++*expansions;
    out.insert(out.end(), tokens.begin(), tokens.end());
  };
  s.prompt.clear();
  return s;
}

// Deferred prompts are expanded when their request reaches the head of the waiting queue, and
// the plans are those of the same requests with their prompts given in full.
TEST(SchedulerTest, DeferredPromptsAreExpandedAtTheHeadWithTheSamePlans) {
  Scheduler eager(small_config(12, 8)), lazy(small_config(12, 8));
  int expansions = 0;
  const std::vector<RequestSpec> specs = {spec("a", range_tokens(0, 10), 2),
                                          spec("b", range_tokens(0, 9), 2),  // two blocks shared with a
                                          spec("c", range_tokens(50, 56), 2)};
  for (const RequestSpec& r : specs) {
    ASSERT_TRUE(eager.add_request(r).ok());
    ASSERT_TRUE(lazy.add_request(deferred(r, &expansions)).ok());
  }
  EXPECT_EQ(expansions, 0);
  StepPlan first = lazy.schedule();
  EXPECT_EQ(scheduled(first), (Sched{{"a", 8}}));  // a fills the budget: b and c stay compact
  EXPECT_EQ(expansions, 1);
  StepPlan first_eager = eager.schedule();
  ASSERT_EQ(first.requests[0].token_ids, first_eager.requests[0].token_ids);
  lazy.update_from_output(first, echo(first));
  eager.update_from_output(first_eager, echo(first_eager));
  while (eager.has_unfinished()) {
    ASSERT_TRUE(lazy.has_unfinished());
    const StepPlan p = eager.schedule(), q = lazy.schedule();
    ASSERT_EQ(scheduled(p), scheduled(q)) << "step " << p.step;
    for (std::size_t i = 0; i < p.requests.size(); ++i) {
      EXPECT_EQ(p.requests[i].token_ids, q.requests[i].token_ids);
      EXPECT_EQ(p.requests[i].num_cached_tokens, q.requests[i].num_cached_tokens);
    }
    eager.update_from_output(p, echo(p));
    lazy.update_from_output(q, echo(q));
    expect_ok(lazy);
  }
  EXPECT_FALSE(lazy.has_unfinished());
  EXPECT_EQ(expansions, 3);
  EXPECT_GT(lazy.kv_cache().stats().hits, 0);  // b reused a's blocks, found through its expanded hashes
  EXPECT_EQ(lazy.kv_cache().stats().hits, eager.kv_cache().stats().hits);
}

// Two groups, as gpt-oss: sliding window 8 and full attention, blocks of 4, 13 blocks in all.
SchedulerConfig hybrid_config() {
  SchedulerConfig c = small_config(13, 8);
  KvCacheSpec sliding;
  sliding.type = AttentionType::kSlidingWindow;
  sliding.window = 8;
  sliding.block_size = 4;
  KvCacheSpec full = sliding;
  full.type = AttentionType::kFullAttention;
  full.window = 0;
  const std::vector<LayerKvCacheSpec> layers = {{"l0", sliding}, {"l1", full}};
  c.cache.groups = *get_kv_cache_groups(layers);
  return c;
}

TEST(SchedulerTest, HybridPlansCarryEveryGroupsBlocks) {
  Scheduler s(hybrid_config());
  ASSERT_TRUE(s.kv_cache().tables_per_group());
  ASSERT_TRUE(s.add_request(spec("a", range_tokens(0, 10), 8)).ok());
  StepPlan p0 = s.schedule();
  ASSERT_EQ(p0.requests.size(), 1u);
  EXPECT_TRUE(p0.requests[0].block_ids.empty());
  EXPECT_EQ(p0.requests[0].group_block_ids, (std::vector<std::vector<BlockId>>{{1, 2}, {3, 4}}));
  EXPECT_EQ(p0.group_windows, (std::vector<std::int64_t>{8, 0}));
  expect_ok(s);
  s.update_from_output(p0, echo(p0));
  while (s.has_unfinished()) {
    StepPlan p = s.schedule();
    expect_ok(s);
    s.update_from_output(p, echo(p));
  }
  // The sliding group dropped what fell out of its window; everything is free again.
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 12u);
  EXPECT_EQ(s.kv_cache().blocks_in_use_per_group(), (std::vector<std::int64_t>{0, 0}));
}

TEST(SchedulerTest, HybridPreemptsWhenTheSharedPoolRunsOut) {
  Scheduler s(hybrid_config());
  ASSERT_TRUE(s.add_request(spec("a", range_tokens(0, 8), 12)).ok());
  ASSERT_TRUE(s.add_request(spec("b", range_tokens(100, 108), 12)).ok());
  std::int64_t steps = 0;
  while (s.has_unfinished() && steps++ < 200) {
    StepPlan p = s.schedule();
    expect_ok(s);
    s.update_from_output(p, echo(p));
  }
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_GT(s.stats().preemptions, 0);  // two 20-token requests need 2 * (3 + 5) blocks of 12
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 12u);
}

TEST(SchedulerTest, ChunkedPrefillSplitsTheBudgetRunningFirst) {
  Scheduler s(small_config(32, 8));
  ASSERT_TRUE(s.add_request(spec("a", range_tokens(0, 10), 2)).ok());
  ASSERT_TRUE(s.add_request(spec("b", range_tokens(100, 105), 1)).ok());

  StepPlan p0 = s.schedule();  // a takes the whole budget: 8 of its 10 prompt tokens
  EXPECT_EQ(scheduled(p0), (Sched{{"a", 8}}));
  EXPECT_TRUE(p0.requests[0].is_new);
  EXPECT_FALSE(p0.requests[0].samples);
  EXPECT_EQ(p0.requests[0].block_ids, (std::vector<BlockId>{1, 2}));
  s.update_from_output(p0, echo(p0));
  expect_ok(s);

  StepPlan p1 = s.schedule();  // a finishes its prompt (2) and samples; b gets the other 6 -> 5
  EXPECT_EQ(scheduled(p1), (Sched{{"a", 2}, {"b", 5}}));
  EXPECT_TRUE(p1.requests[0].samples);
  EXPECT_EQ(p1.requests[0].block_ids, (std::vector<BlockId>{3}));
  EXPECT_EQ(p1.total_tokens, 7);
  auto events = s.update_from_output(p1, echo(p1));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].id, "b");
  EXPECT_TRUE(events[1].finished);  // one output token
  EXPECT_EQ(s.num_running(), 1u);

  StepPlan p2 = s.schedule();  // a decodes its second token; b reported finished
  EXPECT_EQ(scheduled(p2), (Sched{{"a", 1}}));
  EXPECT_EQ(p2.finished, (std::vector<RequestId>{"b"}));
  s.update_from_output(p2, echo(p2));
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 31u);
  expect_ok(s);
}

TEST(SchedulerTest, PrefixHitIsReportedAndSkipsComputation) {
  Scheduler s(small_config(32, 64));
  ASSERT_TRUE(s.add_request(spec("a", range_tokens(0, 12), 1)).ok());
  StepPlan p0 = s.schedule();
  s.update_from_output(p0, echo(p0));
  ASSERT_TRUE(s.add_request(spec("b", range_tokens(0, 14), 1)).ok());
  StepPlan p1 = s.schedule();
  ASSERT_EQ(p1.requests.size(), 1u);
  EXPECT_EQ(p1.requests[0].num_cached_tokens, 12);  // a's three full blocks
  EXPECT_EQ(p1.requests[0].num_computed_tokens, 12);
  EXPECT_EQ(p1.requests[0].token_ids.size(), 2u);
  EXPECT_EQ(p1.requests[0].context_token_ids, range_tokens(0, 12));
  EXPECT_EQ(s.kv_cache().stats().hits, 12);
  EXPECT_EQ(s.kv_cache().stats().queries, 12 + 14);
}

TEST(SchedulerTest, PreemptionTakesTheLastRunningAndBlocksAdmission) {
  // 5 usable blocks of 4 tokens. a and b prefill 8 tokens (2 blocks each), c one token.
  SchedulerConfig c = small_config(6, 64);
  c.full_sequence_gate = false;
  Scheduler s(c);
  ASSERT_TRUE(s.add_request(spec("a", range_tokens(0, 8), 6)).ok());
  ASSERT_TRUE(s.add_request(spec("b", range_tokens(50, 58), 6)).ok());
  ASSERT_TRUE(s.add_request(spec("c", range_tokens(90, 91), 1)).ok());
  StepPlan p0 = s.schedule();
  EXPECT_EQ(scheduled(p0), (Sched{{"a", 8}, {"b", 8}, {"c", 1}}));
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 0u);
  s.update_from_output(p0, echo(p0));  // c finishes (1 block back); a and b now hold 9 tokens
  ASSERT_TRUE(s.add_request(spec("d", range_tokens(70, 71), 1)).ok());

  // a takes the free block for its 9th token; b needs one too: b (the last running) is preempted.
  StepPlan p1 = s.schedule();
  EXPECT_EQ(scheduled(p1), (Sched{{"a", 1}}));
  EXPECT_EQ(p1.preempted, (std::vector<RequestId>{"b"}));
  EXPECT_EQ(s.find("b")->num_computed_tokens, 0);
  EXPECT_EQ(s.find("b")->num_preemptions, 1);
  EXPECT_EQ(s.find("b")->status, RequestStatus::kPreempted);
  EXPECT_EQ(s.stats().recomputed_tokens, 8);
  EXPECT_EQ(s.num_waiting(), 2u);  // d was not admitted in a step that preempted
  s.update_from_output(p1, echo(p1));
  expect_ok(s);

  // Run to completion: every request ends with exactly its output length.
  for (int i = 0; i < 100 && s.has_unfinished(); ++i) {
    StepPlan p = s.schedule();
    s.update_from_output(p, echo(p));
    expect_ok(s);
  }
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.stats().finished, 4);
  // b heads the waiting queue from step 2 and is looked up at every admission attempt (as vLLM
  // counts): steps 2-5 fail while a grows, step 6 admits it. Counted apart from first lookups.
  EXPECT_EQ(s.kv_cache().stats().preempted_lookups, 5);
  EXPECT_EQ(s.kv_cache().stats().lookups, 4);
}

TEST(SchedulerTest, HeadOfLineBlocksSmallerRequestsBehind) {
  SchedulerConfig c = small_config(6, 64);  // 5 usable blocks
  Scheduler s(c);
  ASSERT_TRUE(s.add_request(spec("big", range_tokens(0, 12), 2)).ok());      // 3-4 blocks
  ASSERT_TRUE(s.add_request(spec("huge", range_tokens(100, 116), 2)).ok());  // 4-5 blocks
  ASSERT_TRUE(s.add_request(spec("tiny", range_tokens(200, 201), 1)).ok());
  StepPlan p0 = s.schedule();
  // big fits (3 blocks); huge needs 4 with the full-sequence gate and only 2 are free: stop.
  EXPECT_EQ(scheduled(p0), (Sched{{"big", 12}}));
  EXPECT_EQ(s.num_waiting(), 2u);
}

TEST(SchedulerTest, MaxNumSeqsCapsTheBatch) {
  SchedulerConfig c = small_config(64, 1000);
  c.max_num_seqs = 2;
  Scheduler s(c);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(s.add_request(spec("r" + std::to_string(i), range_tokens(i * 10, i * 10 + 5), 3)).ok());
  StepPlan p = s.schedule();
  EXPECT_EQ(p.requests.size(), 2u);
  EXPECT_EQ(s.num_waiting(), 1u);
}

TEST(SchedulerTest, RejectsRequestsThatCanNeverRun) {
  SchedulerConfig c = small_config(4, 64);  // 3 usable blocks = 12 tokens
  c.cache.max_model_len = 10;
  Scheduler s(c);
  Status empty = s.add_request(spec("e", {}, 1));
  EXPECT_EQ(empty.message(), "request e: empty prompt");
  Status too_long = s.add_request(spec("l", range_tokens(0, 11), 1));
  EXPECT_EQ(too_long.message(), "request l: prompt of 11 tokens exceeds max_model_len 10");
  Status no_room = s.add_request(spec("m", range_tokens(0, 10), 1));  // vLLM needs room for one output
  EXPECT_EQ(no_room.message(), "request m: prompt of 10 tokens leaves no room for an output within max_model_len 10");
  Status no_out = s.add_request(spec("o", range_tokens(0, 3), 0));
  EXPECT_EQ(no_out.message(), "request o: output length must be at least 1");
  SchedulerConfig c2 = small_config(3, 64);  // 2 usable blocks = 8 tokens
  Scheduler s2(c2);
  Status big = s2.add_request(spec("b", range_tokens(0, 9), 1));
  EXPECT_EQ(big.message(), "request b: needs 3 KV blocks, the pool has 2");
  EXPECT_EQ(s.stats().rejected, 4);
  EXPECT_FALSE(s.has_unfinished());
}

TEST(SchedulerTest, MaxModelLenFinishesARequest) {
  SchedulerConfig c = small_config(16, 64);
  c.cache.max_model_len = 6;
  Scheduler s(c);
  ASSERT_TRUE(s.add_request(spec("a", range_tokens(0, 4), 10)).ok());
  std::vector<TokenEvent> last;
  for (int i = 0; i < 10 && s.has_unfinished(); ++i) {
    StepPlan p = s.schedule();
    last = s.update_from_output(p, echo(p));
  }
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].status, RequestStatus::kFinishedMaxLen);
  EXPECT_EQ(last[0].output_index, 1);  // 4 prompt + 2 outputs = max_model_len
}

TEST(SchedulerTest, PriorityPolicyPreemptsTheLowestPriority) {
  SchedulerConfig c = small_config(5, 64);  // 4 usable blocks
  c.policy = SchedulingPolicy::kPriority;
  c.full_sequence_gate = false;
  Scheduler s(c);
  ASSERT_TRUE(s.add_request(spec("low", range_tokens(0, 4), 8, /*priority=*/5, 0)).ok());
  ASSERT_TRUE(s.add_request(spec("high", range_tokens(10, 14), 8, /*priority=*/0, 1)).ok());
  StepPlan p0 = s.schedule();
  EXPECT_EQ(scheduled(p0), (Sched{{"high", 4}, {"low", 4}}));  // waiting queue sorted by priority
  s.update_from_output(p0, echo(p0));
  bool preempted_low = false;
  for (int i = 0; i < 40 && s.has_unfinished(); ++i) {
    StepPlan p = s.schedule();
    for (const auto& id : p.preempted) {
      EXPECT_EQ(id, "low");
      preempted_low = true;
    }
    s.update_from_output(p, echo(p));
    expect_ok(s);
  }
  EXPECT_TRUE(preempted_low);
  EXPECT_FALSE(s.has_unfinished());
}

TEST(SchedulerTest, AbortFreesBlocks) {
  Scheduler s(small_config(16, 64));
  ASSERT_TRUE(s.add_request(spec("a", range_tokens(0, 9), 4)).ok());
  StepPlan p = s.schedule();
  s.update_from_output(p, echo(p));
  EXPECT_TRUE(s.abort("a"));
  EXPECT_FALSE(s.abort("a"));
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 15u);
  EXPECT_EQ(s.schedule().finished, (std::vector<RequestId>{"a"}));
  expect_ok(s);
}

// An encoder-decoder model, as Whisper: full self attention and cross attention, blocks of 4,
// caching off; each request brings an 8-token encoder input (2 cross blocks) and the step's
// encoder budget is `encoder_budget` tokens.
SchedulerConfig encoder_decoder_config(std::int64_t encoder_budget) {
  SchedulerConfig c = small_config(20, 64);
  c.cache.enable_caching = false;
  KvCacheSpec self;
  self.type = AttentionType::kFullAttention;
  self.block_size = 4;
  KvCacheSpec cross = self;
  cross.type = AttentionType::kCrossAttention;
  const std::vector<LayerKvCacheSpec> layers = {{"l0", self}, {"l0.cross", cross}};
  c.cache.groups = *get_kv_cache_groups(layers);
  c.max_num_encoder_input_tokens = encoder_budget;
  return c;
}

RequestSpec encoder_spec(const std::string& id, std::vector<TokenId> prompt, int outputs) {
  RequestSpec r = spec(id, std::move(prompt), outputs);
  r.num_encoder_tokens = 8;
  return r;
}

// The KV-cache group of the cross-attention layers in a plan.
std::size_t cross_group(const StepPlan& p) {
  for (std::size_t g = 0; g < p.group_cross_attention.size(); ++g) {
    if (p.group_cross_attention[g]) return g;
  }
  ADD_FAILURE() << "no cross-attention group";
  return 0;
}

TEST(SchedulerTest, EncoderBudgetAdmitsOneEncoderInputPerStep) {
  Scheduler s(encoder_decoder_config(8));  // vLLM's Whisper budget: one encoder input per step
  ASSERT_TRUE(s.add_request(encoder_spec("a", range_tokens(0, 3), 2)).ok());
  ASSERT_TRUE(s.add_request(encoder_spec("b", range_tokens(10, 13), 2)).ok());
  StepPlan p0 = s.schedule();
  ASSERT_EQ(p0.group_cross_attention.size(), 2u);
  const std::size_t cross = cross_group(p0);
  // a runs its 8 encoder tokens and its 3 decoder tokens; b waits for the next step's budget
  // although token budget and blocks would admit it.
  EXPECT_EQ(scheduled(p0), (Sched{{"a", 3}}));
  EXPECT_EQ(p0.requests[0].num_encoder_tokens, 8);
  EXPECT_EQ(p0.requests[0].group_block_ids[cross].size(), 2u);      // 8 encoder positions
  EXPECT_EQ(p0.requests[0].group_block_ids[1 - cross].size(), 1u);  // 3 decoder tokens
  EXPECT_EQ(s.num_waiting(), 1u);
  expect_ok(s);
  s.update_from_output(p0, echo(p0));

  // a decodes without its encoder (its cross blocks stay); b is admitted with its encoder.
  StepPlan p1 = s.schedule();
  EXPECT_EQ(scheduled(p1), (Sched{{"a", 1}, {"b", 3}}));
  EXPECT_EQ(p1.requests[0].num_encoder_tokens, 0);
  EXPECT_TRUE(p1.requests[0].group_block_ids[cross].empty());
  EXPECT_EQ(p1.requests[1].num_encoder_tokens, 8);
  EXPECT_EQ(s.stats().encoder_tokens, 16);
  expect_ok(s);
  s.update_from_output(p1, echo(p1));
  while (s.has_unfinished()) {
    StepPlan p = s.schedule();
    for (const ScheduledRequest& r : p.requests) EXPECT_EQ(r.num_encoder_tokens, 0) << r.id;
    expect_ok(s);
    s.update_from_output(p, echo(p));
  }
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 19u);
}

TEST(SchedulerTest, EncoderBudgetOfTwoInputsAdmitsBoth) {
  Scheduler s(encoder_decoder_config(16));
  ASSERT_TRUE(s.add_request(encoder_spec("a", range_tokens(0, 3), 2)).ok());
  ASSERT_TRUE(s.add_request(encoder_spec("b", range_tokens(10, 13), 2)).ok());
  ASSERT_TRUE(s.add_request(encoder_spec("c", range_tokens(20, 23), 2)).ok());
  StepPlan p0 = s.schedule();
  EXPECT_EQ(scheduled(p0), (Sched{{"a", 3}, {"b", 3}}));  // c's encoder input would make 24
  EXPECT_EQ(s.stats().encoder_tokens, 16);
  expect_ok(s);
}

TEST(SchedulerTest, EncoderInputLargerThanTheBudgetIsRejected) {
  Scheduler s(encoder_decoder_config(4));
  Status st = s.add_request(encoder_spec("a", range_tokens(0, 3), 2));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "request a: encoder input of 8 tokens exceeds max_num_encoder_input_tokens 4");
  EXPECT_EQ(s.stats().rejected, 1);
  SchedulerConfig bad = encoder_decoder_config(-1);
  EXPECT_EQ(bad.validate().message(), "max_num_encoder_input_tokens must be at least 0, got -1");
}

TEST(SchedulerTest, PreemptedEncoderDecoderRequestRerunsItsEncoder) {
  // 8 usable blocks: a and b each take 2 cross blocks and 1 decoder block at admission (b one
  // step later, the encoder budget holding one input); both grow a second decoder block, and
  // a's third (position 8) preempts b, which reruns its encoder when it is readmitted.
  SchedulerConfig c = encoder_decoder_config(8);
  c.cache.num_blocks = 9;
  c.full_sequence_gate = false;
  Scheduler s(c);
  ASSERT_TRUE(s.add_request(encoder_spec("a", range_tokens(0, 4), 6)).ok());
  ASSERT_TRUE(s.add_request(encoder_spec("b", range_tokens(10, 14), 6)).ok());
  std::int64_t steps = 0;
  while (s.has_unfinished() && steps++ < 100) {
    StepPlan p = s.schedule();
    std::int64_t encoder = 0;
    for (const ScheduledRequest& r : p.requests) {
      encoder += r.num_encoder_tokens;
      EXPECT_EQ(r.num_encoder_tokens, r.is_new ? 8 : 0) << r.id << " in step " << p.step;
    }
    EXPECT_LE(encoder, 8);
    expect_ok(s);
    s.update_from_output(p, echo(p));
  }
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.stats().preemptions, 1);
  EXPECT_EQ(s.stats().encoder_tokens, 24);  // a, b, and b again
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 8u);
}

}  // namespace
}  // namespace kv
