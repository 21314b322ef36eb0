// Speculative decoding with exact numbers: what SpeculativeConfig derives and refuses, and the
// scheduler's stories: drafts verified beside a decode and rolled back when rejected (their
// blocks kept), drafts trimmed by the budget, the threshold and max_model_len, requests that
// finish inside their drafts, padded new decodes, preemption dropping drafts.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "model/sched/scheduler.h"
#include "model/sched/speculative_config.h"

namespace kv {
namespace {

constexpr TokenId kOutputStart = 90000;  // every request's k-th output is kOutputStart + k

SpeculativeConfig speculate(SpecMethod method, int k, bool parallel = false) {
  SpeculativeConfig c;
  c.method = method;
  c.num_speculative_tokens = k;
  c.parallel_drafting = parallel;
  return c;
}

// 15 usable blocks of 16 tokens, max_model_len 240, 4 sequences.
SchedulerConfig spec_config(SpeculativeConfig speculative, std::int64_t budget = 64) {
  SchedulerConfig c;
  c.cache.num_blocks = 16;
  c.cache.block_size = 16;
  c.cache.max_model_len = 240;
  c.cache.free_order = FreeOrder::kUnhashedFirst;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 4;
  c.speculative = speculative;
  return c;
}

RequestSpec request(const std::string& id, TokenId first, int prompt_len, int max_tokens,
                    std::vector<TokenId> stop = {}) {
  RequestSpec r;
  r.id = id;
  r.prompt.resize(static_cast<std::size_t>(prompt_len));
  std::iota(r.prompt.begin(), r.prompt.end(), first);
  std::vector<TokenId> outputs(static_cast<std::size_t>(max_tokens));
  std::iota(outputs.begin(), outputs.end(), kOutputStart);
  r.outputs = std::move(outputs);
  r.stop_token_ids = std::move(stop);
  return r;
}

// The device: each request with drafts keeps `accepted[id]` of them; every sampling request
// gets the output after its accepted drafts.
StepResult verify(const Scheduler& s, const StepPlan& plan, std::map<std::string, int> accepted = {}) {
  StepResult result;
  for (const ScheduledRequest& sr : plan.requests) {
    if (!sr.samples) continue;
    const int a = sr.spec_token_ids.empty() ? 0 : accepted[sr.id];
    if (!sr.spec_token_ids.empty()) result.num_accepted.emplace_back(sr.id, a);
    result.sampled.emplace_back(sr.id, kOutputStart + s.find(sr.id)->num_output_tokens() + a);
  }
  return result;
}

// The drafter proposes the true continuation: `count` drafts after the request's outputs.
void propose(Scheduler& s, const std::string& id, int count) {
  std::vector<TokenId> drafts;
  for (int k = 0; k < count; ++k) drafts.push_back(kOutputStart + s.find(id)->num_output_tokens() + k);
  s.update_draft_token_ids(id, drafts);
}

std::vector<std::pair<std::string, std::size_t>> scheduled(const StepPlan& p) {
  std::vector<std::pair<std::string, std::size_t>> v;
  for (const auto& r : p.requests) v.emplace_back(r.id, r.token_ids.size());
  return v;
}
using Sched = std::vector<std::pair<std::string, std::size_t>>;

void expect_ok(const Scheduler& s) {
  std::string why;
  EXPECT_TRUE(s.check_invariants(&why)) << why;
}

TEST(SpeculativeConfigTest, DerivesWhatVllmDerives) {
  struct Row {
    SpeculativeConfig c;
    bool eagle;
    int lookahead, slots;
  };
  const Row rows[] = {
      {speculate(SpecMethod::kEagle, 3), true, 3, 0},
      {speculate(SpecMethod::kEagle3, 5, true), true, 5, 4},
      {speculate(SpecMethod::kMtp, 2), true, 2, 0},
      {speculate(SpecMethod::kDspark, 4), true, 4, 3},  // parallel drafting forced on
      {speculate(SpecMethod::kDflash, 3), true, 4, 2},  // K + 1 lookahead slots
      {speculate(SpecMethod::kDraftModel, 2), false, 2, 1},
      {speculate(SpecMethod::kDraftModel, 5, true), false, 5, 5},
      {speculate(SpecMethod::kNgram, 3), false, 0, 0},
      {speculate(SpecMethod::kSuffix, 2), false, 0, 0},
      {speculate(SpecMethod::kMedusa, 4), false, 0, 0},
      {SpeculativeConfig{}, false, 0, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(to_string(row.c.method));
    EXPECT_TRUE(row.c.validate().ok()) << row.c.validate().message();
    EXPECT_EQ(row.c.use_eagle(), row.eagle);
    EXPECT_EQ(row.c.num_lookahead_tokens(), row.lookahead);
    EXPECT_EQ(row.c.drafting_slots_per_seq(), row.slots);
  }
  EXPECT_TRUE(speculate(SpecMethod::kDflash, 3).drafts_in_parallel());
  // draft_model, 2 drafts, max_num_seqs 4: the budget of 64 drops by one slot per sequence.
  EXPECT_EQ(spec_config(speculate(SpecMethod::kDraftModel, 2)).max_num_scheduled_tokens(), 60);
  EXPECT_EQ(spec_config(speculate(SpecMethod::kDflash, 3)).lookahead_tokens(), 4);
}

TEST(SpeculativeConfigTest, NamesRoundTrip) {
  for (const char* name : {"eagle", "eagle3", "mtp", "dspark", "dflash", "draft_model", "ngram", "suffix", "medusa"}) {
    ASSERT_TRUE(parse_spec_method(name).has_value()) << name;
    EXPECT_STREQ(to_string(*parse_spec_method(name)), name);
  }
  EXPECT_FALSE(parse_spec_method("lookahead").has_value());
}

TEST(SpeculativeConfigTest, ValidateRefusesWhatVllmRefuses) {
  EXPECT_EQ(speculate(SpecMethod::kEagle, 0).validate().message(),
            "num_speculative_tokens must be at least 1 for eagle, got 0");
  EXPECT_EQ(speculate(SpecMethod::kNone, 2).validate().message(),
            "num_speculative_tokens (2) or parallel drafting given without a speculative method");
  EXPECT_EQ(speculate(SpecMethod::kNgram, 2, true).validate().message(),
            "parallel drafting needs a model drafter (eagle, eagle3, mtp, dspark, dflash or draft_model), not ngram");
  SchedulerConfig no_budget = spec_config(speculate(SpecMethod::kDraftModel, 4, true), 16);
  EXPECT_EQ(no_budget.validate().message(),
            "max_num_batched_tokens (16) leaves no token budget: draft_model inserts 4 drafting slots for each of "
            "max_num_seqs (4) sequences");
  SchedulerConfig lookahead = spec_config(speculate(SpecMethod::kEagle, 3));
  lookahead.num_lookahead_tokens = 2;
  EXPECT_EQ(lookahead.validate().message(),
            "num_lookahead_tokens (2) contradicts eagle with 3 speculative tokens, which sets 3");
  SchedulerConfig eagle = spec_config(speculate(SpecMethod::kNgram, 3));
  eagle.cache.use_eagle = true;
  EXPECT_EQ(eagle.validate().message(), "use_eagle is set but the speculative method ngram does not draft with eagle");
  EXPECT_TRUE(spec_config(speculate(SpecMethod::kEagle, 3)).validate().ok());
}

// EAGLE, K = 3 (3 lookahead slots). a's 13-token prompt takes 1 block (13 + 3 slots); with 3
// drafts it is scheduled 1 + 3 tokens over 13 + 4 + 3 = 20 slots: 2 blocks. None accepted:
// num_computed_tokens drops by 3 (17 -> 14 = num_tokens - 1), the second block stays.
TEST(SpeculativeSchedulerTest, RejectedDraftsRollBackAndKeepTheirBlocks) {
  Scheduler s(spec_config(speculate(SpecMethod::kEagle, 3)));
  ASSERT_TRUE(s.add_request(request("a", 50000, 13, 16)).ok());
  StepPlan p0 = s.schedule();
  EXPECT_EQ(scheduled(p0), (Sched{{"a", 13}}));
  s.update_from_output(p0, verify(s, p0));
  EXPECT_EQ(s.kv_cache().blocks_of("a").size(), 1u);
  propose(s, "a", 3);
  EXPECT_EQ(s.find("a")->spec_token_ids, (std::vector<TokenId>{90001, 90002, 90003}));

  StepPlan p1 = s.schedule();
  ASSERT_EQ(p1.requests.size(), 1u);
  EXPECT_EQ(p1.requests[0].token_ids, (std::vector<TokenId>{90000, 90001, 90002, 90003}));
  EXPECT_EQ(p1.requests[0].spec_token_ids, (std::vector<TokenId>{90001, 90002, 90003}));
  EXPECT_TRUE(p1.requests[0].samples);
  EXPECT_TRUE(s.find("a")->spec_token_ids.empty());  // scheduled drafts are no longer held
  EXPECT_EQ(s.find("a")->num_computed_tokens, 17);
  EXPECT_EQ(s.kv_cache().blocks_of("a").size(), 2u);
  const std::vector<TokenEvent> events = s.update_from_output(p1, verify(s, p1, {{"a", 0}}));
  ASSERT_EQ(events.size(), 1u);  // the sampled token alone
  EXPECT_EQ(s.find("a")->num_computed_tokens, 14);
  EXPECT_EQ(s.find("a")->num_tokens(), 15);
  EXPECT_EQ(s.kv_cache().blocks_of("a").size(), 2u);
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 13u);
  EXPECT_EQ(s.stats().spec_num_drafts, 1);
  EXPECT_EQ(s.stats().spec_num_draft_tokens, 3);
  EXPECT_EQ(s.stats().spec_num_accepted_tokens, 0);
  expect_ok(s);

  // Two of the next three accepted: 3 tokens appended, one draft rolled back (18 -> 17).
  propose(s, "a", 3);
  StepPlan p2 = s.schedule();
  EXPECT_EQ(p2.requests[0].spec_token_ids, (std::vector<TokenId>{90002, 90003, 90004}));
  EXPECT_EQ(s.update_from_output(p2, verify(s, p2, {{"a", 2}})).size(), 3u);
  EXPECT_EQ(s.find("a")->num_computed_tokens, 17);
  EXPECT_EQ(s.find("a")->num_output_tokens(), 5);
  EXPECT_EQ(s.find("a")->tokens().back(), 90004);
  EXPECT_EQ(s.stats().spec_num_accepted_tokens, 2);
  expect_ok(s);
}

// Budget 6, three decodes holding 3 drafts each: a gets 1 + 3, b the 2 tokens left (1 draft,
// the other 2 dropped), c is not reached and keeps its 3.
TEST(SpeculativeSchedulerTest, TheBudgetTrimsDraftsAndTheUnreachedKeepThem) {
  Scheduler s(spec_config(speculate(SpecMethod::kEagle, 3), 6));
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(s.add_request(request(id, 50000 + 100 * id[0], 2, 8)).ok());
  StepPlan p0 = s.schedule();
  EXPECT_EQ(scheduled(p0), (Sched{{"a", 2}, {"b", 2}, {"c", 2}}));
  s.update_from_output(p0, verify(s, p0));
  for (const char* id : {"a", "b", "c"}) propose(s, id, 3);

  StepPlan p1 = s.schedule();
  EXPECT_EQ(scheduled(p1), (Sched{{"a", 4}, {"b", 2}}));
  EXPECT_EQ(p1.requests[1].spec_token_ids, (std::vector<TokenId>{90001}));
  EXPECT_TRUE(s.find("b")->spec_token_ids.empty());
  EXPECT_EQ(s.find("c")->spec_token_ids.size(), 3u);
  s.update_from_output(p1, verify(s, p1, {{"a", 3}, {"b", 1}}));
  EXPECT_EQ(s.find("a")->num_output_tokens(), 5);
  EXPECT_EQ(s.find("b")->num_output_tokens(), 3);
  EXPECT_EQ(s.find("b")->num_computed_tokens, 4);
  expect_ok(s);
}

// Budget 5: a takes 1 + 3, b only its last token: none of its drafts is verified, and it
// holds none afterwards either.
TEST(SpeculativeSchedulerTest, ADecodeCutToOneTokenDropsAllItsDrafts) {
  Scheduler s(spec_config(speculate(SpecMethod::kEagle, 3), 5));
  ASSERT_TRUE(s.add_request(request("a", 50000, 2, 8)).ok());
  ASSERT_TRUE(s.add_request(request("b", 51000, 3, 8)).ok());
  StepPlan p0 = s.schedule();
  s.update_from_output(p0, verify(s, p0));
  propose(s, "a", 3);
  propose(s, "b", 3);
  StepPlan p1 = s.schedule();
  EXPECT_EQ(scheduled(p1), (Sched{{"a", 4}, {"b", 1}}));
  EXPECT_TRUE(p1.requests[1].spec_token_ids.empty());
  EXPECT_TRUE(s.find("b")->spec_token_ids.empty());
  s.update_from_output(p1, verify(s, p1, {{"a", 0}}));
  EXPECT_EQ(s.find("b")->num_computed_tokens, 4);
  EXPECT_EQ(s.find("b")->num_tokens(), 5);
  EXPECT_EQ(s.stats().spec_num_drafts, 1);
}

// A long-prefill threshold of 2 caps a decode with drafts too: 1 + 1 draft.
TEST(SpeculativeSchedulerTest, TheThresholdTrimsDrafts) {
  SchedulerConfig c = spec_config(speculate(SpecMethod::kEagle, 3));
  c.long_prefill_token_threshold = 2;
  Scheduler s(c);
  ASSERT_TRUE(s.add_request(request("a", 50000, 2, 8)).ok());
  StepPlan p0 = s.schedule();
  s.update_from_output(p0, verify(s, p0));
  propose(s, "a", 3);
  StepPlan p1 = s.schedule();
  EXPECT_EQ(scheduled(p1), (Sched{{"a", 2}}));
  EXPECT_EQ(p1.requests[0].spec_token_ids, (std::vector<TokenId>{90001}));
  EXPECT_TRUE(s.find("a")->spec_token_ids.empty());
}

// max_model_len 32: a holds 30 tokens (29 computed) and 3 drafts; only 32 - 1 - 29 = 2
// tokens fit: its last token and 1 draft. That draft accepted, the sampled token after it is
// the 32nd: a finishes at max_model_len.
TEST(SpeculativeSchedulerTest, MaxModelLenTrimsDrafts) {
  SchedulerConfig c = spec_config(speculate(SpecMethod::kEagle, 3));
  c.cache.max_model_len = 32;
  Scheduler s(c);
  ASSERT_TRUE(s.add_request(request("a", 50000, 29, 8)).ok());
  StepPlan p0 = s.schedule();
  s.update_from_output(p0, verify(s, p0));
  propose(s, "a", 3);
  StepPlan p1 = s.schedule();
  EXPECT_EQ(scheduled(p1), (Sched{{"a", 2}}));
  EXPECT_EQ(p1.requests[0].spec_token_ids, (std::vector<TokenId>{90001}));
  const std::vector<TokenEvent> events = s.update_from_output(p1, verify(s, p1, {{"a", 1}}));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].status, RequestStatus::kFinishedMaxLen);
  EXPECT_EQ(s.find("a"), nullptr);
}

