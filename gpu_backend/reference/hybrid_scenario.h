// Step plans of a hybrid model made by the real scheduler (model/sched/scheduler.h with KV-cache
// groups), for the CPU reference tests and the GPU tests: the tiny model (2 layers) with
// gpt-oss-20b's pattern, layer 0 windowed (a sliding window or a chunk) and layer 1 full
// attention, block size 4, a token budget of 16 (chunked prefill), prompts that share
// prefixes and a request that arrives after its prefix was computed, so plans carry null
// blocks (dropped by the window, or skipped by a hit) and prefix-cache hits. The Mamba variant
// (tiny_mamba_groups: layer 0 a Mamba layer, layer 1 full attention) runs at the 16-token
// blocks its state needs (kMambaBlockSize), so its plans carry align moves and state hits.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu_backend/reference/prefix_scenario.h"
#include "model/catalog/model_shape.h"
#include "model/sched/scheduler.h"
#include "model/util/check.h"

namespace kv::gpuref::scenario {

inline constexpr int kHybridBlockSize = 4;
inline constexpr int kHybridNumBlocks = 96;  // including the null block
inline constexpr int kHybridMaxModelLen = 128;
inline constexpr int kHybridMaxSeqs = 4;
inline constexpr int kMambaBlockSize = 16;  // ModelShape::attention_block_size for the tiny Mamba model

// The tiny model with layer 0 a Mamba layer (a 2 KiB state) and layer 1 full attention, in
// `mode` (kNone: the Mamba group's one block covers kHybridMaxModelLen tokens).
inline std::vector<KvCacheGroupSpec> tiny_mamba_groups(MambaCacheMode mode) {
  ModelShape m = find_model_shape("tiny").value();
  m.layer_types = {AttentionType::kMamba, AttentionType::kFullAttention};
  m.mamba_state_bytes = 2048;
  m.mamba_in_proj = 512;
  m.mamba_inner = 256;
  KV_CHECK(m.attention_block_size(kHybridBlockSize) == kMambaBlockSize, "the tiny Mamba model's block size changed");
  StatusOr<std::vector<KvCacheGroupSpec>> groups = m.kv_cache_groups(kHybridBlockSize, mode, kHybridMaxModelLen);
  KV_CHECK(groups.ok(), groups.status().message());
  return *groups;
}

// The tiny model's groups with layer 0 windowed: reach > 0 a sliding window of that many
// tokens, reach < 0 a chunk of -reach tokens, 0: every layer full attention (one group).
inline std::vector<KvCacheGroupSpec> tiny_hybrid_groups(int reach) {
  ModelShape m = find_model_shape("tiny").value();
  if (reach == 0) return {};
  m.layer_types = {reach > 0 ? AttentionType::kSlidingWindow : AttentionType::kChunkedLocalAttention,
                   AttentionType::kFullAttention};
  if (reach > 0) m.sliding_window = reach;
  if (reach < 0) m.attention_chunk = -reach;
  StatusOr<std::vector<KvCacheGroupSpec>> groups = m.kv_cache_groups(kHybridBlockSize);
  KV_CHECK(groups.ok(), groups.status().message());
  return *groups;
}

// The plans the scheduler makes for four requests: A (prompt 30) and C (prompt 21) at step 0,
// B (A's first 24 tokens, then 9 of its own) at step 4, D (A's prompt and first two outputs)
// at step 12. Empty groups: a dense model (plans carry block_ids).
inline std::vector<StepPlan> hybrid_plans(const std::vector<KvCacheGroupSpec>& groups, bool caching,
                                          int block_size = kHybridBlockSize) {
  SchedulerConfig sc;
  sc.cache.num_blocks = kHybridNumBlocks;
  sc.cache.block_size = block_size;
  sc.cache.enable_caching = caching;
  sc.cache.max_model_len = kHybridMaxModelLen;
  sc.max_num_batched_tokens = 16;
  sc.max_num_seqs = kHybridMaxSeqs;
  sc.cache.groups = groups;
  Scheduler scheduler(sc);
  const std::vector<TokenId> a = tokens(11, 36), b_own = tokens(12, 14), c = tokens(13, 24);
  auto spec = [](const RequestId& id, const std::vector<TokenId>& all, std::size_t prompt) {
    RequestSpec s;
    s.id = id;
    s.prompt = slice(all, 0, prompt);
    s.outputs = slice(all, prompt, all.size());
    return s;
  };
  std::vector<TokenId> b = slice(a, 0, 24);
  b.insert(b.end(), b_own.begin(), b_own.end());
  const std::map<int, std::vector<RequestSpec>> arrivals = {
      {0, {spec("A", a, 30), spec("C", c, 21)}}, {4, {spec("B", b, 33)}}, {12, {spec("D", a, 32)}}};
  std::vector<StepPlan> plans;
  for (int step = 0; step < 400 && (step <= 12 || scheduler.has_unfinished()); ++step) {
    if (auto it = arrivals.find(step); it != arrivals.end()) {
      for (const RequestSpec& s : it->second) KV_CHECK(scheduler.add_request(s).ok(), "adding request " << s.id);
    }
    StepPlan plan = scheduler.schedule();
    StepResult result;
    for (const ScheduledRequest& r : plan.requests) {
      if (r.samples) result.sampled.emplace_back(r.id, r.next_token);
    }
    scheduler.update_from_output(plan, result);
    if (!plan.requests.empty() || !plan.finished.empty() || !plan.preempted.empty()) plans.push_back(std::move(plan));
  }
  KV_CHECK(!scheduler.has_unfinished(), "the hybrid scenario did not finish");
  return plans;
}

}  // namespace kv::gpuref::scenario
