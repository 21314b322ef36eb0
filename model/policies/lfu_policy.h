// LfuPolicy ("lfu"): least frequently used with dynamic ageing (LFU-DA, Arlitt et al. 2000).
// Each cached block counts the uses of its current content: 1 when it is allocated, +1 for
// every prefix-cache hit that takes it (free or in use). A released block is keyed
// rank = L + uses, where L (the ageing term, starting at 0) is the rank of the last keyed block
// evicted; the smallest rank goes first, ties to the least recently released. Because L rises
// with every eviction, a block that was popular long ago loses to a block used once recently
// as soon as L has grown past its old count: counts age without being rescanned. Unhashed free
// blocks go first (KeyedPolicy).
// Invariants (check_policy):
//   1. L never decreases, and every keyed block's rank is >= L (the victim is always a
//      smallest rank, and a block released later gets at least L + 1).
//   2. uses >= 1 for every block that holds a hash.
#pragma once

#include <memory>
#include <span>

#include "model/policies/eviction_policy.h"

namespace kv {

std::unique_ptr<EvictionPolicy> make_lfu_policy(std::span<Block> blocks);

}  // namespace kv
