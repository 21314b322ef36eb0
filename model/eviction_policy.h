// EvictionPolicy: which free block is reused (and so evicted from the prefix cache) next.
// The pool asks the policy to hold every free block (ref_cnt == 0, non-null), to hand out the
// next victim, and to give up a block that a prefix-cache hit takes back into use. The
// reference policy is vLLM's LRU free queue (make_lru_policy), in either free order; another
// policy plugs in by implementing this interface and passing a factory for it to the
// KvCacheManager (the pool calls it once, with its blocks, when it creates them).
// Contract (checked by the pool's check_invariants through size(), order() and check()):
//   1. The policy holds exactly the blocks given to on_freed() and not yet popped or removed.
//   2. pop() and order() are deterministic functions of the calls made so far.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/block.h"

namespace kv {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual const char* name() const = 0;
  virtual std::size_t size() const = 0;
  // Blocks whose ref_cnt just reached 0, in the order the manager frees them (a request's
  // tail block first).
  virtual void on_freed(std::span<Block* const> blocks) = 0;
  // A free block taken back into use by a prefix-cache hit.
  virtual void remove(Block* b) = 0;
  // Removes and returns the next `n` victims, in order (n <= size()).
  virtual void pop_n(std::size_t n, std::vector<Block*>& out) = 0;
  virtual bool contains(const Block* b) const = 0;
  // The free blocks, next victim first.
  virtual std::vector<BlockId> order() const = 0;
  virtual bool check(std::string* why) const = 0;
};

// vLLM's free queue. `blocks` are queued in id order at start; `caching_enabled` matters only
// for kUnhashedFirst (with caching off every freed block is appended).
std::unique_ptr<EvictionPolicy> make_lru_policy(std::span<Block> blocks, FreeOrder order,
                                                bool caching_enabled);

// Makes a policy holding every one of `blocks`, in id order, as free. Same arguments as
// make_lru_policy, which is the factory used when none is given.
using EvictionPolicyFactory =
    std::function<std::unique_ptr<EvictionPolicy>(std::span<Block> blocks, FreeOrder order,
                                                  bool caching_enabled)>;

}  // namespace kv
