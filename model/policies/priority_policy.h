// PriorityPolicy ("priority"): retention priorities, as TensorRT-LLM's KvCacheRetentionConfig.
// A request carries a BlockRetention (priority 0..100, default 35; a duration). When a request
// releases its blocks, each block that reaches ref_cnt 0 takes that request's retention: it is
// kept at `priority` for the next `duration` releases (free calls of a request's blocks, one
// per KV-cache group, and of blocks that fell out of a window: the core's clock; TensorRT-LLM counts seconds), then
// falls back to the default 35; duration 0 keeps it until eviction. Victims: the lowest effective priority first, and
// among equal priorities the least recently released. The last request to release a shared block sets its retention.
// Unhashed free blocks go first (KeyedPolicy).
// Invariants (check_policy):
//   1. A keyed block's rank is its effective priority: its retention's priority while the
//      release clock is below its expiry (or it has none), the default after.
//   2. expiring_ lists exactly the keyed blocks whose priority has an expiry still ahead.
#pragma once

#include <memory>
#include <span>

#include "model/policies/eviction_policy.h"

namespace kv {

std::unique_ptr<EvictionPolicy> make_priority_policy(std::span<Block> blocks);

}  // namespace kv
