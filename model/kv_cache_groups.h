// KV-cache groups: how vLLM turns a model's attention layers into groups that share one block
// pool (kv_cache_utils.py get_kv_cache_groups), which groups are looked up together, and how
// many blocks a memory budget buys.
// A group is a set of layers with one spec; every layer of a group sees the same block table.
// All groups draw block ids from one pool: a block id names the same slot in every tensor.
// Invariants (of what get_kv_cache_groups returns):
//   1. Every layer is in exactly one group; group ids follow the order of each spec's first
//      layer, then the group's index within its spec.
//   2. With several groups every group's page_size_bytes is equal (pages are unified first).
//   3. lookup_sets() lists every group id once; a set holds the groups of one spec, sets are
//      ordered by their first group id, full attention first (stable).
// Pure functions of their inputs; bad input is a Status, never an abort.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/kv_cache_spec.h"
#include "model/util/status.h"

namespace kv {

// One attention layer of the model, in model order.
struct LayerKvCacheSpec {
  std::string name;
  KvCacheSpec spec;
};

// One KV-cache group (vLLM KVCacheGroupSpec): the layers that share a block table.
struct KvCacheGroupSpec {
  KvCacheSpec spec;
  std::vector<std::string> layer_names;
  // Bytes of one block summed over the group's layers (differs from layers * page only for
  // one group of one attention type whose layers have different sizes).
  std::int64_t group_page_size_bytes = 0;
};

// vLLM's three cases: (1) every layer has the same spec -> one group; (2) one kind (full
// attention and R-SWA count as one) with the same window/chunk/speculative blocks and block
// size -> one group (refused when it would mix full attention and R-SWA); (3) otherwise pages
// are unified (a smaller attention page multiplies its block size, which must divide evenly;
// a smaller Mamba page is padded) and layers are bucketed by spec; group_size is the smallest bucket's size (the
// largest's when it is below 1.5x the smallest), and a bucket of n layers makes ceil(n / group_size) groups, group i
// taking the bucket's layers i, i+g, i+2g, ...
StatusOr<std::vector<KvCacheGroupSpec>> get_kv_cache_groups(std::span<const LayerKvCacheSpec> layers);

// vLLM verify_and_split_kv_cache_groups: ids of groups with equal specs, full attention first.
std::vector<std::vector<int>> lookup_sets(std::span<const KvCacheGroupSpec> groups);

// How one pool of blocks is laid out in memory for a budget (get_kv_cache_config_from_groups).
struct KvCachePoolSize {
  std::int64_t page_size_bytes = 0;  // one block of one layer
  int layers_per_group = 0;          // the largest group's layers = tensors allocated
  int num_blocks = 0;                // including the null block
};

// One group: budget / group_page_size_bytes. Several: floor(floor(budget / page) /
// layers_per_group). A budget too small for two blocks is a Status.
StatusOr<KvCachePoolSize> size_pool_for_budget(std::span<const KvCacheGroupSpec> groups,
                                               std::int64_t memory_budget_bytes);

// vLLM resolve_kv_cache_block_sizes. The cache block size is the smallest group block size;
// the scheduler's block size is the lcm of the groups' block sizes. The hash block size is
// the one group's block size; with several, the scheduler's block size when caching is off
// or a Mamba group's block size is not the cache block size, else the gcd of the block sizes.
int cache_block_size(std::span<const KvCacheGroupSpec> groups);
int scheduler_block_size(std::span<const KvCacheGroupSpec> groups);
int hash_block_size(std::span<const KvCacheGroupSpec> groups, bool enable_caching = true);

}  // namespace kv
