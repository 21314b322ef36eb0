// make_router: a router by name, with its parameters as name=value text (what a command line or
// a config file gives), for a fleet of num_replicas replicas, its randomness seeded by `seed`.
// Bad input -- an unknown router or parameter, a value that is not a number or lies outside its
// range (negative weights, a cache threshold outside [0, 1], ...) -- is a Status naming the
// router and the parameter. Names and parameters (docs/fleet.md):
//   round-robin, random, least-requests, least-kv, session   no parameters
//   dynamo          overlap_score_weight (>= 0, 1), router_temperature (>= 0, 0),
//                   kv_events (true|false, true), ttl_s (> 0, 120)
//   llm-d-precise   prefix_weight (2), kv_weight (1), queue_weight (1) (each >= 0),
//                   max_prefix_blocks (> 0, 256)
//   llm-d-approx    prefix_weight (3), kv_weight (2), queue_weight (2), max_prefix_blocks (256),
//                   lru_capacity (> 0, 31250)
//   sglang          cache_threshold ([0, 1], 0.5), balance_abs_threshold (>= 0, 32),
//                   balance_rel_threshold (>= 0, 1.0001), max_tree_size (> 0, 16777216)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/router.h"
#include "model/util/status.h"

namespace kv::fleet {

using RouterParams = std::map<std::string, std::string>;  // parameter name -> value text

std::vector<std::string_view> router_names();

StatusOr<std::unique_ptr<Router>> make_router(std::string_view name, const RouterParams& params, int num_replicas,
                                              std::uint64_t seed);

}  // namespace kv::fleet
