// OpsCache: the KV-cache manager an ops script drives (docs/semantics.md §6), one of two:
// the single full-attention KvCacheManager (a `config` line without `layers=`), or the
// HybridKvCacheManager over the KV-cache groups vLLM builds from `layers=` (§6.5). The
// interpreter speaks only this interface, so every command means the same on both.
// Invariants:
//   1. Results are per group, in group order: one list for the single-group manager, so its
//      output is exactly that of the manager itself.
//   2. A hit returned by lookup() is valid for the next allocate() of the same request only.
//   3. stats() counts as KvCacheManager does (§5.7): lookups, queried and hit tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/block_pool.h"
#include "model/hybrid_kv_cache_manager.h"
#include "model/kv_cache_manager.h"
#include "model/request.h"

namespace kv::ops {

// Block ids per KV-cache group (0 = the null block where a windowed group skipped).
using GroupBlocks = std::vector<std::vector<BlockId>>;

struct OpsHit {
  GroupBlocks blocks;
  std::int64_t num_tokens = 0;
};

class OpsCache {
 public:
  virtual ~OpsCache() = default;
  virtual std::size_t num_groups() const = 0;
  virtual OpsHit lookup(const Request& request) = 0;
  // The newly allocated blocks per group, or nullopt when the pool is short.
  virtual std::optional<GroupBlocks> allocate(const Request& request, std::int64_t num_new_tokens,
                                              const OpsHit& hit, std::int64_t lookahead,
                                              bool full_sequence_must_fit) = 0;
  virtual void free(const Request& request) = 0;
  // The request's block table per group (empty lists when it holds none).
  virtual GroupBlocks table(const RequestId& id) const = 0;
  virtual const BlockPool& pool() const = 0;
  virtual const PrefixCacheStats& stats() const = 0;
  virtual bool reset_prefix_cache() = 0;
  virtual bool check_invariants(std::string* why) const = 0;
  // The single-group manager, or null (tests reach past the interpreter through it).
  virtual const KvCacheManager* single_group_manager() const { return nullptr; }
};

std::unique_ptr<OpsCache> make_single_group_cache(const KvCacheConfig& config);
std::unique_ptr<OpsCache> make_hybrid_cache(const HybridKvCacheConfig& config);

}  // namespace kv::ops
