#include "fleet/llmd_router.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv::fleet {

LlmdRouter::LlmdRouter(int num_replicas, const LlmdOptions& options, std::uint64_t seed)
    : Router(num_replicas), options_(options), random_(seed) {
  KV_CHECK(options.prefix_weight >= 0.0 && options.kv_weight >= 0.0 && options.queue_weight >= 0.0 &&
               options.max_prefix_blocks > 0 && options.lru_capacity > 0,
           "prefix_weight=" << options.prefix_weight << " kv_weight=" << options.kv_weight
                            << " queue_weight=" << options.queue_weight);
  if (!options.precise) routed_.assign(static_cast<std::size_t>(num_replicas), LruBlockSet(options.lru_capacity));
}

std::span<const BlockHash> LlmdRouter::matched_span(const RouteRequest& request) const {
  std::span<const BlockHash> all(request.block_hashes);
  return all.first(std::min(all.size(), static_cast<std::size_t>(options_.max_prefix_blocks)));
}

std::vector<double> LlmdRouter::prefix_scores(std::span<const BlockHash> hashes) const {
  std::vector<double> score(static_cast<std::size_t>(num_replicas()), 0.0);
  std::vector<int> matched(score.size(), 0);
  for (int r = 0; r < num_replicas(); ++r) {
    matched[static_cast<std::size_t>(r)] = options_.precise
                                               ? view().cache().matched_blocks(r, hashes)
                                               : routed_[static_cast<std::size_t>(r)].matched_blocks(hashes);
  }
  if (!options_.precise) {
    for (std::size_t r = 0; r < score.size(); ++r) {
      score[r] = hashes.empty() ? 0.0 : static_cast<double>(matched[r]) / static_cast<double>(hashes.size());
    }
    return score;
  }
  int lo = 0, hi = 0;  // over the replicas with a match only
  for (int m : matched) {
    if (m == 0) continue;
    lo = lo == 0 ? m : std::min(lo, m);
    hi = std::max(hi, m);
  }
  for (std::size_t r = 0; r < score.size(); ++r) {
    if (matched[r] == 0) continue;
    score[r] = lo == hi ? 1.0 : static_cast<double>(matched[r] - lo) / static_cast<double>(hi - lo);
  }
  return score;
}

std::vector<double> LlmdRouter::queue_scores() const {
  int lo = view().replica(0).load.waiting, hi = lo;
  for (int r = 1; r < num_replicas(); ++r) {
    lo = std::min(lo, view().replica(r).load.waiting);
    hi = std::max(hi, view().replica(r).load.waiting);
  }
  std::vector<double> score(static_cast<std::size_t>(num_replicas()), 1.0);
  if (lo == hi) return score;
  for (int r = 0; r < num_replicas(); ++r) {
    score[static_cast<std::size_t>(r)] = static_cast<double>(hi - view().replica(r).load.waiting) / (hi - lo);
  }
  return score;
}

std::vector<double> LlmdRouter::scores(const RouteRequest& request) const {
  const std::vector<double> prefix = prefix_scores(matched_span(request));
  const std::vector<double> queue = queue_scores();
  std::vector<double> total(prefix.size());
  for (int r = 0; r < num_replicas(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    const double kv = 1.0 - view().replica(r).load.kv_usage;
    total[i] = options_.prefix_weight * prefix[i] + options_.kv_weight * kv + options_.queue_weight * queue[i];
  }
  return total;
}

int LlmdRouter::choose(const RouteRequest& request) {
  const std::vector<double> total = scores(request);
  const double best = *std::max_element(total.begin(), total.end());
  std::vector<int> tied;
  for (int r = 0; r < num_replicas(); ++r) {
    if (total[static_cast<std::size_t>(r)] == best) tied.push_back(r);
  }
  if (tied.size() == 1) return tied[0];
  return tied[static_cast<std::size_t>(random_.index(static_cast<int>(tied.size())))];
}

void LlmdRouter::on_routed(const RouteRequest& request, int replica) {
  if (options_.precise) return;
  for (const BlockHash& h : matched_span(request)) routed_[static_cast<std::size_t>(replica)].touch(h);
}

}  // namespace kv::fleet
