#include <algorithm>
#include <vector>

#include "model/free_block_queue.h"
#include "model/policies/eviction_policy.h"

namespace kv {
namespace {

class LruPolicy final : public EvictionPolicy {
 public:
  LruPolicy(std::span<Block> blocks, FreeOrder order, bool caching_enabled)
      : queue_(blocks), order_(order), caching_(caching_enabled) {}

  const char* name() const override { return order_ == FreeOrder::kClassic ? "lru" : "lru-unhashed-first"; }
  std::size_t size() const override { return queue_.size(); }

  void on_freed(std::span<Block* const> blocks, const BlockRetention&) override {
    if (order_ == FreeOrder::kClassic || !caching_) {
      queue_.append_n(blocks);
      return;
    }
    // A request frees its blocks last first, so its unhashed tail usually comes before all its
    // hashed blocks: then the two runs are queued as they lie, without copies.
    const auto unhashed = [](const Block* b) { return b->hash.empty(); };
    const auto split = std::find_if_not(blocks.begin(), blocks.end(), unhashed);
    if (std::none_of(split, blocks.end(), unhashed)) {
      queue_.prepend_n({blocks.begin(), split});
      queue_.append_n({split, blocks.end()});
      return;
    }
    unhashed_.clear();
    hashed_.clear();
    for (Block* b : blocks) (b->hash.empty() ? unhashed_ : hashed_).push_back(b);
    queue_.prepend_n(unhashed_);
    queue_.append_n(hashed_);
  }

  void remove(Block* b) override { queue_.remove(b); }
  void pop_n(std::size_t n, std::vector<Block*>& out) override { queue_.popleft_n(n, out); }
  bool contains(const Block* b) const override { return queue_.contains(b); }
  std::vector<BlockId> order() const override { return queue_.ids(); }
  bool check(std::string* why) const override { return queue_.check(why); }

 private:
  FreeBlockQueue queue_;
  FreeOrder order_;
  bool caching_;
  std::vector<Block*> unhashed_, hashed_;  // scratch for on_freed
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lru_policy(std::span<Block> blocks, FreeOrder order, bool caching_enabled) {
  return std::make_unique<LruPolicy>(blocks, order, caching_enabled);
}

}  // namespace kv
