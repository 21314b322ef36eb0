#include "fleet/dynamo_router.h"

#include <algorithm>
#include <cmath>

#include "model/util/check.h"

namespace kv::fleet {

DynamoRouter::DynamoRouter(int num_replicas, const DynamoOptions& options, std::uint64_t seed)
    : Router(num_replicas), options_(options), random_(seed), routed_(static_cast<std::size_t>(num_replicas)) {
  KV_CHECK(options.overlap_score_weight >= 0.0 && options.temperature >= 0.0 && options.ttl_ns > 0,
           "overlap_score_weight=" << options.overlap_score_weight << " temperature=" << options.temperature
                                   << " ttl_ns=" << options.ttl_ns);
}

int DynamoRouter::overlap_blocks(int replica, const RouteRequest& request) const {
  if (options_.kv_events) return view().cache().matched_blocks(replica, request.block_hashes);
  return routed_[static_cast<std::size_t>(replica)].matched_blocks(request.block_hashes);
}

std::int64_t DynamoRouter::tree_size(int replica) const {
  if (options_.kv_events) return view().cache().distinct_blocks(replica);
  return routed_[static_cast<std::size_t>(replica)].size();
}

std::vector<double> DynamoRouter::costs(const RouteRequest& request) const {
  std::vector<double> cost(static_cast<std::size_t>(num_replicas()));
  const double block = request.block_size;
  for (int r = 0; r < num_replicas(); ++r) {
    const double cached_tokens = static_cast<double>(overlap_blocks(r, request)) * block;
    const double prefill_blocks = std::max(0.0, request.prompt_tokens - cached_tokens) / block;
    const double decode_blocks = static_cast<double>(view().replica(r).active_blocks + request.blocks());
    cost[static_cast<std::size_t>(r)] = options_.overlap_score_weight * prefill_blocks + decode_blocks;
  }
  return cost;
}

int DynamoRouter::choose(const RouteRequest& request) {
  if (!options_.kv_events) {
    for (TtlBlockIndex& index : routed_) index.expire(request.now_ns);
  }
  const std::vector<double> cost = costs(request);
  return options_.temperature == 0.0 ? lowest_cost(cost) : sample_softmax(cost);
}

int DynamoRouter::lowest_cost(const std::vector<double>& cost) {
  const double min_cost = *std::min_element(cost.begin(), cost.end());
  std::vector<int> tied;
  for (int r = 0; r < num_replicas(); ++r) {
    if (cost[static_cast<std::size_t>(r)] == min_cost) tied.push_back(r);
  }
  if (tied.size() == 1) return tied[0];
  int smallest = tied[0];
  bool all_equal = true;
  for (int r : tied) {
    all_equal = all_equal && tree_size(r) == tree_size(tied[0]);
    if (tree_size(r) < tree_size(smallest)) smallest = r;
  }
  if (!all_equal) return smallest;
  return tied[static_cast<std::size_t>(random_.index(static_cast<int>(tied.size())))];
}

int DynamoRouter::sample_softmax(const std::vector<double>& cost) {
  const auto [lo, hi] = std::minmax_element(cost.begin(), cost.end());
  const double min_cost = *lo;
  const double span = *hi - *lo;
  std::vector<double> weight(cost.size(), 1.0);
  if (span > 0.0) {
    for (std::size_t r = 0; r < cost.size(); ++r) {
      weight[r] = std::exp(-(cost[r] - min_cost) / (span * options_.temperature));
    }
  }
  double total = 0.0;
  for (double w : weight) total += w;
  const double u = random_.unit();
  double cumulative = 0.0;
  for (std::size_t r = 0; r < weight.size(); ++r) {
    cumulative += weight[r] / total;
    if (u <= cumulative) return static_cast<int>(r);
  }
  return num_replicas() - 1;
}

void DynamoRouter::on_routed(const RouteRequest& request, int replica) {
  if (options_.kv_events) return;
  routed_[static_cast<std::size_t>(replica)].insert(request.block_hashes, request.now_ns + options_.ttl_ns);
}

}  // namespace kv::fleet
