// SlruPolicy ("slru"): segmented LRU (Karedla et al. 1994), the scan-resistant idea of 2Q.
// A cached free block sits in one of two LRU segments: probation (its content was used by one
// request only) or protected (a prefix-cache hit took it at least once since it was
// allocated). Victims come from probation first, least recently released first, then from
// protected. The protected segment holds at most 80% of the usable blocks
// (floor(0.8 * (num_blocks - 1)), at least 1); releasing a block into a full protected
// segment demotes the protected block released longest ago to probation's most recent end. A
// long scan of one-use prefixes therefore only cycles probation and never flushes blocks that
// were hit. Unhashed free blocks go first (KeyedPolicy).
// Invariants (check_policy):
//   1. A keyed block's rank is 1 (protected) only if it was hit since its allocation.
//   2. protected_size() equals the number of rank-1 keys and never exceeds the cap after a
//      release.
#pragma once

#include <memory>
#include <span>

#include "model/policies/eviction_policy.h"

namespace kv {

std::unique_ptr<EvictionPolicy> make_slru_policy(std::span<Block> blocks);

}  // namespace kv
