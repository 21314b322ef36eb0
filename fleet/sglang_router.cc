#include "fleet/sglang_router.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv::fleet {

SglangRouter::SglangRouter(int num_replicas, const SglangOptions& options)
    : Router(num_replicas),
      options_(options),
      trees_(static_cast<std::size_t>(num_replicas), LruBlockSet(options.max_tree_size)) {
  KV_CHECK(options.cache_threshold >= 0.0 && options.cache_threshold <= 1.0 && options.balance_abs_threshold >= 0 &&
               options.balance_rel_threshold >= 0.0,
           "cache_threshold=" << options.cache_threshold << " balance_abs_threshold=" << options.balance_abs_threshold
                              << " balance_rel_threshold=" << options.balance_rel_threshold);
}

bool SglangRouter::imbalanced() const {
  int lo = view().replica(0).active_requests, hi = lo;
  for (int r = 1; r < num_replicas(); ++r) {
    lo = std::min(lo, view().replica(r).active_requests);
    hi = std::max(hi, view().replica(r).active_requests);
  }
  return hi - lo > options_.balance_abs_threshold &&
         static_cast<double>(hi) > static_cast<double>(lo) * options_.balance_rel_threshold;
}

int SglangRouter::least_loaded() const {
  int best = 0;
  for (int r = 1; r < num_replicas(); ++r) {
    if (view().replica(r).active_requests < view().replica(best).active_requests) best = r;
  }
  return best;
}

int SglangRouter::smallest_tree() const {
  int best = 0;
  for (int r = 1; r < num_replicas(); ++r) {
    if (tree_size(r) < tree_size(best)) best = r;
  }
  return best;
}

int SglangRouter::choose(const RouteRequest& request) {
  if (imbalanced()) return least_loaded();
  int best = 0;
  int best_match = trees_[0].matched_blocks(request.block_hashes);
  for (int r = 1; r < num_replicas(); ++r) {
    const int match = trees_[static_cast<std::size_t>(r)].matched_blocks(request.block_hashes);
    if (match > best_match) {
      best = r;
      best_match = match;
    }
  }
  const double blocks = static_cast<double>(request.block_hashes.size());
  const double match_rate = blocks == 0.0 ? 0.0 : best_match / blocks;
  return match_rate > options_.cache_threshold ? best : smallest_tree();
}

void SglangRouter::on_routed(const RouteRequest& request, int replica) {
  LruBlockSet& tree = trees_[static_cast<std::size_t>(replica)];
  for (auto it = request.block_hashes.rbegin(); it != request.block_hashes.rend(); ++it) tree.touch(*it);
}

}  // namespace kv::fleet
