// RandomPlanBuilder: seeded sequences of StepPlans for device tests, made by driving a real
// KvCacheManager with a small scheduler (token budget, chunked prefill, prefix-cache hits,
// preemption by recompute, teacher-forced outputs). Not vLLM's scheduler: only its plans'
// shape matters here. The last plan lists every request still unfinished as finished, so a
// device has released everything after the sequence.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/block_hasher.h"
#include "model/kv_cache_manager.h"
#include "model/request.h"
#include "model/sched/step_plan.h"

namespace kv::sim::testing {

struct RandomPlanOptions {
  std::uint64_t seed = 1;
  int num_requests = 12;
  int num_blocks = 48;  // including the null block
  int block_size = 4;
  int token_budget = 24;
  int max_running = 6;
  int max_suffix = 20;
  int max_output = 6;
  int preempt_percent = 3;  // chance per step of preempting the last running request
};

inline std::vector<StepPlan> build_random_plans(const RandomPlanOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  BlockHasher hasher(HashAlgo::kXxhashCbor);
  KvCacheConfig config;
  config.num_blocks = o.num_blocks;
  config.block_size = o.block_size;
  KvCacheManager manager(config);

  std::vector<std::vector<TokenId>> prefixes(3);
  for (auto& p : prefixes) {
    int n = uniform(o.block_size, 3 * o.block_size);
    for (int i = 0; i < n; ++i) p.push_back(uniform(1, 50));
  }
  struct Live {
    std::unique_ptr<Request> request;
    std::vector<TokenId> outputs;
    std::size_t next_output = 0;
  };
  std::vector<Live> all(o.num_requests);
  std::deque<int> waiting;
  std::vector<int> running;
  for (int i = 0; i < o.num_requests; ++i) {
    std::vector<TokenId> prompt;
    int which = uniform(0, 3);
    if (which < 3) prompt = prefixes[which];
    int suffix = uniform(1, o.max_suffix);
    for (int k = 0; k < suffix; ++k) prompt.push_back(uniform(1, 50));
    all[i].request = std::make_unique<Request>("r" + std::to_string(i), prompt, HashExtras{}, &hasher, o.block_size);
    int outputs = uniform(1, o.max_output);
    for (int k = 0; k < outputs; ++k) all[i].outputs.push_back(uniform(1, 50));
    waiting.push_back(i);
  }

  auto tokens_of = [](const Request& r, std::int64_t begin, std::int64_t end) {
    auto t = r.tokens();
    return std::vector<TokenId>(t.begin() + begin, t.begin() + end);
  };

  std::vector<StepPlan> plans;
  std::vector<RequestId> finished;
  for (std::int64_t step = 1; step < 2000 && (!waiting.empty() || !running.empty()); ++step) {
    StepPlan plan;
    plan.step = step;
    plan.block_size = o.block_size;
    plan.finished = std::move(finished);
    finished.clear();
    int budget = o.token_budget;
    std::vector<std::pair<int, std::int64_t>> scheduled;  // request, tokens

    auto preempt = [&](int victim) {
      Request& r = *all[victim].request;
      manager.free(r);
      r.num_computed_tokens = 0;
      plan.preempted.push_back(r.id());
      running.erase(std::find(running.begin(), running.end(), victim));
      waiting.push_front(victim);
    };
    if (!running.empty() && uniform(0, 99) < o.preempt_percent) preempt(running.back());

    for (std::size_t k = 0; k < running.size() && budget > 0;) {
      int i = running[k];
      Request& r = *all[i].request;
      std::int64_t n = std::min<std::int64_t>(r.num_tokens() - r.num_computed_tokens, budget);
      auto fresh = manager.allocate_slots(r, n);
      if (!fresh) {
        preempt(running.back());  // the newest running request makes room (maybe this one)
        continue;
      }
      ScheduledRequest s;
      s.id = r.id();
      s.block_ids = fresh->front();
      s.num_computed_tokens = r.num_computed_tokens;
      s.token_ids = tokens_of(r, r.num_computed_tokens, r.num_computed_tokens + n);
      s.num_prompt_tokens = r.num_prompt_tokens();
      plan.requests.push_back(std::move(s));
      scheduled.emplace_back(i, n);
      budget -= static_cast<int>(n);
      ++k;
    }
    while (plan.preempted.empty() && budget > 0 && !waiting.empty() &&
           static_cast<int>(running.size()) < o.max_running) {
      int i = waiting.front();
      Request& r = *all[i].request;
      CacheHit hit = manager.get_computed_blocks(r);
      std::int64_t n = std::min<std::int64_t>(r.num_tokens() - hit.num_tokens, budget);
      if (!manager.allocate_slots(r, n, hit)) break;
      waiting.pop_front();
      ScheduledRequest s;
      s.id = r.id();
      s.is_new = true;
      auto table = manager.blocks_of(r.id());
      s.block_ids.assign(table.begin(), table.end());
      s.num_computed_tokens = hit.num_tokens;
      s.num_cached_tokens = hit.num_tokens;
      s.context_token_ids = tokens_of(r, 0, hit.num_tokens);
      s.token_ids = tokens_of(r, hit.num_tokens, hit.num_tokens + n);
      s.num_prompt_tokens = r.num_prompt_tokens();
      r.num_computed_tokens = hit.num_tokens;
      plan.requests.push_back(std::move(s));
      scheduled.emplace_back(i, n);
      running.push_back(i);
      budget -= static_cast<int>(n);
    }
    for (std::size_t k = 0; k < scheduled.size(); ++k) {
      auto [i, n] = scheduled[k];
      Live& l = all[i];
      Request& r = *l.request;
      r.num_computed_tokens += n;
      plan.total_tokens += n;
      if (r.num_computed_tokens < r.num_tokens()) continue;
      ScheduledRequest& s = plan.requests[k];
      s.samples = true;
      s.next_token = l.outputs[l.next_output++];
      TokenId next = s.next_token;
      r.append_tokens(std::span<const TokenId>(&next, 1));
      if (l.next_output == l.outputs.size()) {
        manager.free(r);
        finished.push_back(r.id());
        running.erase(std::find(running.begin(), running.end(), i));
      }
    }
    plans.push_back(std::move(plan));
  }
  StepPlan last;
  last.step = static_cast<std::int64_t>(plans.size()) + 1;
  last.block_size = o.block_size;
  last.finished = std::move(finished);
  for (int i : running) last.finished.push_back(all[i].request->id());
  plans.push_back(std::move(last));
  return plans;
}

}  // namespace kv::sim::testing
