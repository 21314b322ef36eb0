// SglangRouter: SGLang's cache-aware load-balancing router (sgl-router, policy cache_aware),
// written from sgl-project/sglang rust/README.md ("Cache-Aware Load-Balancing Router" and its
// configuration parameters with their defaults) and the CacheAware router's comment and
// selection code in rust/src/router.rs.
//
// The load of a replica is the router's own count of requests it sent there and has not seen
// finish. With min and max over the replicas' loads, the fleet is imbalanced when
//   (max - min) > balance_abs_threshold  and  max > balance_rel_threshold * min.
// Imbalanced: the least loaded replica (lowest index on ties). Balanced: per replica an
// approximate tree of the prefixes the router sent there (here: of their block hashes); the
// replica with the longest matched prefix (lowest index on ties) and match_rate = matched /
// request blocks (0 without blocks). match_rate > cache_threshold: that replica; otherwise the
// replica with the smallest tree (lowest index on ties). Either way the request's blocks are
// then inserted into the chosen replica's tree. A tree over max_tree_size blocks drops its least
// recently used leaves (on insert here, where sgl-router runs eviction every eviction_interval).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "fleet/lru_block_set.h"
#include "fleet/router.h"

namespace kv::fleet {

struct SglangOptions {
  double cache_threshold = 0.5;             // --cache-threshold, in [0, 1]
  int balance_abs_threshold = 32;           // --balance-abs-threshold
  double balance_rel_threshold = 1.0001;    // --balance-rel-threshold
  std::int64_t max_tree_size = 16'777'216;  // --max-tree-size (blocks here, characters there)
};

class SglangRouter final : public Router {
 public:
  SglangRouter(int num_replicas, const SglangOptions& options);
  std::string_view name() const override { return "sglang"; }
  bool reads_block_hashes() const override { return true; }
  bool reads_load_reports() const override { return false; }  // its own request counts instead

  bool imbalanced() const;
  std::int64_t tree_size(int replica) const { return trees_[static_cast<std::size_t>(replica)].size(); }

 protected:
  int choose(const RouteRequest& request) override;
  void on_routed(const RouteRequest& request, int replica) override;

 private:
  int least_loaded() const;
  int smallest_tree() const;

  SglangOptions options_;
  // Per replica the routed blocks; a request's blocks are touched leaf first, so a parent is
  // always more recent than its children and the least recent block is a leaf.
  std::vector<LruBlockSet> trees_;
};

}  // namespace kv::fleet
