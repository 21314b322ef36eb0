// LlmdRouter: llm-d's inference scheduler (the endpoint picker) with a prefix-cache scorer, the
// kv-cache-utilization-scorer and the queue-scorer, summed by weight, and the max-score-picker.
// Written from:
//   llm-d/llm-d guides/precise-prefix-cache-aware/scheduler/precise-prefix-cache-aware.values.yaml
//     (llm-d-precise: precise-prefix-cache-scorer 2, kv-cache-utilization-scorer 1, queue-scorer 1);
//   llm-d/llm-d guides/inference-scheduling/scheduler/inference-scheduling.values.yaml
//     (llm-d-approx: prefix-cache-scorer 3, kv-cache-utilization-scorer 2, queue-scorer 2);
//   llm-d-inference-scheduler pkg/plugins/scorer/precise_prefix_cache.go and utils.go (the
//     precise score's normalization, indexedScoresToNormalizedScoredPods) and llm-d-kv-cache-manager's
//     LongestPrefixScorer (only pods holding the first block get a score);
//   gateway-api-inference-extension pkg/epp/scheduling/framework/plugins/multi/prefix/plugin.go
//     (the approximate scorer, DefaultMaxPrefixBlocks 256, DefaultLRUCapacityPerServer 31250),
//     the queue scorer (plugins/scorer/queue.go) and the max-score picker (plugins/picker).
//
// Scores, each in [0, 1], for the request's first max_prefix_blocks hashes h:
//   precise prefix: m_r = blocks of h replica r holds as a prefix (KV events). Over the replicas
//     with m_r > 0: (m_r - min) / (max - min), or 1 when min == max; 0 for the others.
//   approx prefix:  m_r / |h| (0 when h is empty), m_r from a per-replica LRU of the hashes the
//     router routed there (lru_capacity hashes, touched in prompt order on each routing).
//   kv-cache-utilization: 1 - kv_usage_r (last load report).
//   queue: (max_waiting - waiting_r) / (max_waiting - min_waiting), or 1 when all are equal.
// total_r = prefix_weight * prefix_r + kv_weight * kv_r + queue_weight * queue_r; the highest
// total wins, ties by a uniform draw among the tied replicas (the picker shuffles before sorting).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "fleet/lru_block_set.h"
#include "fleet/router.h"
#include "fleet/seeded_random.h"

namespace kv::fleet {

struct LlmdOptions {
  bool precise = true;                // prefix from KV events (true) or from the router's own LRU
  double prefix_weight = 2.0;         // precise guide 2.0; inference-scheduling guide 3
  double kv_weight = 1.0;             // precise guide 1.0; inference-scheduling guide 2
  double queue_weight = 1.0;          // precise guide 1.0; inference-scheduling guide 2
  int max_prefix_blocks = 256;        // maxPrefixBlocksToMatch
  std::int64_t lru_capacity = 31250;  // lruCapacityPerServer (approximate only)

  static LlmdOptions precise_defaults() { return {}; }
  static LlmdOptions approx_defaults() { return {false, 3.0, 2.0, 2.0, 256, 31250}; }
};

class LlmdRouter final : public Router {
 public:
  LlmdRouter(int num_replicas, const LlmdOptions& options, std::uint64_t seed);
  std::string_view name() const override { return options_.precise ? "llm-d-precise" : "llm-d-approx"; }
  bool reads_block_hashes() const override { return true; }
  bool reads_kv_events() const override { return options_.precise; }

  // The weighted total of every replica for `request`, as choose() computes it.
  std::vector<double> scores(const RouteRequest& request) const;

 protected:
  int choose(const RouteRequest& request) override;
  void on_routed(const RouteRequest& request, int replica) override;

 private:
  std::span<const BlockHash> matched_span(const RouteRequest& request) const;
  std::vector<double> prefix_scores(std::span<const BlockHash> hashes) const;
  std::vector<double> queue_scores() const;

  LlmdOptions options_;
  SeededRandom random_;
  std::vector<LruBlockSet> routed_;  // approximate only: per replica, the hashes routed there
};

}  // namespace kv::fleet
