// Shadow KV memory and SimDevice: hand-made plans with a shared cached prefix (clean), hits that
// never cross salts or adapters, a stray write at every computed position caught, each
// fault of FaultInjectingDevice caught in fast and full mode, bad plans reported, and fast and
// full mode agreeing on randomized plans made by driving a real KvCacheManager.
#include "sim/shadow_kv.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sim/fault_injection.h"
#include "sim/sim_device.h"
#include "tests/sim/sim_plan_builder.h"

namespace kv::sim {
namespace {

constexpr int kB = 4;  // block size of the hand-made plans

std::unique_ptr<SimDevice> device(VerifyMode mode) {
  SimOptions o;
  o.model = find_model_shape("tiny").value();
  o.verify = mode;
  auto d = SimDevice::create(o);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return std::move(d).value();
}

ScheduledRequest fresh(const std::string& id, std::vector<BlockId> blocks, std::vector<TokenId> context,
                       std::vector<TokenId> tokens, std::int64_t prompt_len) {
  ScheduledRequest r;
  r.id = id;
  r.is_new = true;
  r.block_ids = std::move(blocks);
  r.num_computed_tokens = static_cast<std::int64_t>(context.size());
  r.num_cached_tokens = r.num_computed_tokens;
  r.context_token_ids = std::move(context);
  r.token_ids = std::move(tokens);
  r.num_prompt_tokens = prompt_len;
  return r;
}

ScheduledRequest running(const std::string& id, std::int64_t computed, std::vector<TokenId> tokens,
                         std::vector<BlockId> new_blocks = {}, std::int64_t prompt_len = 0) {
  ScheduledRequest r;
  r.id = id;
  r.block_ids = std::move(new_blocks);
  r.num_computed_tokens = computed;
  r.token_ids = std::move(tokens);
  r.num_prompt_tokens = prompt_len;
  return r;
}

StepPlan plan(std::int64_t step, std::vector<ScheduledRequest> requests, std::vector<RequestId> finished = {}) {
  StepPlan p;
  p.step = step;
  p.block_size = kB;
  p.requests = std::move(requests);
  p.finished = std::move(finished);
  for (const auto& r : p.requests) p.total_tokens += static_cast<std::int64_t>(r.token_ids.size());
  return p;
}

std::vector<TokenId> range(TokenId a, TokenId b) {
  std::vector<TokenId> v;
  for (TokenId t = a; t < b; ++t) v.push_back(t);
  return v;
}

// The expected fingerprint of position `pos` of a sequence (no LoRA).
std::uint64_t fp_at(const std::vector<TokenId>& tokens, std::size_t pos) {
  std::uint64_t h = ShadowKv::chain_seed("");
  for (std::size_t p = 0; p <= pos; ++p) h = ShadowKv::fingerprint(h, tokens[p], static_cast<std::int64_t>(p));
  return h;
}

// Speculative decoding: drafts verified in a step and rejected are rolled back, and their
// slots hold a rejected draft's KV: a request that reads them (here: a prefix-cache hit over the
// draft positions) mismatches, while the same read of accepted drafts is clean.
TEST(ShadowKvTest, RejectedDraftSlotsCannotBeRead) {
  for (const bool reject : {false, true}) {
    ShadowKv s(VerifyMode::kFull);
    std::vector<Violation> v;
    s.apply(plan(0, {fresh("a", {1, 2}, {}, range(0, 5), 5)}), &v);
    // 1 known token and 2 drafts (positions 5, 6, 7 with the token at 5).
    s.apply(plan(1, {running("a", 5, {5, 100, 101})}), &v);
    ASSERT_TRUE(v.empty()) << v.front().to_string();
    if (reject) s.reject_drafts("a", 2);
    EXPECT_EQ(s.num_computed("a"), reject ? 6 : 8);
    std::vector<TokenId> context = range(0, 6);
    context.push_back(100);
    context.push_back(101);
    s.apply(plan(2, {fresh("b", {1, 2, 3}, context, {102}, 8)}), &v);
    if (!reject) {
      EXPECT_TRUE(v.empty()) << v.front().to_string();
      continue;
    }
    ASSERT_FALSE(v.empty());
    EXPECT_EQ(v.front().kind, Violation::Kind::kMismatch);
    EXPECT_EQ(v.front().request, "b");
    EXPECT_EQ(v.front().position, 6);
  }
}

TEST(ShadowKvTest, FingerprintsChainThePrefix) {
  std::uint64_t s = ShadowKv::chain_seed("");
  EXPECT_NE(ShadowKv::fingerprint(s, 5, 0), ShadowKv::fingerprint(s, 6, 0));
  EXPECT_NE(ShadowKv::fingerprint(ShadowKv::fingerprint(s, 1, 0), 5, 1),
            ShadowKv::fingerprint(ShadowKv::fingerprint(s, 2, 0), 5, 1));
  EXPECT_NE(ShadowKv::chain_seed(""), ShadowKv::chain_seed("adapter-a"));
  EXPECT_EQ(parse_verify_mode("full"), VerifyMode::kFull);
  EXPECT_EQ(parse_verify_mode("slow"), std::nullopt);
}

// A writes 10 prompt tokens into blocks [1, 2, 3]; B shares A's first 8 tokens (blocks 1 and 2,
// prefix-cache hits) and adds 3 of its own in block 4. Both decode; A finishes, then B.
std::vector<StepPlan> shared_prefix_story() {
  std::vector<TokenId> a = range(100, 110);
  std::vector<TokenId> b = range(100, 108);
  b.push_back(7);
  b.push_back(8);
  b.push_back(9);
  std::vector<StepPlan> plans;
  ScheduledRequest a1 = fresh("A", {1, 2, 3}, {}, a, 10);
  a1.samples = true;
  a1.next_token = 500;
  plans.push_back(plan(1, {a1}));
  ScheduledRequest a2 = running("A", 10, {500}, {}, 10);
  a2.samples = true;
  a2.next_token = 501;
  ScheduledRequest b2 = fresh("B", {1, 2, 4}, range(100, 108), {7, 8, 9}, 11);
  b2.samples = true;
  b2.next_token = 600;
  plans.push_back(plan(2, {a2, b2}));
  ScheduledRequest b3 = running("B", 11, {600}, {}, 11);
  plans.push_back(plan(3, {b3}, {"A"}));
  plans.push_back(plan(4, {}, {"B"}));
  return plans;
}

// Hybrid plans: group 0 a sliding window of 4 tokens, group 1 full attention (blocks of 4).
// A writes 8 prompt tokens through both tables; B hits A's 8 tokens. With group 0's table
// {0, 2, 6} B's next query (position 8) reads positions 5..7 of group 0: block 2, real.
StepPlan hybrid_plan(std::int64_t step, std::vector<ScheduledRequest> requests) {
  StepPlan p = plan(step, std::move(requests));
  p.group_windows = {4, 0};
  return p;
}

ScheduledRequest hybrid_fresh(const std::string& id, std::vector<std::vector<BlockId>> groups,
                              std::vector<TokenId> context, std::vector<TokenId> tokens) {
  ScheduledRequest r = fresh(id, {}, std::move(context), std::move(tokens), 9);
  r.group_block_ids = std::move(groups);
  return r;
}

std::vector<std::string> run_hybrid(std::vector<std::vector<BlockId>> b_groups) {
  ShadowKv shadow(VerifyMode::kFull);
  std::vector<Violation> out;
  shadow.apply(hybrid_plan(1, {hybrid_fresh("A", {{1, 2}, {3, 4}}, {}, range(100, 108))}), &out);
  shadow.apply(hybrid_plan(2, {hybrid_fresh("B", std::move(b_groups), range(100, 108), {9})}), &out);
  std::vector<std::string> text;
  for (const Violation& v : out) text.push_back(v.to_string());
  return text;
}

TEST(ShadowKvTest, HybridWindowedGroupReadsOnlyItsWindow) {
  // Group 0's first block is null: outside B's window, never read.
  EXPECT_EQ(run_hybrid({{0, 2, 6}, {3, 4, 7}}), std::vector<std::string>{});
}

TEST(ShadowKvTest, HybridNullBlockInsideTheWindowIsNamedWithItsGroup) {
  const auto v = run_hybrid({{0, 0, 6}, {3, 4, 7}});
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v[0].find("request B (group 0): position 5 (block 0"), std::string::npos) << v[0];
  EXPECT_NE(v[0].find("null-block read"), std::string::npos) << v[0];
}

TEST(ShadowKvTest, HybridGroupReadingAnotherGroupsBlockMismatches) {
  // B's full-attention table points at A's sliding-window blocks: same tokens, other group.
  const auto v = run_hybrid({{0, 2, 6}, {1, 2, 7}});
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v[0].find("request B (group 1): position 0 (block 1"), std::string::npos) << v[0];
}

