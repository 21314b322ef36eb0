// The CPU reference of the Mamba state path (gpu_backend/reference/mamba_state.h): the
// recurrence by hand, where a step reads and writes states in each mode (an align move copies
// the state into the new block first, as vLLM's preprocess_mamba does), plans that put a null
// block where a state is read are refused, and the tiny model with a Mamba layer over the real
// scheduler's plans gives the same hidden states in modes align and all (prefix caching on,
// with state hits) as in mode none (caching off): a state carried through blocks, moves and
// hits is the state computed from scratch.
// Tolerance: none (exact equality): the state stays fp32 and is updated token by token in a
// fixed order whatever the chunking.
#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "gpu_backend/reference/block_tables.h"
#include "gpu_backend/reference/flat_batch.h"
#include "gpu_backend/reference/hybrid_scenario.h"
#include "gpu_backend/reference/kv_layout.h"
#include "gpu_backend/reference/mamba_state.h"
#include "gpu_backend/reference/ref_model.h"
#include "gpu_backend/reference/tests/ref_engine_run.h"
#include "model/catalog/model_shape.h"

namespace kv::gpuref {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

TEST(GpuRefMambaScan, FollowsTheGatedRecurrenceAndBroadcastsKvHeads) {
  // 2 heads over 1 KV head of dim 2: qkv rows are q (4), k (2), v (2). Sequence 0 (tokens 0-1)
  // starts from zero, sequence 1 (token 2) from block 3's state; token 3 is padding.
  const std::vector<float> qkv = {
      9, 9, 9, 9, 0.5f, -1.0f, 2.0f,  4.0f,   // token 0
      9, 9, 9, 9, 0.0f, 1.0f,  -2.0f, 1.0f,   // token 1
      9, 9, 9, 9, 2.0f, 0.25f, 1.0f,  -1.0f,  // token 2
      9, 9, 9, 9, 0.0f, 0.0f,  7.0f,  7.0f,   // token 3 (padding)
  };
  const std::vector<std::int32_t> qsl = {0, 2, 3};
  const std::vector<StateStep> steps = {{-1, 1}, {3, 2}};
  const std::int64_t page = 4;
  std::vector<float> states(5 * page, -5.0f);
  states[3 * page] = 0.5f;
  states[3 * page + 1] = -0.5f;
  std::vector<float> out(4 * 4, 99.0f);
  MambaScanArgs a;
  a.qkv = qkv.data();
  a.qkv_stride = 8;
  a.k_offset = 4;
  a.query_start_loc = &qsl;
  a.steps = &steps;
  a.num_tokens = 4;
  a.num_heads = 2;
  a.kv_heads = 1;
  a.head_dim = 2;
  a.page_floats = page;
  mamba_scan(a, states.data(), out.data());
  auto next = [](float s, float k, float v) { return sigmoid(k) * s + (1.0f - sigmoid(k)) * v; };
  const float s00 = next(0.0f, 0.5f, 2.0f), s01 = next(0.0f, -1.0f, 4.0f);
  const float s10 = next(s00, 0.0f, -2.0f), s11 = next(s01, 1.0f, 1.0f);
  const float s20 = next(0.5f, 2.0f, 1.0f), s21 = next(-0.5f, 0.25f, -1.0f);
  EXPECT_EQ(out, (std::vector<float>{s00, s01, s00, s01, s10, s11, s10, s11, s20, s21, s20, s21, 0, 0, 0, 0}));
  EXPECT_EQ(states[1 * page], s10);  // sequence 0's state after its last token
  EXPECT_EQ(states[1 * page + 1], s11);
  EXPECT_EQ(states[2 * page], s20);
  EXPECT_EQ(states[3 * page], 0.5f);  // the state read stays as it was
  EXPECT_EQ(states[4 * page], -5.0f);
}

// The Mamba presets' groups (as kvsim replay --device gpu hands them over) in every mode make
// layouts with Mamba groups, one tensor per layer index of the largest group.
TEST(GpuRefMambaLayout, ThePresetsMakeLayoutsInEveryMode) {
  for (const char* name : {"qwen3-next-80b-a3b", "qwen3.5-4b", "nemotron-h-8b"}) {
    const ModelShape m = find_model_shape(name).value();
    for (MambaCacheMode mode : {MambaCacheMode::kNone, MambaCacheMode::kAlign, MambaCacheMode::kAll}) {
      SCOPED_TRACE(std::string(name) + " " + to_string(mode));
      const std::vector<KvCacheGroupSpec> groups = m.kv_cache_groups(16, mode, 4096).value();
      StatusOr<KvLayout> l = make_kv_layout(groups, m.layers);
      ASSERT_TRUE(l.ok()) << l.status().message();
      EXPECT_TRUE(l->has_mamba());
      EXPECT_FALSE(l->plain());
      int mamba_layers = 0;
      for (int i = 0; i < m.layers; ++i) mamba_layers += l->is_mamba_layer(i) ? 1 : 0;
      EXPECT_EQ(mamba_layers, m.num_layers_of(AttentionType::kMamba));
      for (int g = 0; g < l->num_groups(); ++g) {
        EXPECT_EQ(l->is_state_group(g), groups[static_cast<std::size_t>(g)].spec.type == AttentionType::kMamba);
      }
    }
  }
  ModelShape spec = find_model_shape("qwen3-next-80b-a3b").value();
  const StatusOr<KvLayout> refused =
      make_kv_layout(spec.kv_cache_groups(16, MambaCacheMode::kAlign, 4096, /*num_speculative_blocks=*/1).value(), 48);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("speculative"), std::string::npos) << refused.status().message();
}

