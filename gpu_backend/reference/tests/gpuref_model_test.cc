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

#include "gpu_backend/reference/ref_model.h"

namespace kv::gpuref {
namespace {

std::vector<TokenId> tokens(TokenId base, int n) {
  std::vector<TokenId> t;
  for (int i = 0; i < n; ++i) t.push_back((base * 37 + i * 11) % 1000);
  return t;
}

std::vector<TokenId> slice(const std::vector<TokenId>& v, std::size_t b, std::size_t e) {
  return {v.begin() + static_cast<std::ptrdiff_t>(b), v.begin() + static_cast<std::ptrdiff_t>(e)};
}

ScheduledRequest sr(const RequestId& id, bool is_new, std::vector<BlockId> blocks,
                    const std::vector<TokenId>& all, std::size_t computed, std::size_t end,
                    std::int64_t prompt, bool samples, std::int64_t cached = 0) {
  ScheduledRequest r;
  r.id = id;
  r.is_new = is_new;
  r.block_ids = std::move(blocks);
  r.num_computed_tokens = static_cast<std::int64_t>(computed);
  r.num_cached_tokens = cached;
  if (is_new) r.context_token_ids = slice(all, 0, computed);
  r.token_ids = slice(all, computed, end);
  r.num_prompt_tokens = prompt;
  r.samples = samples;
  r.next_token = samples && end < all.size() ? all[end] : 0;
  return r;
}

StepPlan plan(std::int64_t step, std::vector<ScheduledRequest> reqs, std::vector<RequestId> finished = {},
              std::vector<RequestId> preempted = {}) {
  StepPlan p;
  p.step = step;
  p.block_size = 4;
  p.requests = std::move(reqs);
  p.finished = std::move(finished);
  p.preempted = std::move(preempted);
  for (const auto& r : p.requests) p.total_tokens += static_cast<std::int64_t>(r.token_ids.size());
  return p;
}

// A: prompt 10 then 2 decodes. B: prompt 12 sharing A's first 8 tokens, then 2 decodes.
// C: prompt 14 chunked 6 + 8, preempted after its first decode, resumed (prompt + 1 output)
// in a later step.
struct Scenario {
  std::vector<TokenId> a, b, c;
  Scenario() {
    a = tokens(1, 12);
    b = slice(a, 0, 8);
    for (TokenId t : tokens(2, 6)) b.push_back(t);
    c = tokens(3, 16);
  }
  std::vector<StepPlan> plans(bool caching) const {
    std::vector<StepPlan> p;
    p.push_back(plan(0, {sr("A", true, {1, 2, 3}, a, 0, 10, 10, true)}));
    if (caching) {  // B hits A's first two blocks
      p.push_back(plan(1, {sr("A", false, {}, a, 10, 11, 10, true),
                           sr("B", true, {1, 2, 4}, b, 8, 12, 12, true, 8),
                           sr("C", true, {6, 7}, c, 0, 6, 14, false)}));
    } else {
      p.push_back(plan(1, {sr("A", false, {}, a, 10, 11, 10, true),
                           sr("B", true, {4, 14, 15}, b, 0, 12, 12, true),
                           sr("C", true, {6, 7}, c, 0, 6, 14, false)}));
    }
    p.push_back(plan(2, {sr("A", false, {}, a, 11, 12, 10, true), sr("B", false, {5}, b, 12, 13, 12, true),
                         sr("C", false, {8, 9}, c, 6, 14, 14, true)}));
    p.push_back(plan(3, {sr("B", false, {}, b, 13, 14, 12, true), sr("C", false, {}, c, 14, 15, 14, true)}, {"A"}));
    p.push_back(plan(4, {sr("B", false, {}, b, 14, 15, 12, true)}, {}, {"C"}));
    if (caching) {  // C resumes with its three full blocks hit
      p.push_back(plan(5, {sr("C", true, {6, 7, 8, 10}, c, 12, 15, 14, true, 12)}));
    } else {
      p.push_back(plan(5, {sr("C", true, {10, 11, 12, 13}, c, 0, 15, 14, true)}));
    }
    return p;
  }
};

using HiddenLog = std::map<std::pair<RequestId, std::int32_t>, std::vector<float>>;

struct RunResult {
  HiddenLog hidden;
  std::vector<std::int64_t> prompt_tokens;  // per step
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
    for (int pos = 0; pos < 15; ++pos) {
      const std::int64_t slot = static_cast<std::int64_t>(engine.tables().row(row)[static_cast<std::size_t>(pos / 4)]) * 4 + pos % 4;
      const std::size_t off = cache.offset(slot, 0);
      const std::size_t w = static_cast<std::size_t>(cache.kv_heads * cache.head_dim);
      std::vector<float> kvv(cache.k.begin() + static_cast<std::ptrdiff_t>(off), cache.k.begin() + static_cast<std::ptrdiff_t>(off + w));
      kvv.insert(kvv.end(), cache.v.begin() + static_cast<std::ptrdiff_t>(off), cache.v.begin() + static_cast<std::ptrdiff_t>(off + w));
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
  EXPECT_EQ(on.prompt_tokens, (std::vector<std::int64_t>{10, 4 + 6, 8, 0, 0, 2}));
  EXPECT_EQ(off.prompt_tokens, (std::vector<std::int64_t>{10, 12 + 6, 8, 0, 0, 14}));
  int compared = 0;
  for (const auto& [key, value] : on.hidden) {
    auto it = off.hidden.find(key);
    if (it == off.hidden.end()) continue;
    ASSERT_EQ(value, it->second) << key.first << " position " << key.second;
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(on.hidden.size()));  // cache-off computes a superset
  EXPECT_EQ(compared, 12 + 7 + 15);  // A: 0..11, B: 8..14, C: 0..14 in 'on'
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
