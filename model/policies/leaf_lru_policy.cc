#include "model/policies/leaf_lru_policy.h"

#include <vector>

#include "model/policies/keyed_policy.h"

namespace kv {
namespace {

constexpr std::int64_t kLeaf = 0;
constexpr std::int64_t kInner = 1;

class LeafLruPolicy final : public KeyedPolicy {
 public:
  explicit LeafLruPolicy(std::span<Block> blocks)
      : KeyedPolicy(blocks),
        parent_(blocks.size(), kNoBlock),
        parent_gen_(blocks.size(), 0),
        gen_(blocks.size(), 0),
        children_(blocks.size(), 0) {}
  const char* name() const override { return "leaf-lru"; }

  void on_cached(Block* parent, std::span<Block* const> blocks) override {
    for (Block* b : blocks) {
      if (parent != nullptr) link(*b, *parent);
      parent = b;
    }
  }

 private:
  std::int64_t rank_on_release(const Block& b, const BlockRetention&) override {
    return children_[index(&b)] > 0 ? kInner : kLeaf;
  }
  void link(const Block& child, const Block& parent) {
    const std::size_t c = index(&child), p = index(&parent);
    parent_[c] = parent.id;
    parent_gen_[c] = gen_[p];
    if (++children_[p] == 1) rekey(parent.id, kInner, /*new_stamp=*/false);
  }
  bool live_parent(std::size_t c) const {
    return parent_[c] != kNoBlock && parent_gen_[c] == gen_[static_cast<std::size_t>(parent_[c])];
  }
  void after_uncached(Block& b) override {
    const std::size_t c = index(&b);
    if (live_parent(c)) {
      const BlockId p = parent_[c];
      if (--children_[static_cast<std::size_t>(p)] == 0) rekey(p, kLeaf, /*new_stamp=*/false);
    }
    parent_[c] = kNoBlock;
    children_[c] = 0;
    ++gen_[c];  // its children's links die with its content
  }
  bool check_policy(std::string* why) const override;

  std::vector<BlockId> parent_;            // by block id: the parent when cached, or kNoBlock
  std::vector<std::uint32_t> parent_gen_;  // gen_ of the parent when the link was made
  std::vector<std::uint32_t> gen_;         // by block id: bumped whenever it loses its hash
  std::vector<std::int32_t> children_;     // by block id: cached blocks with a live link to it
};

bool LeafLruPolicy::check_policy(std::string* why) const {
  std::vector<std::int32_t> count(num_blocks(), 0);
  for (std::size_t c = 0; c < num_blocks(); ++c) {
    if (block(static_cast<BlockId>(c)).hash.empty() || !live_parent(c)) continue;
    ++count[static_cast<std::size_t>(parent_[c])];
  }
  for (std::size_t b = 0; b < num_blocks(); ++b) {
    const auto id = static_cast<BlockId>(b);
    if (count[b] != children_[b]) {
      *why = "leaf-lru: block " + std::to_string(b) + " counts " + std::to_string(children_[b]) +
             " cached children, has " + std::to_string(count[b]);
      return false;
    }
    if (is_keyed(id) && key_of(id).rank != (count[b] > 0 ? kInner : kLeaf)) {
      *why = "leaf-lru: free block " + std::to_string(b) + " is ranked " +
             (key_of(id).rank == kInner ? "inner" : "leaf") + " with " + std::to_string(count[b]) + " children";
      return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<EvictionPolicy> make_leaf_lru_policy(std::span<Block> blocks) {
  return std::make_unique<LeafLruPolicy>(blocks);
}

}  // namespace kv
