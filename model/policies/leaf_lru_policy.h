// LeafLruPolicy ("leaf-lru"): LRU over the leaves of the prefix tree, as radix-tree caches
// (SGLang's RadixCache) evict. Each cached block remembers its parent: the block before it in
// the table of the request that cached it. A free cached block with at least one cached child
// is an inner block; it is never evicted while some free cached leaf exists, so a chain is
// eaten from its deepest block up. Among leaves (and, when only inner blocks are free, among
// those) the least recently released goes first. When a block loses its hash its children
// become orphans (unreachable by a prefix lookup, like a cut subtree); they stay leaves of
// nothing and are evicted in LRU order. Unhashed free blocks go first (KeyedPolicy).
// vLLM frees a request's blocks tail first, so plain LRU already tends to evict children
// first; leaf-lru makes it a guarantee, also across requests that share a prefix.
// Invariants (check_policy):
//   1. children(b) == the number of cached blocks whose live parent link names b (a link is
//      live while the parent keeps the content it had when the child was cached).
//   2. A keyed block's rank is 1 exactly when children(b) > 0.
#pragma once

#include <memory>
#include <span>

#include "model/policies/eviction_policy.h"

namespace kv {

std::unique_ptr<EvictionPolicy> make_leaf_lru_policy(std::span<Block> blocks);

}  // namespace kv
