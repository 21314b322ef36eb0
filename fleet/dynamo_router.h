// DynamoRouter: NVIDIA Dynamo's KV router (its default worker selector), written from
//   wxsms/dynamo docs/design_docs/router_design.md ("Cost Calculation", "Worker Selection"),
//   docs/router/kv_cache_routing.md (the flags and their defaults), and the selection code in
//   lib/llm/src/kv_router/scheduler.rs (DefaultWorkerSelector, softmax_sample) and
//   lib/llm/src/kv_router/approx.rs (PruneConfig: the 120 s TTL, re-insertion refreshes it).
//
// Per replica r, for a request of P prompt tokens, block size B and overlap o_r blocks:
//   prefill_blocks_r = max(0, P - o_r * B) / B            (a real number)
//   decode_blocks_r  = active_blocks_r + ceil(P / B)      (active: routed, not yet finished)
//   cost_r           = overlap_score_weight * prefill_blocks_r + decode_blocks_r
// Temperature 0: the lowest cost; ties go to the tied replica with the smallest index tree
// (distinct blocks the router holds for it); when all tied trees are equal, a uniform draw
// among the tied replicas. Temperature T > 0: p_r proportional to
// exp(-(cost_r - min) / ((max - min) * T)) (uniform when all costs are equal), sampled with one
// uniform draw u in [0, 1): the first replica whose cumulative probability reaches u.
// Overlap o_r comes from the KV events (event mode) or, with kv_events off, from the router's own
// decisions: each routed request's blocks stay on its replica until ttl after the last time
// they were routed there.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "fleet/router.h"
#include "fleet/seeded_random.h"
#include "fleet/ttl_block_index.h"

namespace kv::fleet {

struct DynamoOptions {
  double overlap_score_weight = 1.0;      // --kv-overlap-score-weight
  double temperature = 0.0;               // --router-temperature
  bool kv_events = true;                  // --kv-events / --no-kv-events
  std::int64_t ttl_ns = 120'000'000'000;  // approximate mode: PruneConfig::ttl (120 s)
};

class DynamoRouter final : public Router {
 public:
  DynamoRouter(int num_replicas, const DynamoOptions& options, std::uint64_t seed);
  std::string_view name() const override { return "dynamo"; }
  bool reads_block_hashes() const override { return true; }
  bool reads_kv_events() const override { return options_.kv_events; }
  bool reads_load_reports() const override { return false; }  // its own active blocks instead

  // The cost of every replica for `request` as choose() computes it (approximate mode: as of
  // the last expiry; route() expires first).
  std::vector<double> costs(const RouteRequest& request) const;

 protected:
  int choose(const RouteRequest& request) override;
  void on_routed(const RouteRequest& request, int replica) override;

 private:
  int overlap_blocks(int replica, const RouteRequest& request) const;
  std::int64_t tree_size(int replica) const;
  int lowest_cost(const std::vector<double>& cost);
  int sample_softmax(const std::vector<double>& cost);

  DynamoOptions options_;
  SeededRandom random_;
  std::vector<TtlBlockIndex> routed_;  // approximate mode: per replica, what the router sent there
};

}  // namespace kv::fleet
