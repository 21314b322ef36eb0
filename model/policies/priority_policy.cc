#include "model/policies/priority_policy.h"

#include <set>
#include <utility>
#include <vector>

#include "model/policies/keyed_policy.h"

namespace kv {
namespace {

class PriorityPolicy final : public KeyedPolicy {
 public:
  explicit PriorityPolicy(std::span<Block> blocks)
      : KeyedPolicy(blocks), priority_(blocks.size(), BlockRetention::kDefaultPriority), expiry_(blocks.size(), 0) {}
  const char* name() const override { return "priority"; }

 private:
  void before_release() override { ++releases_; }
  std::int64_t rank_on_release(const Block& b, const BlockRetention& r) override {
    const std::size_t i = index(&b);
    priority_[i] = r.priority;
    expiry_[i] = r.duration > 0 ? releases_ + r.duration : 0;
    return r.priority;  // on_key_added lists its expiry
  }
  void after_release() override {
    while (!expiring_.empty() && expiring_.begin()->first <= releases_) {
      const BlockId id = expiring_.begin()->second;
      expiring_.erase(expiring_.begin());
      rekey(id, BlockRetention::kDefaultPriority, /*new_stamp=*/false);
    }
  }
  void on_key_erased(const Key& k) override {
    const std::size_t i = static_cast<std::size_t>(k.id);
    if (expiry_[i] != 0) expiring_.erase({expiry_[i], k.id});
  }
  void on_key_added(const Key& k) override {
    const std::size_t i = static_cast<std::size_t>(k.id);
    if (expiry_[i] != 0 && expiry_[i] > releases_) expiring_.emplace(expiry_[i], k.id);
  }
  std::int64_t effective(std::size_t i) const {
    return expiry_[i] == 0 || releases_ < expiry_[i] ? priority_[i] : BlockRetention::kDefaultPriority;
  }
  bool check_policy(std::string* why) const override;

  std::vector<int> priority_;                            // by block id: the retention of its last release
  std::vector<std::int64_t> expiry_;                     // by block id: release count it falls back at; 0: never
  std::set<std::pair<std::int64_t, BlockId>> expiring_;  // keyed blocks with an expiry ahead
  std::int64_t releases_ = 0;                            // the release clock: on_freed calls so far
};

bool PriorityPolicy::check_policy(std::string* why) const {
  std::size_t pending = 0;
  for (const Key& k : keys()) {
    const auto i = static_cast<std::size_t>(k.id);
    if (k.rank != effective(i)) {
      *why = "priority: free block " + std::to_string(k.id) + " is ranked " + std::to_string(k.rank) +
             ", its effective priority is " + std::to_string(effective(i));
      return false;
    }
    if (expiry_[i] != 0 && expiry_[i] > releases_) {
      ++pending;
      if (expiring_.count({expiry_[i], k.id}) == 0) {
        *why = "priority: block " + std::to_string(k.id) + "'s expiry is not pending";
        return false;
      }
    }
  }
  if (pending != expiring_.size()) {
    *why = "priority: " + std::to_string(expiring_.size()) + " pending expiries for " + std::to_string(pending) +
           " blocks";
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<EvictionPolicy> make_priority_policy(std::span<Block> blocks) {
  return std::make_unique<PriorityPolicy>(blocks);
}

}  // namespace kv