TEST(ShadowKvTest, SharedPrefixIsCleanInEveryMode) {
  for (VerifyMode mode : {VerifyMode::kOff, VerifyMode::kFast, VerifyMode::kFull}) {
    auto d = device(mode);
    std::vector<StepPlan> plans = shared_prefix_story();
    StepResult r1 = d->execute(plans[0]);
    EXPECT_TRUE(r1.violations.empty());
    ASSERT_EQ(r1.sampled.size(), 1u);
    EXPECT_EQ(r1.sampled[0], (std::pair<RequestId, TokenId>{"A", 500}));
    EXPECT_EQ(r1.counters.tokens_computed, 10);
    EXPECT_EQ(r1.counters.prompt_tokens_computed, 10);
    EXPECT_GT(r1.duration_ns, 0);
    StepResult r2 = d->execute(plans[1]);
    EXPECT_TRUE(r2.violations.empty()) << r2.violations[0];
    EXPECT_EQ(r2.counters.tokens_computed, 4);
    EXPECT_EQ(r2.counters.prompt_tokens_computed, 3);
    EXPECT_EQ(r2.counters.kv_slots_read, 11 + 11);
    EXPECT_EQ(r2.sampled.size(), 2u);
    for (std::size_t i = 2; i < plans.size(); ++i) {
      StepResult r = d->execute(plans[i]);
      EXPECT_TRUE(r.violations.empty()) << to_string(mode) << ": " << r.violations[0];
    }
    if (mode == VerifyMode::kOff) {
      EXPECT_EQ(d->shadow_stats().slots_written, 0);
      continue;
    }
    // Slot = block * 4 + offset: A's position 9 is in block 3 slot 13; B's position 10 (token
    // 9 after the shared 8 and 7, 8) is in block 4, slot 18.
    std::vector<TokenId> a = range(100, 110);
    EXPECT_EQ(d->shadow().slot(4 * 1 + 0), fp_at(a, 0));
    EXPECT_EQ(d->shadow().slot(4 * 3 + 1), fp_at(a, 9));
    std::vector<TokenId> b = range(100, 108);
    b.insert(b.end(), {7, 8, 9, 600});
    EXPECT_EQ(d->shadow().slot(4 * 4 + 2), fp_at(b, 10));
    EXPECT_EQ(d->shadow().slot(4 * 4 + 3), fp_at(b, 11));
    EXPECT_EQ(d->shadow().num_live(), 0u);
    // Written: 10 + 4 + 1; verified: B's 8 hits at admission, then A (11) and B (12) on release
    // (full mode also reads every context each step: 10, 11 + 11, 12).
    EXPECT_EQ(d->shadow_stats().slots_written, 15);
    EXPECT_EQ(d->shadow_stats().slots_verified, mode == VerifyMode::kFast ? 8 + 11 + 12 : 8 + 11 + 12 + 10 + 22 + 12);
  }
}