// a may have 3 outputs: it has 1, and all 3 drafts are accepted, but the second appended
// token is its third output: 2 tokens are appended, the rest discarded.
TEST(SpeculativeSchedulerTest, MaxTokensFinishInsideTheDrafts) {
  Scheduler s(spec_config(speculate(SpecMethod::kMtp, 3)));
  ASSERT_TRUE(s.add_request(request("a", 50000, 10, 3)).ok());
  StepPlan p0 = s.schedule();
  s.update_from_output(p0, verify(s, p0));
  propose(s, "a", 3);
  StepPlan p1 = s.schedule();
  const std::vector<TokenEvent> events = s.update_from_output(p1, verify(s, p1, {{"a", 3}}));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].output_index, 2);
  EXPECT_TRUE(events[1].finished);
  EXPECT_EQ(events[1].status, RequestStatus::kFinishedLength);
  EXPECT_EQ(s.find("a"), nullptr);
  EXPECT_EQ(s.kv_cache().num_free_blocks(), 15u);
  EXPECT_EQ(s.stats().spec_num_accepted_tokens, 3);  // counted as the sampler accepted them
}

// b's stop token is its output 2, an accepted draft: it stops there (reason stop), before
// max tokens; c's stop token is its output 3, a rejected draft, so it comes one step later.
TEST(SpeculativeSchedulerTest, AStopTokenInsideTheDraftsStops) {
  Scheduler s(spec_config(speculate(SpecMethod::kEagle3, 3)));
  ASSERT_TRUE(s.add_request(request("b", 50000, 10, 16, {kOutputStart + 2})).ok());
  ASSERT_TRUE(s.add_request(request("c", 51000, 10, 16, {kOutputStart + 3})).ok());
  StepPlan p0 = s.schedule();
  s.update_from_output(p0, verify(s, p0));
  propose(s, "b", 3);
  propose(s, "c", 3);
  StepPlan p1 = s.schedule();
  const std::vector<TokenEvent> events = s.update_from_output(p1, verify(s, p1, {{"b", 3}, {"c", 1}}));
  ASSERT_EQ(events.size(), 4u);  // b: outputs 1, 2; c: outputs 1, 2
  EXPECT_EQ(events[1].id, "b");
  EXPECT_EQ(events[1].status, RequestStatus::kFinishedStopped);
  EXPECT_EQ(s.find("b"), nullptr);
  EXPECT_EQ(s.find("c")->num_output_tokens(), 3);
  EXPECT_EQ(s.find("c")->num_computed_tokens, 12);  // 10 + 4 scheduled - 2 rejected
  propose(s, "c", 3);
  StepPlan p2 = s.schedule();
  const std::vector<TokenEvent> last = s.update_from_output(p2, verify(s, p2, {{"c", 3}}));
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].status, RequestStatus::kFinishedStopped);
}

