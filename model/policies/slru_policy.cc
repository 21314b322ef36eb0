#include "model/policies/slru_policy.h"

#include <algorithm>
#include <vector>

#include "model/policies/keyed_policy.h"

namespace kv {
namespace {

constexpr std::int64_t kProbation = 0;
constexpr std::int64_t kProtected = 1;

class SlruPolicy final : public KeyedPolicy {
 public:
  explicit SlruPolicy(std::span<Block> blocks)
      : KeyedPolicy(blocks), hit_(blocks.size(), 0), cap_(std::max<std::size_t>(1, (blocks.size() - 1) * 8 / 10)) {}
  const char* name() const override { return "slru"; }

  void on_hit(Block* b) override { hit_[index(b)] = 1; }

 private:
  std::int64_t rank_on_release(const Block& b, const BlockRetention&) override {
    return hit_[index(&b)] ? kProtected : kProbation;
  }
  void after_release() override {
    while (protected_ > cap_) {
      const auto first = keys().lower_bound(Key{kProtected, 0, kNoBlock});
      rekey(first->id, kProbation, /*new_stamp=*/true);
    }
  }
  void on_leave(Block& b, const Key*, bool popped) override {
    if (popped) hit_[index(&b)] = 0;  // new content: not yet re-used
  }
  void on_key_added(const Key& k) override { protected_ += k.rank == kProtected ? 1 : 0; }
  void on_key_erased(const Key& k) override { protected_ -= k.rank == kProtected ? 1 : 0; }
  bool check_policy(std::string* why) const override;

  std::vector<char> hit_;      // by block id: a hit took the current content at least once
  std::size_t cap_;            // the protected segment's largest size
  std::size_t protected_ = 0;  // rank-1 keys
};

bool SlruPolicy::check_policy(std::string* why) const {
  std::size_t prot = 0;
  for (const Key& k : keys()) {
    if (k.rank != kProtected) continue;
    ++prot;
    if (!hit_[static_cast<std::size_t>(k.id)]) {
      *why = "slru: block " + std::to_string(k.id) + " is protected but was never hit";
      return false;
    }
  }
  if (prot != protected_ || prot > cap_) {
    *why = "slru: " + std::to_string(prot) + " protected blocks, counted " + std::to_string(protected_) + ", cap " +
           std::to_string(cap_);
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<EvictionPolicy> make_slru_policy(std::span<Block> blocks) {
  return std::make_unique<SlruPolicy>(blocks);
}

}  // namespace kv