ScheduledRequest mamba_req(const RequestId& id, bool is_new, std::vector<BlockId> state, std::vector<BlockId> attn,
                           std::int64_t computed, int n) {
  ScheduledRequest r;
  r.id = id;
  r.is_new = is_new;
  r.group_block_ids = {std::move(state), std::move(attn)};
  r.num_computed_tokens = computed;
  if (is_new) r.context_token_ids.assign(static_cast<std::size_t>(computed), 1);
  r.token_ids.assign(static_cast<std::size_t>(n), 2);
  r.num_prompt_tokens = 64;
  return r;
}

KvLayout mamba_layout(MambaCacheMode mode) {
  StatusOr<KvLayout> l = make_kv_layout(scenario::tiny_mamba_groups(mode), 2);
  KV_CHECK(l.ok(), l.status().message());
  return *l;
}

StepPlan mamba_plan(const KvLayout& layout, std::int64_t step, std::vector<ScheduledRequest> reqs) {
  StepPlan p = scenario::plan(step, std::move(reqs));
  p.block_size = scenario::kMambaBlockSize;
  p.group_windows = layout.group_windows;
  p.group_state_block_sizes = layout.plan_state_block_sizes();
  return p;
}

// Request a computes 16 tokens, then 16 more: the state after position 15 is in its first
// Mamba block, the state after 31 belongs in its second.
struct TwoSteps {
  MambaStatePlan first, second;
};
TwoSteps run_two_steps(MambaCacheMode mode, std::vector<BlockId> first, std::vector<BlockId> second) {
  const KvLayout layout = mamba_layout(mode);
  BlockTables tables(2, 8, 32, layout.group_windows, layout.plan_state_block_sizes());
  TwoSteps out;
  const StepPlan p0 = mamba_plan(layout, 0, {mamba_req("a", true, std::move(first), {6}, 0, 16)});
  KV_CHECK(tables.apply(p0, nullptr).ok(), "step 0");
  KV_CHECK(build_flat_batch(p0, tables, 1024).ok(), "step 0 batch");
  out.first = plan_mamba_states(p0, tables, layout);
  const StepPlan p1 = mamba_plan(layout, 1, {mamba_req("a", false, std::move(second), {8}, 16, 16)});
  KV_CHECK(tables.apply(p1, nullptr).ok(), "step 1");
  KV_CHECK(build_flat_batch(p1, tables, 1024).ok(), "step 1 batch");
  out.second = plan_mamba_states(p1, tables, layout);
  return out;
}

TEST(GpuRefMambaStatePlan, AlignMovesCopyAllReadsTheOldBlockNoneKeepsOneBlock) {
  const KvLayout align = mamba_layout(MambaCacheMode::kAlign);
  ASSERT_EQ(align.group_state_block_sizes, (std::vector<int>{16, 0}));  // group 0: Mamba, group 1: attention
  EXPECT_FALSE(align.plain());
  EXPECT_TRUE(align.is_mamba_layer(0));
  EXPECT_FALSE(align.is_mamba_layer(1));

  const TwoSteps a = run_two_steps(MambaCacheMode::kAlign, {5}, {7});
  ASSERT_EQ(a.first.steps[0].size(), 1u);
  EXPECT_EQ(a.first.steps[0][0].read_block, -1);  // a fresh request starts from a zero state
  EXPECT_EQ(a.first.steps[0][0].write_block, 5);
  EXPECT_TRUE(a.first.copies[0].empty());
  ASSERT_EQ(a.second.copies[0].size(), 1u);  // the move: block 5's state copied into block 7
  EXPECT_EQ(a.second.copies[0][0].src, 5);
  EXPECT_EQ(a.second.copies[0][0].dst, 7);
  EXPECT_EQ(a.second.steps[0][0].read_block, 7);  // then updated in place
  EXPECT_EQ(a.second.steps[0][0].write_block, 7);
  EXPECT_TRUE(a.second.steps[1].empty());  // the attention group has no states

  const TwoSteps all = run_two_steps(MambaCacheMode::kAll, {5}, {7});
  EXPECT_TRUE(all.second.copies[0].empty());
  EXPECT_EQ(all.second.steps[0][0].read_block, 5);
  EXPECT_EQ(all.second.steps[0][0].write_block, 7);

  const TwoSteps none = run_two_steps(MambaCacheMode::kNone, {5}, {});  // one block for the whole request
  EXPECT_EQ(mamba_layout(MambaCacheMode::kNone).group_state_block_sizes[0], scenario::kHybridMaxModelLen);
  EXPECT_TRUE(none.second.copies[0].empty());
  EXPECT_EQ(none.second.steps[0][0].read_block, 5);
  EXPECT_EQ(none.second.steps[0][0].write_block, 5);
}