// draft_model, K = 2. a computes a 17-token prompt (block 0 cached) and decodes; b, with the
// same prompt, hits 16 tokens and needs 1: it is padded to 1 + 2 tokens with 2 padding drafts,
// which are never accepted: b ends at 17 computed tokens of 18.
TEST(SpeculativeSchedulerTest, ANewDecodeIsPaddedBesideRunningDecodes) {
  Scheduler s(spec_config(speculate(SpecMethod::kDraftModel, 2)));
  ASSERT_TRUE(s.add_request(request("a", 50000, 17, 8)).ok());
  StepPlan p0 = s.schedule();
  s.update_from_output(p0, verify(s, p0));
  propose(s, "a", 2);
  ASSERT_TRUE(s.add_request(request("b", 50000, 17, 8)).ok());
  StepPlan p1 = s.schedule();
  EXPECT_EQ(scheduled(p1), (Sched{{"a", 3}, {"b", 3}}));
  EXPECT_EQ(p1.requests[1].num_cached_tokens, 16);
  EXPECT_EQ(p1.requests[1].spec_token_ids, (std::vector<TokenId>{kPaddingDraft, kPaddingDraft}));
  EXPECT_EQ(p1.requests[1].token_ids, (std::vector<TokenId>{50016, kPaddingDraft, kPaddingDraft}));
  s.update_from_output(p1, verify(s, p1, {{"a", 2}, {"b", 0}}));
  EXPECT_EQ(s.find("b")->num_computed_tokens, 17);
  EXPECT_EQ(s.find("b")->num_tokens(), 18);
  EXPECT_EQ(s.stats().spec_num_draft_tokens, 4);  // padding included
  expect_ok(s);
}

