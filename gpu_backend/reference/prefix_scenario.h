// A hand-made sequence of StepPlans with prefix sharing, chunked prefill and preemption, in
// two variants: prefix caching on (hits served from blocks computed earlier) and off (every
// token recomputed in fresh blocks). Used by the CPU reference tests and the GPU tests to check
// that both variants give the same hidden states. block_size 4, 16 blocks, 3 live requests.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/sched/step_plan.h"

namespace kv::gpuref::scenario {

inline std::vector<TokenId> tokens(TokenId base, int n) {
  std::vector<TokenId> t;
  for (int i = 0; i < n; ++i) t.push_back((base * 37 + i * 11) % 1000);
  return t;
}

inline std::vector<TokenId> slice(const std::vector<TokenId>& v, std::size_t b, std::size_t e) {
  return {v.begin() + static_cast<std::ptrdiff_t>(b), v.begin() + static_cast<std::ptrdiff_t>(e)};
}

inline ScheduledRequest sr(const RequestId& id, bool is_new, std::vector<BlockId> blocks,
                           const std::vector<TokenId>& all, std::size_t computed, std::size_t end, std::int64_t prompt,
                           bool samples, std::int64_t cached = 0) {
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

inline StepPlan plan(std::int64_t step, std::vector<ScheduledRequest> reqs, std::vector<RequestId> finished = {},
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
      p.push_back(plan(1, {sr("A", false, {}, a, 10, 11, 10, true), sr("B", true, {1, 2, 4}, b, 8, 12, 12, true, 8),
                           sr("C", true, {6, 7}, c, 0, 6, 14, false)}));
    } else {
      p.push_back(plan(1, {sr("A", false, {}, a, 10, 11, 10, true), sr("B", true, {4, 14, 15}, b, 0, 12, 12, true),
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

// Three requests (prompts of 9, 10 and 5 tokens) prefilled in one step, then decoding in
// lockstep for four steps: the uniform-decode batches that CUDA graphs replay. Each request
// gets a new block in the step whose position first crosses into it (a at 12, b at 12, c at 8).
inline std::vector<StepPlan> lockstep_decode_plans() {
  const std::vector<TokenId> a = tokens(4, 20), b = tokens(5, 20), c = tokens(6, 20);
  std::vector<StepPlan> plans;
  plans.push_back(plan(0, {sr("a", true, {1, 2, 3}, a, 0, 9, 9, true), sr("b", true, {4, 5, 6}, b, 0, 10, 10, true),
                           sr("c", true, {7, 8}, c, 0, 5, 5, true)}));
  auto grows = [](std::int64_t step, std::int64_t at, BlockId block) {
    return step == at ? std::vector<BlockId>{block} : std::vector<BlockId>{};
  };
  for (std::int64_t step = 1; step <= 4; ++step) {
    plans.push_back(plan(step, {sr("a", false, grows(step, 4, 9), a, 8 + step, 9 + step, 9, true),
                                sr("b", false, grows(step, 3, 10), b, 9 + step, 10 + step, 10, true),
                                sr("c", false, grows(step, 4, 11), c, 4 + step, 5 + step, 5, true)}));
  }
  return plans;
}

// Prompt tokens each step computes, as the plans say: caching on, then off.
inline std::vector<std::int64_t> expected_prompt_tokens(bool caching) {
  return caching ? std::vector<std::int64_t>{10, 4 + 6, 8, 0, 0, 2}
                 : std::vector<std::int64_t>{10, 12 + 6, 8, 0, 0, 14};
}

}  // namespace kv::gpuref::scenario