TEST(ShadowKvTest, WrongPrefixHitIsCaughtAtAdmission) {
  for (VerifyMode mode : {VerifyMode::kFast, VerifyMode::kFull}) {
    auto d = device(mode);
    d->execute(plan(1, {fresh("A", {1, 2, 3}, {}, range(100, 110), 10)}));
    // C claims blocks 1 and 2 hold its prefix 200..207: they hold A's.
    StepResult r = d->execute(plan(2, {fresh("C", {1, 2, 6}, range(200, 208), {1}, 9)}));
    ASSERT_GE(r.violations.size(), 1u);
    const Violation& v = d->last_violations()[0];
    EXPECT_EQ(v.kind, Violation::Kind::kMismatch);
    EXPECT_STREQ(v.when, "admission");
    EXPECT_EQ(v.request, "C");
    EXPECT_EQ(v.position, 0);
    EXPECT_EQ(v.block, 1);
    EXPECT_EQ(v.slot, 4);
    EXPECT_EQ(v.more, 7);
    EXPECT_EQ(r.violations[0].substr(0, 64), "step 2: request C: position 0 (block 1, slot 4): admission check");
  }
}

TEST(ShadowKvTest, BlockReusedWhileReliedOnIsCaughtAtTheWrite) {
  for (VerifyMode mode : {VerifyMode::kFast, VerifyMode::kFull}) {
    auto d = device(mode);
    d->execute(plan(1, {fresh("A", {1, 2, 3}, {}, range(100, 110), 10)}));
    // D is given A's live block 2 as a fresh block.
    d->execute(plan(2, {fresh("D", {7, 2}, {}, range(300, 306), 6)}));
    const std::vector<Violation>& vs = d->last_violations();
    ASSERT_GE(vs.size(), 1u);
    EXPECT_EQ(vs[0].kind, Violation::Kind::kOverwrite);
    EXPECT_EQ(vs[0].request, "D");
    EXPECT_EQ(vs[0].position, 4);
    EXPECT_EQ(vs[0].block, 2);
    EXPECT_EQ(vs[0].slot, 8);
    EXPECT_EQ(vs[0].other_request, "A");
    EXPECT_EQ(vs[0].other_position, 4);
  }
}

