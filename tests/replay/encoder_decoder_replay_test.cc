// Encoder-decoder models (whisper-large-v3) on the simulator: the shadow memory's checks of
// cross-attention blocks on hand-made plans, the replay options vLLM implies, and a verified
// replay of the ShareGPT sample with its encoder tokens counted.
#include <gtest/gtest.h>

#include <string>

#include "model/catalog/model_shape.h"
#include "replay/replay_builder.h"
#include "sim/shadow_kv.h"
#include "traces/replay_source.h"
#include "traces/trace_io.h"

namespace kv {
namespace {

using namespace kv::replay;

// Group 0 full attention, group 1 cross attention, blocks of 4.
StepPlan cross_plan(std::int64_t step) {
  StepPlan p;
  p.step = step;
  p.block_size = 4;
  p.group_windows = {0, 0};
  p.group_state_block_sizes = {0, 0};
  p.group_cross_attention = {false, true};
  return p;
}

// A new request with 3 prompt tokens, its decoder block and its cross blocks.
ScheduledRequest admitted(const std::string& id, BlockId decoder, std::vector<BlockId> cross, std::int64_t encoder) {
  ScheduledRequest r;
  r.id = id;
  r.is_new = true;
  r.group_block_ids = {{decoder}, std::move(cross)};
  r.token_ids = {1, 2, 3};
  r.num_prompt_tokens = 3;
  r.num_encoder_tokens = encoder;
  return r;
}

std::vector<sim::Violation> apply(sim::ShadowKv& shadow, const StepPlan& p) {
  std::vector<sim::Violation> out;
  shadow.apply(p, &out);
  return out;
}

TEST(EncoderDecoderShadow, EncoderOutputsAreWrittenOnceAndReadBack) {
  sim::ShadowKv shadow(sim::VerifyMode::kFull);
  StepPlan p0 = cross_plan(0);
  p0.requests.push_back(admitted("a", 1, {2, 3}, 8));
  EXPECT_TRUE(apply(shadow, p0).empty());
  EXPECT_EQ(shadow.stats().slots_written, 8 + 3);  // encoder positions, then decoder tokens
  StepPlan p1 = cross_plan(1);
  ScheduledRequest decode;
  decode.id = "a";
  decode.group_block_ids = {{}, {}};
  decode.num_computed_tokens = 3;
  decode.token_ids = {4};
  decode.num_prompt_tokens = 3;
  p1.requests.push_back(decode);
  EXPECT_TRUE(apply(shadow, p1).empty());  // reads its 8 encoder positions and 4 decoder ones
  std::vector<sim::Violation> end;
  shadow.verify_live(2, &end);
  EXPECT_TRUE(end.empty());
}

// Rejected drafts poison the decoder's slots they wrote, never the encoder outputs at the same
// positions of the cross-attention blocks.
TEST(EncoderDecoderShadow, RejectedDraftsLeaveTheEncoderOutputs) {
  sim::ShadowKv shadow(sim::VerifyMode::kFull);
  StepPlan p0 = cross_plan(0);
  p0.requests.push_back(admitted("a", 1, {2, 3}, 8));
  ASSERT_TRUE(apply(shadow, p0).empty());
  shadow.reject_drafts("a", 2);  // positions 1 and 2
  EXPECT_EQ(shadow.num_computed("a"), 1);
  std::vector<sim::Violation> end;
  shadow.verify_live(1, &end);
  EXPECT_TRUE(end.empty()) << end.front().to_string();
}

TEST(EncoderDecoderShadow, ACrossBlockOfAnotherRequestIsAViolation) {
  sim::ShadowKv shadow(sim::VerifyMode::kFull);
  StepPlan p0 = cross_plan(0);
  p0.requests.push_back(admitted("a", 1, {2, 3}, 8));
  ASSERT_TRUE(apply(shadow, p0).empty());
  StepPlan p1 = cross_plan(1);
  p1.requests.push_back(admitted("b", 4, {3, 5}, 8));  // block 3 holds a's encoder positions 4-7
  const std::vector<sim::Violation> v = apply(shadow, p1);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].kind, sim::Violation::Kind::kOverwrite);
  EXPECT_EQ(v[0].request, "b");
  EXPECT_EQ(v[0].other_request, "a");
  EXPECT_EQ(v[0].other_position, 4);
  EXPECT_EQ(v[0].group, 1);
}

TEST(EncoderDecoderShadow, AdmissionWithoutEncoderInputIsABadPlan) {
  sim::ShadowKv shadow(sim::VerifyMode::kFast);
  StepPlan p0 = cross_plan(0);
  p0.requests.push_back(admitted("a", 1, {2, 3}, 0));
  const std::vector<sim::Violation> v = apply(shadow, p0);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, sim::Violation::Kind::kBadPlan);
  EXPECT_NE(v[0].detail.find("without its encoder input"), std::string::npos) << v[0].detail;
  StepPlan p1 = cross_plan(1);
  p1.requests.push_back(admitted("b", 4, {5}, 8));  // 8 encoder positions need 2 cross blocks
  const std::vector<sim::Violation> w = apply(shadow, p1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].detail, "8 encoder tokens need 2 blocks, the table has 1") << w[0].to_string();
}

TEST(EncoderDecoderReplay, WhisperRunsWithCachingOffAndRefusesItOn) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "model", "whisper-large-v3").ok());
  EXPECT_FALSE(c.scheduler.cache.enable_caching);  // vLLM turns it off for the model
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  ASSERT_TRUE(set_option(c, "prefix-caching", "on").ok());
  EXPECT_NE(c.validate().message().find("encoder-decoder models run with prefix caching off"), std::string::npos)
      << c.validate().message();
}

TEST(EncoderDecoderReplay, ShareGptSampleVerifiedFullCountsTheEncoderTokens) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "model", "whisper-large-v3").ok());
  c.device.verify = sim::VerifyMode::kFull;
  c.run.replay.keep_decision_text = false;
  auto source = trace::TraceRequestSource::open("traces/data/sharegpt_sample.kvtrace", trace::ReplaySourceOptions{});
  ASSERT_TRUE(source.ok()) << source.status().message();
  const trace::TraceHeader header = (*source)->header();
  auto run = build_replay(c, std::move(source).value(), header.hash_seed, header.source);
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto replayer = run->make_replayer(c);
  auto s = replayer->run();
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->violations.empty()) << s->violations.front();
  EXPECT_GT(s->requests_finished, 0);
  EXPECT_EQ(s->encoder_tokens_per_request, 1500);
  // One encoder input per admission: each finished request at least once, resumptions again.
  EXPECT_EQ(s->encoder_tokens % 1500, 0);
  EXPECT_GE(s->encoder_tokens, 1500 * s->requests_finished);
  // vLLM's budget runs one encoder input per step.
  EXPECT_LE(s->encoder_tokens / 1500, s->steps);
}

}  // namespace
}  // namespace kv
