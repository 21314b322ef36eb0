#include "fleet/kv_indexer.h"

#include <type_traits>

#include "model/util/check.h"

namespace kv::fleet {

KvIndexer::KvIndexer(int num_replicas)
    : counts_(static_cast<std::size_t>(num_replicas)), totals_(static_cast<std::size_t>(num_replicas), 0) {
  KV_CHECK(num_replicas > 0, "num_replicas=" << num_replicas);
}

const KvIndexer::Counts& KvIndexer::at(int replica) const {
  KV_CHECK(replica >= 0 && replica < num_replicas(), "replica=" << replica << " of " << num_replicas());
  return counts_[static_cast<std::size_t>(replica)];
}

KvIndexer::Counts& KvIndexer::at(int replica) {
  return const_cast<Counts&>(static_cast<const KvIndexer&>(*this).at(replica));
}

void KvIndexer::apply(int replica, const KvEvent& event) {
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, BlockStored>) {
          store(replica, e.block_hashes);
        } else if constexpr (std::is_same_v<E, BlockRemoved>) {
          remove(replica, e.block_hashes);
        } else {
          clear(replica);
        }
      },
      event);
}

void KvIndexer::store(int replica, std::span<const BlockHash> hashes) {
  Counts& counts = at(replica);
  for (const BlockHash& h : hashes) ++counts[h];
  totals_[static_cast<std::size_t>(replica)] += static_cast<std::int64_t>(hashes.size());
}

void KvIndexer::remove(int replica, std::span<const BlockHash> hashes) {
  Counts& counts = at(replica);
  for (const BlockHash& h : hashes) {
    auto it = counts.find(h);
    if (it == counts.end()) continue;  // never seen stored: nothing to take away
    if (--it->second == 0) counts.erase(it);
    --totals_[static_cast<std::size_t>(replica)];
  }
}

void KvIndexer::clear(int replica) {
  at(replica).clear();
  totals_[static_cast<std::size_t>(replica)] = 0;
}

int KvIndexer::matched_blocks(int replica, std::span<const BlockHash> hashes) const {
  const Counts& counts = at(replica);
  int matched = 0;
  for (const BlockHash& h : hashes) {
    if (counts.find(h) == counts.end()) break;
    ++matched;
  }
  return matched;
}

bool KvIndexer::holds(int replica, const BlockHash& hash) const { return at(replica).contains(hash); }

std::int64_t KvIndexer::distinct_blocks(int replica) const { return static_cast<std::int64_t>(at(replica).size()); }

std::int64_t KvIndexer::total_blocks(int replica) const {
  at(replica);
  return totals_[static_cast<std::size_t>(replica)];
}

void KvIndexer::check_invariants() const {
  for (int r = 0; r < num_replicas(); ++r) {
    std::int64_t sum = 0;
    for (const auto& [hash, count] : at(r)) {
      KV_CHECK(count > 0, "replica " << r << " holds " << hash.hex() << " with count " << count);
      sum += count;
    }
    KV_CHECK(sum == total_blocks(r), "replica " << r << ": counts sum to " << sum << ", total " << total_blocks(r));
  }
}

}  // namespace kv::fleet