TEST(ShadowKvTest, BadPlansAreReportedNotFatal) {
  auto d = device(VerifyMode::kFast);
  StepResult r = d->execute(plan(1, {running("ghost", 0, {1, 2})}));
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0], "step 1: request ghost: bad plan: running request the device never saw as new");
  r = d->execute(plan(2, {fresh("A", {1}, {}, range(0, 6), 6)}));
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0], "step 2: request A: bad plan: positions up to 5 do not fit its 1 blocks");
  r = d->execute(plan(3, {fresh("Z", {0, 4}, {}, range(0, 2), 2)}));
  EXPECT_EQ(r.violations[0], "step 3: request Z: bad plan: block id 0 is the null block");
}

TEST(ShadowKvTest, PreemptedRequestRecomputesFromItsNewTable) {
  for (VerifyMode mode : {VerifyMode::kFast, VerifyMode::kFull}) {
    auto d = device(mode);
    d->execute(plan(1, {fresh("A", {1, 2}, {}, range(100, 106), 6)}));
    StepPlan p2 = plan(2, {fresh("E", {1, 2}, {}, range(900, 908), 8)});  // A's blocks, reused
    p2.preempted = {"A"};
    EXPECT_TRUE(d->execute(p2).violations.empty());
    // A comes back with no hits and new blocks.
    StepResult r = d->execute(plan(3, {fresh("A", {3, 4}, {}, range(100, 106), 6)}, {"E"}));
    EXPECT_TRUE(r.violations.empty());
    EXPECT_EQ(d->shadow().table("A").size(), 2u);
    EXPECT_EQ(d->shadow().num_computed("A"), 6);
  }
}

// --- faults: A writes 8 prompt tokens into [1, 2] at step 1, decodes positions 8 and 9 in block
// 3 at steps 2 and 3, finishes at step 4.
std::vector<StepPlan> decode_story() {
  std::vector<StepPlan> p;
  p.push_back(plan(1, {fresh("A", {1, 2}, {}, range(100, 108), 8)}));
  p.push_back(plan(2, {running("A", 8, {50}, {3}, 8)}));
  p.push_back(plan(3, {running("A", 9, {51}, {}, 8)}));
  p.push_back(plan(4, {}, {"A"}));
  return p;
}

struct FaultRun {
  std::vector<std::vector<Violation>> per_step;  // violations of each step
  std::int64_t fired = 0;
  int first_step() const {
    for (std::size_t i = 0; i < per_step.size(); ++i) {
      if (!per_step[i].empty()) return static_cast<int>(i) + 1;
    }
    return -1;
  }
};

template <typename Arm>
FaultRun run_with_fault(VerifyMode mode, Arm arm) {
  FaultInjectingDevice d(device(mode));
  arm(d);
  FaultRun run;
  for (const StepPlan& p : decode_story()) {
    d.execute(p);
    run.per_step.push_back(d.inner().last_violations());
  }
  run.fired = d.faults_fired();
  return run;
}

TEST(FaultInjectionTest, OverwrittenSlotIsCaught) {
  auto arm = [](FaultInjectingDevice& d) { d.overwrite_slot(2, 4 * 1 + 1, 0x1234); };
  FaultRun full = run_with_fault(VerifyMode::kFull, arm);
  EXPECT_EQ(full.fired, 1);
  EXPECT_EQ(full.first_step(), 2);  // the attention read of step 2
  const Violation& v = full.per_step[1][0];
  EXPECT_STREQ(v.when, "read");
  EXPECT_EQ(v.position, 1);
  EXPECT_EQ(v.slot, 5);
  EXPECT_EQ(v.found, 0x1234u);
  FaultRun fast = run_with_fault(VerifyMode::kFast, arm);
  EXPECT_EQ(fast.first_step(), 4);  // when A leaves
  EXPECT_STREQ(fast.per_step[3][0].when, "release");
  EXPECT_EQ(fast.per_step[3][0].slot, 5);
}