TEST(GpuRefMambaStatePlan, NullStateBlocksAreRefused) {
  const KvLayout layout = mamba_layout(MambaCacheMode::kAlign);
  // 20 computed tokens: the state read is in entry 1, which is null.
  BlockTables t(2, 8, 32, layout.group_windows, layout.plan_state_block_sizes());
  const StepPlan reads_null = mamba_plan(layout, 0, {mamba_req("a", true, {4, 0}, {6, 9}, 20, 4)});
  ASSERT_TRUE(t.apply(reads_null, nullptr).ok());  // nulls may sit anywhere in an align table
  const StatusOr<FlatBatch> bad = build_flat_batch(reads_null, t, 1024);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("null block"), std::string::npos) << bad.status().message();

  BlockTables u(2, 8, 32, layout.group_windows, layout.plan_state_block_sizes());
  StepPlan no_states = mamba_plan(layout, 0, {mamba_req("a", true, {4}, {6}, 0, 4)});
  no_states.group_state_block_sizes.clear();
  EXPECT_FALSE(u.apply(no_states, nullptr).ok());  // a plan that does not know the Mamba group
  EXPECT_EQ(u.num_live(), 0u);
}

using scenario::HiddenLog;

struct MambaRun {
  HiddenLog hidden;
  std::int64_t cached = 0;  // tokens served by prefix-cache hits
  int copies = 0;           // align moves
};

MambaRun run_engine(MambaCacheMode mode) {
  const bool caching = mode != MambaCacheMode::kNone;
  const std::vector<KvCacheGroupSpec> groups = scenario::tiny_mamba_groups(mode);
  const std::vector<StepPlan> plans = scenario::hybrid_plans(groups, caching, scenario::kMambaBlockSize);
  const RefEngineOptions o = scenario::engine_options(groups, scenario::kMambaBlockSize);
  RefEngine engine(o);
  MambaRun run;
  for (const StepPlan& p : plans) {
    StatusOr<RefStepOutput> out = engine.execute(p);
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return run;
    run.copies += static_cast<int>(engine.state_plan().copies[0].size());
    for (const ScheduledRequest& r : p.requests) run.cached += r.num_cached_tokens;
    scenario::record_hidden(p, *out, o.model.hidden, run.hidden);
  }
  return run;
}

TEST(GpuRefMambaModel, AlignAndAllWithStateHitsEqualNoneWithoutCaching) {
  const MambaRun none = run_engine(MambaCacheMode::kNone);
  const MambaRun align = run_engine(MambaCacheMode::kAlign);
  const MambaRun all = run_engine(MambaCacheMode::kAll);
  EXPECT_EQ(none.cached, 0);
  EXPECT_EQ(none.copies, 0);
  EXPECT_GT(align.cached, 0);  // B and D start from cached states
  EXPECT_GT(align.copies, 0);  // running requests' states moved
  EXPECT_GT(all.cached, 0);
  EXPECT_EQ(all.copies, 0);
  ASSERT_FALSE(none.hidden.empty());
  // Every position computed with caching was computed from scratch without it, identically.
  for (const MambaRun* run : {&align, &all}) {
    for (const auto& [key, hidden] : run->hidden) {
      auto it = none.hidden.find(key);
      ASSERT_NE(it, none.hidden.end()) << key.first << " @ " << key.second;
      EXPECT_EQ(hidden, it->second) << key.first << " @ " << key.second;
    }
  }
  // B shares A's first 24 tokens: its positions there see A's state, so A's hidden states.
  for (std::int64_t p = 0; p < 24; ++p) {
    auto b = none.hidden.find({"B", p});
    if (b == none.hidden.end()) continue;
    EXPECT_EQ(b->second, none.hidden.at({"A", p})) << "position " << p;
  }
  EXPECT_NE(none.hidden.at({"B", 24}), none.hidden.at({"A", 24}));  // B's own token there
}

}  // namespace
}  // namespace kv::gpuref
