// KvIndexer: what a router knows of each replica's prefix cache, built only from the KV events
// it was fed (model/kv_events.h). Per replica a multiset of block hashes: BlockStored adds one
// count per listed hash, BlockRemoved takes one away (never below zero: a removal of a hash the
// router never saw stored is dropped), AllBlocksCleared empties the replica. A replica "holds" a
// hash while its count is positive. The index is as stale as the events: it never looks at a
// replica's real cache.
//
// Invariants (check_invariants):
//   1. every stored count is positive (a hash whose count reaches zero is erased);
//   2. total_blocks(r) is the sum of replica r's counts.
// Lookups only: no decision iterates over the hash tables. Each replica's table is Abseil's
// open-addressing map: a router fed by 16 engines applies millions of events (an insertion or an
// erasure per block stored or evicted), which a node-based map paid an allocation for each.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <cstdint>
#include <span>
#include <vector>

#include "model/block_hash.h"
#include "model/kv_events.h"

namespace kv::fleet {

class KvIndexer {
 public:
  explicit KvIndexer(int num_replicas);

  int num_replicas() const { return static_cast<int>(counts_.size()); }
  void apply(int replica, const KvEvent& event);
  void store(int replica, std::span<const BlockHash> hashes);
  void remove(int replica, std::span<const BlockHash> hashes);
  void clear(int replica);

  // The length of the longest prefix of `hashes` that `replica` holds (vLLM's prefix rule: the
  // first miss ends the match, later hits do not count).
  int matched_blocks(int replica, std::span<const BlockHash> hashes) const;
  bool holds(int replica, const BlockHash& hash) const;
  // Distinct hashes the replica holds (the size of its part of the prefix tree).
  std::int64_t distinct_blocks(int replica) const;
  // Stored blocks counted with multiplicity.
  std::int64_t total_blocks(int replica) const;

  void check_invariants() const;

 private:
  using Counts = absl::flat_hash_map<BlockHash, int, BlockHashHasher>;
  const Counts& at(int replica) const;
  Counts& at(int replica);

  std::vector<Counts> counts_;        // per replica: hash -> times stored minus times removed
  std::vector<std::int64_t> totals_;  // per replica: the sum of its counts
};

}  // namespace kv::fleet