TEST(FaultInjectionTest, DroppedCacheWriteIsCaught) {
  auto arm = [](FaultInjectingDevice& d) { d.drop_cache_write(2, "A", 8); };
  FaultRun full = run_with_fault(VerifyMode::kFull, arm);
  EXPECT_EQ(full.fired, 1);
  EXPECT_EQ(full.first_step(), 2);
  EXPECT_EQ(full.per_step[1][0].position, 8);
  EXPECT_EQ(full.per_step[1][0].slot, 12);
  EXPECT_EQ(full.per_step[1][0].found, 0u);  // never written
  FaultRun fast = run_with_fault(VerifyMode::kFast, arm);
  EXPECT_EQ(fast.first_step(), 4);
  EXPECT_EQ(fast.per_step[3][0].position, 8);
}

TEST(FaultInjectionTest, MisdirectedCacheWriteIsCaught) {
  // Into slot 4 (A's position 0, which A relies on): caught at the write in both modes.
  for (VerifyMode mode : {VerifyMode::kFast, VerifyMode::kFull}) {
    FaultRun run = run_with_fault(mode, [](FaultInjectingDevice& d) { d.misdirect_cache_write(3, "A", 9, 4); });
    EXPECT_EQ(run.fired, 1);
    EXPECT_EQ(run.first_step(), 3);
    const Violation& v = run.per_step[2][0];
    EXPECT_EQ(v.kind, Violation::Kind::kOverwrite);
    EXPECT_EQ(v.slot, 4);
    EXPECT_EQ(v.other_request, "A");
    EXPECT_EQ(v.other_position, 0);
  }
  // Into a free block: nobody relies on slot 40, but A's position 9 was never written.
  auto arm = [](FaultInjectingDevice& d) { d.misdirect_cache_write(3, "A", 9, 40); };
  EXPECT_EQ(run_with_fault(VerifyMode::kFull, arm).first_step(), 3);
  FaultRun fast = run_with_fault(VerifyMode::kFast, arm);
  EXPECT_EQ(fast.first_step(), 4);
  EXPECT_EQ(fast.per_step[3][0].position, 9);
}

TEST(FaultInjectionTest, SwappedBlockTableEntriesAreCaught) {
  auto arm = [](FaultInjectingDevice& d) { d.swap_block_table_entries(2, "A", 0, 1); };
  FaultRun full = run_with_fault(VerifyMode::kFull, arm);
  EXPECT_EQ(full.fired, 1);
  EXPECT_EQ(full.first_step(), 2);
  EXPECT_EQ(full.per_step[1][0].position, 0);
  EXPECT_EQ(full.per_step[1][0].block, 2);  // position 0 now read from block 2
  EXPECT_EQ(full.per_step[1][0].more, 7);
  FaultRun fast = run_with_fault(VerifyMode::kFast, arm);
  EXPECT_EQ(fast.first_step(), 4);
  EXPECT_EQ(fast.per_step[3][0].block, 2);
}

TEST(FaultInjectionTest, FaultOutsideItsStepDoesNothing) {
  FaultRun run = run_with_fault(VerifyMode::kFull, [](FaultInjectingDevice& d) {
    d.drop_cache_write(2, "A", 9);  // position 9 is written at step 3
    d.swap_block_table_entries(1, "nobody", 0, 1);
  });
  EXPECT_EQ(run.fired, 0);
  EXPECT_EQ(run.first_step(), -1);
}

// --- randomized plans: clean runs are clean; with one random fault, fast and full agree.

bool any_violation(Device& d, const std::vector<StepPlan>& plans) {
  bool any = false;
  for (const StepPlan& p : plans) any = !d.execute(p).violations.empty() || any;
  return any;
}