// With no running request scheduled in the step, a one-token admission is not padded.
TEST(SpeculativeSchedulerTest, ANewDecodeAloneIsNotPadded) {
  Scheduler s(spec_config(speculate(SpecMethod::kDraftModel, 2)));
  ASSERT_TRUE(s.add_request(request("a", 50000, 17, 1)).ok());
  StepPlan p0 = s.schedule();
  s.update_from_output(p0, verify(s, p0));  // a finishes, block 0 stays cached
  ASSERT_TRUE(s.add_request(request("b", 50000, 17, 8)).ok());
  StepPlan p1 = s.schedule();
  EXPECT_EQ(scheduled(p1), (Sched{{"b", 1}}));
  EXPECT_TRUE(p1.requests[0].spec_token_ids.empty());
}

// A prefill chunk gets no drafts: the worker's proposals for it are cleared.
TEST(SpeculativeSchedulerTest, APrefillChunkHoldsNoDrafts) {
  Scheduler s(spec_config(speculate(SpecMethod::kMtp, 2), 32));
  ASSERT_TRUE(s.add_request(request("a", 50000, 40, 8)).ok());
  StepPlan p0 = s.schedule();
  EXPECT_EQ(scheduled(p0), (Sched{{"a", 32}}));
  s.update_from_output(p0, verify(s, p0));
  EXPECT_TRUE(s.find("a")->is_prefill_chunk);
  propose(s, "a", 2);
  EXPECT_TRUE(s.find("a")->spec_token_ids.empty());
}

