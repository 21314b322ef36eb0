// EvictionPolicy: which free block is reused (and so evicted from the prefix cache) next.
// The pool asks the policy to hold every free block (ref_cnt == 0, non-null), to hand out the
// next victim, and to give up a block that a prefix-cache hit takes back into use. The
// reference policy is vLLM's LRU free queue (make_lru_policy), in either free order; another
// policy plugs in by implementing this interface and passing a factory for it to the
// KvCacheManager (the pool calls it once, with its blocks, when it creates them).
// Policies other than LRU also hear of hits, of blocks becoming cached (with their parent in
// the request's chain) and of cached blocks losing their hash (the on_* hooks); the pool calls
// the hooks only when wants_hooks() is true, so the LRU path is exactly vLLM's.
// Contract (checked by the pool's check_invariants through size(), order() and check()):
//   1. The policy holds exactly the blocks given to on_freed() and not yet popped or removed.
//   2. pop() and order() are deterministic functions of the calls made so far.
//   3. order() lists the blocks pop_n() would return, in the same order.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/block.h"
#include "model/policies/block_retention.h"

namespace kv {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual const char* name() const = 0;
  virtual std::size_t size() const = 0;
  // Blocks whose ref_cnt just reached 0, in the order the manager frees them (a request's
  // tail block first), with the retention of the request that released them.
  virtual void on_freed(std::span<Block* const> blocks, const BlockRetention& retention) = 0;
  // A free block taken back into use by a prefix-cache hit.
  virtual void remove(Block* b) = 0;
  // Removes and returns the next `n` victims, in order (n <= size()).
  virtual void pop_n(std::size_t n, std::vector<Block*>& out) = 0;
  virtual bool contains(const Block* b) const = 0;
  // The free blocks, next victim first.
  virtual std::vector<BlockId> order() const = 0;
  virtual bool check(std::string* why) const = 0;

  // The hooks below are called only when this is true (fixed for the policy's lifetime).
  virtual bool wants_hooks() const { return false; }
  // A prefix-cache hit takes `b` (free or already in use; called after remove() for a free one).
  virtual void on_hit(Block* /*b*/) {}
  // `blocks` were just cached, in chain order: blocks[0]'s parent is `parent` (nullptr: the
  // first block of its request), blocks[i]'s is blocks[i-1].
  virtual void on_cached(Block* /*parent*/, std::span<Block* const> /*blocks*/) {}
  // `b` just lost its hash (evicted on reuse, evicted explicitly, or the cache was reset).
  virtual void on_uncached(Block* /*b*/) {}
};

// vLLM's free queue. `blocks` are queued in id order at start; `caching_enabled` matters only
// for kUnhashedFirst (with caching off every freed block is appended).
std::unique_ptr<EvictionPolicy> make_lru_policy(std::span<Block> blocks, FreeOrder order, bool caching_enabled);

// The policies kvsim implements. kLru is vLLM's queue (with the configured FreeOrder); the others
// ignore FreeOrder (docs/policies.md).
enum class EvictionPolicyKind { kLru, kLfu, kSlru, kLeafLru, kPriority };
const char* to_string(EvictionPolicyKind kind);
bool parse_eviction_policy(const std::string& text, EvictionPolicyKind* out);
// "lru, lfu, slru, leaf-lru, priority"
const char* eviction_policy_names();
std::unique_ptr<EvictionPolicy> make_eviction_policy(EvictionPolicyKind kind, std::span<Block> blocks, FreeOrder order,
                                                     bool caching_enabled);

// Makes a policy holding every one of `blocks`, in id order, as free. Same arguments as
// make_lru_policy, which is the factory used when none is given.
using EvictionPolicyFactory =
    std::function<std::unique_ptr<EvictionPolicy>(std::span<Block> blocks, FreeOrder order, bool caching_enabled)>;

}  // namespace kv