TEST(ShadowKvRandomTest, CleanPlansHaveNoViolations) {
  int hits = 0, preemptions = 0, resumed = 0;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    testing::RandomPlanOptions o;
    o.seed = seed;
    std::vector<StepPlan> plans = testing::build_random_plans(o);
    for (const StepPlan& p : plans) {
      preemptions += static_cast<int>(p.preempted.size());
      for (const ScheduledRequest& r : p.requests) {
        hits += r.is_new && r.num_computed_tokens > 0 ? 1 : 0;
        resumed +=
            r.is_new && r.num_prompt_tokens < static_cast<std::int64_t>(r.context_token_ids.size() + r.token_ids.size())
                ? 1
                : 0;
      }
    }
    for (VerifyMode mode : {VerifyMode::kFast, VerifyMode::kFull}) {
      auto d = device(mode);
      for (const StepPlan& p : plans) {
        StepResult r = d->execute(p);
        ASSERT_TRUE(r.violations.empty()) << "seed " << seed << ": " << r.violations[0];
      }
      EXPECT_EQ(d->shadow().num_live(), 0u);
    }
  }
  // The plans exercise prefix-cache hits, preemptions and resumption with outputs.
  EXPECT_GT(hits, 50);
  EXPECT_GT(preemptions, 10);
  EXPECT_GT(resumed, 5);
  std::printf("random plans: %d admissions with hits, %d preemptions, %d resumed\n", hits, preemptions, resumed);
}

TEST(ShadowKvRandomTest, FastAndFullAgreeOnRandomFaults) {
  int caught = 0, fired_runs = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    testing::RandomPlanOptions o;
    o.seed = seed;
    std::vector<StepPlan> plans = testing::build_random_plans(o);
    std::mt19937_64 rng(seed * 7919);
    // A step with a request that writes at least one token.
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (!plans[i].requests.empty()) candidates.push_back(i);
    }
    ASSERT_FALSE(candidates.empty());
    const StepPlan& target = plans[candidates[rng() % candidates.size()]];
    const ScheduledRequest& victim = target.requests[rng() % target.requests.size()];
    std::int64_t position = victim.num_computed_tokens + static_cast<std::int64_t>(rng() % victim.token_ids.size());
    int kind = static_cast<int>(seed % 4);
    std::int64_t slot = static_cast<std::int64_t>(rng() % (o.num_blocks * o.block_size));
    std::size_t i = rng() % 3, j = rng() % 3;
    auto arm = [&](FaultInjectingDevice& d) {
      switch (kind) {
        case 0:
          d.drop_cache_write(target.step, victim.id, position);
          break;
        case 1:
          d.misdirect_cache_write(target.step, victim.id, position, slot);
          break;
        case 2:
          d.swap_block_table_entries(target.step, victim.id, i, j == i ? i + 1 : j);
          break;
        default:
          d.overwrite_slot(target.step, slot, 0xdeadbeef);
          break;
      }
    };
    bool result[2];
    std::int64_t fired[2];
    for (int m = 0; m < 2; ++m) {
      FaultInjectingDevice d(device(m == 0 ? VerifyMode::kFast : VerifyMode::kFull));
      arm(d);
      result[m] = any_violation(d, plans);
      fired[m] = d.faults_fired();
    }
    EXPECT_EQ(fired[0], fired[1]) << "seed " << seed;
    EXPECT_EQ(result[0], result[1]) << "seed " << seed << " fault kind " << kind;
    if (fired[0] > 0) {
      ++fired_runs;
      caught += result[1] ? 1 : 0;
    }
    if (kind == 0) {
      EXPECT_TRUE(result[0]) << "seed " << seed << ": a dropped write is always caught";
    }
  }
  // Misdirected writes and stray stores into blocks nobody uses are harmless; most are not.
  EXPECT_GE(fired_runs, 40);
  EXPECT_GE(caught * 10, fired_runs * 6) << caught << " of " << fired_runs;
  std::printf("random faults: %d fired, %d caught by both modes\n", fired_runs, caught);
}

}  // namespace
}  // namespace kv::sim

