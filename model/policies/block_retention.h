// BlockRetention: how long a request asks the cache to keep its blocks, as TensorRT-LLM's
// KvCacheRetentionConfig reduced to one token range (the whole request). Only the `priority`
// eviction policy reads it (model/policies/priority_policy.h); every other policy ignores it.
// Invariants:
//   1. 0 <= priority <= 100 (TensorRT-LLM's range); lower is evicted first; the default is 35.
//   2. duration >= 0 counts releases (free calls: one per KV-cache group of a finished or
//      preempted request, as the pool sees them) after which the priority falls back to the default; 0 means it never
//      does.
#pragma once

#include <cstdint>

namespace kv {

struct BlockRetention {
  static constexpr int kMinPriority = 0;
  static constexpr int kMaxPriority = 100;
  static constexpr int kDefaultPriority = 35;
  int priority = kDefaultPriority;
  std::int64_t duration = 0;
  bool operator==(const BlockRetention&) const = default;
};

}  // namespace kv
