#include "model/policies/lfu_policy.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "model/policies/keyed_policy.h"

namespace kv {
namespace {

class LfuPolicy final : public KeyedPolicy {
 public:
  explicit LfuPolicy(std::span<Block> blocks) : KeyedPolicy(blocks), uses_(blocks.size(), 0) {}
  const char* name() const override { return "lfu"; }

  void on_hit(Block* b) override {
    std::int64_t& u = uses_[index(b)];
    if (u < std::numeric_limits<std::int32_t>::max()) ++u;
  }

 private:
  std::int64_t rank_on_release(const Block& b, const BlockRetention&) override {
    return age_ + std::max<std::int64_t>(uses_[index(&b)], 1);
  }
  void on_leave(Block& b, const Key* old_key, bool popped) override {
    if (!popped) return;  // a hit: on_hit counts it, the next release re-keys it
    if (old_key != nullptr) age_ = std::max(age_, old_key->rank);
    uses_[index(&b)] = 1;  // new content, allocated once
  }
  bool check_policy(std::string* why) const override;

  std::vector<std::int64_t> uses_;  // by block id: uses of the current content
  std::int64_t age_ = 0;            // L: the rank of the last keyed block evicted
};

bool LfuPolicy::check_policy(std::string* why) const {
  for (const Key& k : keys()) {
    if (k.rank < age_) {
      *why = "lfu: block " + std::to_string(k.id) + " has rank " + std::to_string(k.rank) + " below the ageing term " +
             std::to_string(age_);
      return false;
    }
  }
  for (std::size_t i = 1; i < num_blocks(); ++i) {
    if (!block(static_cast<BlockId>(i)).hash.empty() && uses_[i] < 1) {
      *why = "lfu: cached block " + std::to_string(i) + " has no recorded use";
      return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<EvictionPolicy> make_lfu_policy(std::span<Block> blocks) { return std::make_unique<LfuPolicy>(blocks); }

}  // namespace kv