namespace kv::sim {
namespace {

// --- every position of another request's computed range: A computes positions [0, 8) in
// blocks [1, 2] at step 1; at step 2 B (block 3) writes its first token into A's slot for
// position p. The write check reports it at the write, in both modes, for every p from the
// first to the last; a stray store (no write check) into the same slot is caught when A is
// verified (full: the next read; fast: when A leaves).
std::vector<StepPlan> two_request_story() {
  std::vector<StepPlan> p;
  p.push_back(plan(1, {fresh("A", {1, 2}, {}, range(100, 108), 8)}));
  p.push_back(plan(2, {running("A", 8, {50}, {3}, 8), fresh("B", {4}, {}, range(200, 204), 4)}));
  p.push_back(plan(3, {}, {"A", "B"}));
  return p;
}

std::vector<std::vector<Violation>> run_story(FaultInjectingDevice& d) {
  std::vector<std::vector<Violation>> out;
  for (const StepPlan& p : two_request_story()) {
    d.execute(p);
    out.push_back(d.inner().last_violations());
  }
  return out;
}

TEST(FaultInjectionTest, MisdirectedWriteIntoEveryComputedPositionIsCaughtAtTheWrite) {
  for (VerifyMode mode : {VerifyMode::kFast, VerifyMode::kFull}) {
    for (std::int64_t p = 0; p < 8; ++p) {
      FaultInjectingDevice d(device(mode));
      const std::int64_t slot = (1 + p / kB) * kB + p % kB;
      d.misdirect_cache_write(2, "B", 0, slot);
      const auto per_step = run_story(d);
      ASSERT_FALSE(per_step[1].empty()) << "position " << p << " mode " << to_string(mode);
      const Violation& v = per_step[1][0];
      EXPECT_EQ(v.kind, Violation::Kind::kOverwrite) << "position " << p;
      EXPECT_EQ(v.step, 2);
      EXPECT_EQ(v.request, "B");
      EXPECT_EQ(v.slot, slot);
      EXPECT_EQ(v.other_request, "A");
      EXPECT_EQ(v.other_position, p);
    }
  }
}

TEST(FaultInjectionTest, StrayStoreIntoEveryComputedPositionIsCaught) {
  for (VerifyMode mode : {VerifyMode::kFast, VerifyMode::kFull}) {
    for (std::int64_t p = 0; p < 8; ++p) {
      FaultInjectingDevice d(device(mode));
      const std::int64_t slot = (1 + p / kB) * kB + p % kB;
      d.overwrite_slot(2, slot, 0xbad);
      const auto per_step = run_story(d);
      const std::size_t caught_at = mode == VerifyMode::kFull ? 1 : 2;  // A's read, or A leaving
      ASSERT_FALSE(per_step[caught_at].empty()) << "position " << p << " mode " << to_string(mode);
      const Violation& v = per_step[caught_at][0];
      EXPECT_EQ(v.kind, Violation::Kind::kMismatch);
      EXPECT_EQ(v.request, "A");
      EXPECT_EQ(v.position, p);
      EXPECT_EQ(v.slot, slot);
      EXPECT_EQ(v.found, 0xbadu);
    }
  }
}

}  // namespace
}  // namespace kv::sim

namespace kv::sim {
namespace {

// --- isolation: B is admitted with a hit on the two blocks A computed. With the same salt and
// adapter that is a clean hit; with another salt or another LoRA adapter B's fingerprints
// differ from what A wrote, so the hit is a mismatch at admission.
std::vector<Violation> hit_across(const std::string& salt_a, const std::string& lora_a, const std::string& salt_b,
                                  const std::string& lora_b) {
  auto d = device(VerifyMode::kFast);
  ScheduledRequest a = fresh("A", {1, 2}, {}, range(100, 108), 8);
  a.cache_salt = salt_a;
  a.lora_name = lora_a;
  d->execute(plan(1, {a}));
  EXPECT_TRUE(d->last_violations().empty());
  ScheduledRequest b = fresh("B", {1, 2, 3}, range(100, 108), range(300, 302), 10);
  b.cache_salt = salt_b;
  b.lora_name = lora_b;
  d->execute(plan(2, {running("A", 8, {50}, {4}, 8), b}));
  return d->last_violations();
}

TEST(ShadowKvTest, HitsNeverCrossSaltsOrAdapters) {
  EXPECT_TRUE(hit_across("s1", "l1", "s1", "l1").empty());
  for (const auto& v : {hit_across("s1", "", "s2", ""), hit_across("s1", "", "", ""), hit_across("", "l1", "", "l2"),
                        hit_across("", "", "", "l2")}) {
    ASSERT_FALSE(v.empty());
    EXPECT_EQ(v[0].kind, Violation::Kind::kMismatch);
    EXPECT_EQ(v[0].request, "B");
    EXPECT_STREQ(v[0].when, "admission");
    EXPECT_EQ(v[0].position, 0);
  }
}

}  // namespace
}  // namespace kv::sim
