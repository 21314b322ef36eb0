// TtlBlockIndex: Dynamo's approximate KV index (--no-kv-events) for one replica: the block
// hashes the router sent there, each until a fixed time after it was last sent. insert() sets
// (or pushes back) a hash's expiry; expire(now_ns) drops every hash whose expiry is <= now_ns.
// Expiries queue in a multimap with lazy deletion: a queued entry is stale when the hash's
// current expiry differs.
//
// Invariants (check_invariants):
//   1. every hash in expiry_ has a queued entry with its current expiry;
//   2. no hash is held past an expire() call at or after its expiry.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>

#include "model/block_hash.h"

namespace kv::fleet {

class TtlBlockIndex {
 public:
  void insert(std::span<const BlockHash> hashes, std::int64_t expiry_ns);
  void expire(std::int64_t now_ns);
  int matched_blocks(std::span<const BlockHash> hashes) const;
  std::int64_t size() const { return static_cast<std::int64_t>(expiry_.size()); }

  void check_invariants() const;

 private:
  std::unordered_map<BlockHash, std::int64_t, BlockHashHasher> expiry_;  // hash -> when it expires
  std::multimap<std::int64_t, BlockHash> queue_;                         // expiry -> hash, stale entries included
};

}  // namespace kv::fleet