// 4 usable blocks, EAGLE K = 4: a's decode with drafts and lookahead needs a third block, none
// is free, so b (the last running request) is preempted, and its drafts are dropped with it.
TEST(SpeculativeSchedulerTest, PreemptionDropsTheVictimsDrafts) {
  SchedulerConfig c = spec_config(speculate(SpecMethod::kEagle, 4));
  c.cache.num_blocks = 5;
  c.cache.max_model_len = 64;
  Scheduler s(c);
  ASSERT_TRUE(s.add_request(request("a", 50000, 20, 16)).ok());  // 20 + 4: 2 blocks
  ASSERT_TRUE(s.add_request(request("b", 51000, 10, 16)).ok());  // 10 + 4: 1 block
  StepPlan p0 = s.schedule();
  EXPECT_EQ(scheduled(p0), (Sched{{"a", 20}, {"b", 10}}));
  s.update_from_output(p0, verify(s, p0));
  propose(s, "a", 4);
  propose(s, "b", 4);
  // a: 20 + 5 + 4 = 29 slots, 2 blocks (has them); b: 10 + 5 + 4 = 19, a second block (1 free).
  StepPlan p1 = s.schedule();
  s.update_from_output(p1, verify(s, p1, {{"a", 4}, {"b", 4}}));
  propose(s, "a", 4);
  propose(s, "b", 4);
  // a: 25 + 5 + 4 = 34 slots, a third block: none is free, so b (last) is preempted.
  StepPlan p2 = s.schedule();
  EXPECT_EQ(p2.preempted, (std::vector<RequestId>{"b"}));
  EXPECT_EQ(scheduled(p2), (Sched{{"a", 5}}));
  EXPECT_TRUE(s.find("b")->spec_token_ids.empty());
  EXPECT_EQ(s.find("b")->num_computed_tokens, 0);
  expect_ok(s);
}

}  // namespace
}  // namespace kv
