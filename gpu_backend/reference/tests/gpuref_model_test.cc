// The whole tiny model on the CPU reference, over hand-made StepPlans, with prefix caching on
// (hits are served from blocks another request computed; a preempted request resumes from its
// own cached blocks) and off (everything recomputed in fresh blocks). Every (request, position)
// computed in both runs must give the same final hidden state, and every position's K/V must
// be the same whichever block holds it.
// Tolerance: none (exact equality). The reference computes each token row in a fixed order
// that does not depend on the rest of the batch, and a token's K/V depend only on its prefix,
// so a cache hit reads bit-identical K/V; this holds in fp32 and with bf16 rounding alike.
#include <cmath>
#include <map>
#include <utility>

#include <gtest/gtest.h>

#include "gpu_backend/reference/prefix_scenario.h"
#include "gpu_backend/reference/ref_model.h"

namespace kv::gpuref {
namespace {

using scenario::plan;
using scenario::Scenario;
using scenario::sr;

using HiddenLog = std::map<std::pair<RequestId, std::int32_t>, std::vector<float>>;

struct RunResult {
  HiddenLog hidden;
  std::vector<std::int64_t> prompt_tokens;                              // per step
  std::map<std::pair<RequestId, std::int32_t>, std::vector<float>> kv;  // layer 1's K then V, at the end
};

RunResult run(const std::vector<StepPlan>& plans, DType dtype) {
  RefEngineOptions o;
  o.dtype = dtype;
  o.block_size = 4;
  o.num_blocks = 16;
  o.max_rows = 4;
  o.max_blocks_per_row = 8;
  RefEngine engine(o);
  RunResult out;
  const int h = o.model.hidden;
  for (const StepPlan& p : plans) {
    StatusOr<RefStepOutput> r = engine.execute(p);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return out;
    out.prompt_tokens.push_back(r->batch.prompt_tokens);
    std::size_t t = 0;
    for (const ScheduledRequest& s : p.requests) {
      for (std::size_t j = 0; j < s.token_ids.size(); ++j, ++t) {
        const auto pos = static_cast<std::int32_t>(s.num_computed_tokens) + static_cast<std::int32_t>(j);
        out.hidden[{s.id, pos}] = {r->final_hidden.begin() + static_cast<std::ptrdiff_t>(t * h),
                                   r->final_hidden.begin() + static_cast<std::ptrdiff_t>((t + 1) * h)};
      }
    }
  }
  const RefKvCache& cache = engine.caches()[1];
  for (const RequestId id : {"B", "C"}) {
    const int row = engine.tables().row_of(id);
    if (row < 0) continue;  // not a request of these plans
    for (int pos = 0; pos < 15; ++pos) {
      const std::int64_t slot =
          static_cast<std::int64_t>(engine.tables().row(row)[static_cast<std::size_t>(pos / 4)]) * 4 + pos % 4;
      const std::size_t off = cache.offset(slot, 0);
      const std::size_t w = static_cast<std::size_t>(cache.kv_heads * cache.head_dim);
      std::vector<float> kvv(cache.k.begin() + static_cast<std::ptrdiff_t>(off),
                             cache.k.begin() + static_cast<std::ptrdiff_t>(off + w));
      kvv.insert(kvv.end(), cache.v.begin() + static_cast<std::ptrdiff_t>(off),
                 cache.v.begin() + static_cast<std::ptrdiff_t>(off + w));
      out.kv[{id, pos}] = std::move(kvv);
    }
  }
  return out;
}

void expect_same(DType dtype) {
  const Scenario s;
  const RunResult on = run(s.plans(true), dtype);
  const RunResult off = run(s.plans(false), dtype);
  // Prompt tokens computed, per step, as the plans say (hits are not recomputed).
  EXPECT_EQ(on.prompt_tokens, scenario::expected_prompt_tokens(true));
  EXPECT_EQ(off.prompt_tokens, scenario::expected_prompt_tokens(false));
  int compared = 0;
  for (const auto& [key, value] : on.hidden) {
    auto it = off.hidden.find(key);
    if (it == off.hidden.end()) continue;
    ASSERT_EQ(value, it->second) << key.first << " position " << key.second;
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(on.hidden.size()));  // cache-off computes a superset
  EXPECT_EQ(compared, 12 + 7 + 15);                         // A: 0..11, B: 8..14, C: 0..14 in 'on'
  ASSERT_EQ(on.kv.size(), off.kv.size());
  for (const auto& [key, value] : on.kv) ASSERT_EQ(value, off.kv.at(key)) << key.first << " position " << key.second;
  // The model is well-conditioned: final hidden states are RMS-normalized, finite, not constant.
  const std::vector<float>& last = on.hidden.at({"B", 14});
  double ss = 0.0;
  for (float x : last) {
    ASSERT_TRUE(std::isfinite(x));
    ss += static_cast<double>(x) * x;
  }
  EXPECT_NEAR(ss / static_cast<double>(last.size()), 1.0, 0.05);
  EXPECT_NE(on.hidden.at({"B", 14}), on.hidden.at({"B", 13}));
}

TEST(GpuRefModel, PrefixCachingOnAndOffGiveIdenticalHiddenStatesFp32) { expect_same(DType::kFp32); }
TEST(GpuRefModel, PrefixCachingOnAndOffGiveIdenticalHiddenStatesBf16) { expect_same(DType::kBf16); }

TEST(GpuRefModel, SeededWeightsAreDeterministicAndScaled) {
  const std::vector<float> w1 = seeded_tensor(5, 17, 4096, 0.1f, DType::kBf16);
  const std::vector<float> w2 = seeded_tensor(5, 17, 4096, 0.1f, DType::kBf16);
  const std::vector<float> w3 = seeded_tensor(6, 17, 4096, 0.1f, DType::kBf16);
  EXPECT_EQ(w1, w2);
  EXPECT_NE(w1, w3);
  double mean = 0.0, sq = 0.0;
  for (float x : w1) {
    ASSERT_LE(std::abs(x), round_bf16(0.1f));  // rounding may step just past a
    ASSERT_EQ(x, round_bf16(x));
    mean += x;
    sq += static_cast<double>(x) * x;
  }
  mean /= 4096.0;
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(sq / 4096.0, 0.01 / 3.0, 0.0005);  // variance of U(-a, a) is a^2 / 3
}

// The plans the GPU test of CUDA graphs replays: well formed here, where no GPU is needed.
TEST(GpuRefModel, LockstepDecodePlansAreWellFormed) {
  const RunResult r = run(scenario::lockstep_decode_plans(), DType::kFp32);
  EXPECT_EQ(r.prompt_tokens, (std::vector<std::int64_t>{24, 0, 0, 0, 0}));
  EXPECT_EQ(r.hidden.count({"c", 8}), 1u);  // c's position 8, in the block it gets at step 4
}

TEST(GpuRefModel, BadPlansAreStatuses) {
  RefEngineOptions o;
  o.block_size = 4;
  o.num_blocks = 8;
  o.max_rows = 2;
  o.max_blocks_per_row = 4;
  RefEngine engine(o);
  const Scenario s;
  EXPECT_FALSE(engine.execute(plan(0, {sr("A", false, {}, s.a, 0, 2, 10, false)})).ok());  // unknown
  StepPlan wrong = plan(0, {sr("A", true, {1}, s.a, 0, 2, 10, false)});
  wrong.block_size = 16;
  EXPECT_FALSE(engine.execute(wrong).ok());
  EXPECT_FALSE(engine.execute(plan(0, {sr("A", true, {1}, s.a, 0, 10, 10, false)})).ok());  // 10 tokens, 1 block
}

}  // namespace
}  // namespace kv::gpuref
