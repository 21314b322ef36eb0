#include "properties/model_policy.h"

#include <algorithm>
#include <tuple>

namespace kv::props {

ModelPolicy::ModelPolicy(EvictionPolicyKind kind, int num_blocks)
    : kind_(kind), f_(static_cast<std::size_t>(num_blocks)) {
  for (BlockId b = 1; b < num_blocks; ++b) {
    f_[static_cast<std::size_t>(b)].free = true;
    f_[static_cast<std::size_t>(b)].unhashed_since = ++clock_;
  }
}

void ModelPolicy::popped(BlockId b, bool had_hash) {
  Facts& x = f_[static_cast<std::size_t>(b)];
  if (kind_ == EvictionPolicyKind::kLfu && had_hash) age_ = std::max(age_, rank(b));
  x.free = false;
  x.uses = 1;
  x.was_hit = false;
}

void ModelPolicy::hit(BlockId b, bool was_free) {
  Facts& x = f_[static_cast<std::size_t>(b)];
  if (was_free) x.free = false;
  ++x.uses;
  x.was_hit = true;
}

void ModelPolicy::released(const std::vector<BlockId>& blocks, const std::vector<bool>& hashed,
                           const BlockRetention& r) {
  ++releases_;
  for (BlockId b : blocks) {
    Facts& x = f_[static_cast<std::size_t>(b)];
    x.free = true;
    ++clock_;
    if (!hashed[static_cast<std::size_t>(b)]) {
      x.unhashed_since = clock_;
      continue;
    }
    x.stamp = clock_;
    x.priority = r.priority;
    x.expiry = r.duration > 0 ? releases_ + r.duration : 0;
    x.rank_at_release = kind_ == EvictionPolicyKind::kLfu    ? age_ + std::max<std::int64_t>(x.uses, 1)
                        : kind_ == EvictionPolicyKind::kSlru ? (x.was_hit ? 1 : 0)
                                                             : 0;
  }
  if (kind_ == EvictionPolicyKind::kSlru) demote_protected(hashed);
}

// SLRU: while more free cached blocks are protected than 80% of the usable blocks, the one
// released longest ago moves to probation as if released now.
void ModelPolicy::demote_protected(const std::vector<bool>& hashed) {
  const std::size_t cap = std::max<std::size_t>(1, (f_.size() - 1) * 8 / 10);
  for (;;) {
    std::vector<BlockId> prot;
    for (std::size_t b = 1; b < f_.size(); ++b) {
      if (f_[b].free && hashed[b] && f_[b].rank_at_release == 1) prot.push_back(static_cast<BlockId>(b));
    }
    if (prot.size() <= cap) return;
    const BlockId oldest = *std::min_element(prot.begin(), prot.end(), [&](BlockId a, BlockId c) {
      return f_[static_cast<std::size_t>(a)].stamp < f_[static_cast<std::size_t>(c)].stamp;
    });
    f_[static_cast<std::size_t>(oldest)].rank_at_release = 0;
    f_[static_cast<std::size_t>(oldest)].stamp = ++clock_;
  }
}

void ModelPolicy::cached(BlockId parent, const std::vector<BlockId>& chain) {
  for (BlockId b : chain) {
    Facts& x = f_[static_cast<std::size_t>(b)];
    x.parent = parent;
    x.parent_version = parent == kNoBlock ? 0 : f_[static_cast<std::size_t>(parent)].version;
    parent = b;
  }
}

void ModelPolicy::uncached(BlockId b) {
  Facts& x = f_[static_cast<std::size_t>(b)];
  if (x.free) x.unhashed_since = ++clock_;
  x.parent = kNoBlock;
  ++x.version;
}

bool ModelPolicy::has_live_child(BlockId b) const {
  for (const Facts& c : f_) {
    if (c.parent == b && c.parent_version == f_[static_cast<std::size_t>(b)].version) return true;
  }
  return false;
}

std::int64_t ModelPolicy::rank(BlockId b) const {
  const Facts& x = f_[static_cast<std::size_t>(b)];
  switch (kind_) {
    case EvictionPolicyKind::kLeafLru:
      return has_live_child(b) ? 1 : 0;
    case EvictionPolicyKind::kPriority:
      return x.expiry == 0 || releases_ < x.expiry ? x.priority : BlockRetention::kDefaultPriority;
    default:
      return x.rank_at_release;
  }
}

std::vector<BlockId> ModelPolicy::order(const std::vector<bool>& hashed) const {
  std::vector<std::pair<std::int64_t, BlockId>> unhashed;
  std::vector<std::tuple<std::int64_t, std::int64_t, BlockId>> keyed;
  for (std::size_t i = 1; i < f_.size(); ++i) {
    const auto b = static_cast<BlockId>(i);
    if (!f_[i].free) continue;
    if (hashed[i]) {
      keyed.emplace_back(rank(b), f_[i].stamp, b);
    } else {
      unhashed.emplace_back(f_[i].unhashed_since, b);
    }
  }
  std::sort(unhashed.begin(), unhashed.end());
  std::sort(keyed.begin(), keyed.end());
  std::vector<BlockId> out;
  for (const auto& u : unhashed) out.push_back(u.second);
  for (const auto& k : keyed) out.push_back(std::get<2>(k));
  return out;
}

}  // namespace kv::props
