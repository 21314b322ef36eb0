// Prefix-cache optimum: the best block-level prefix hit rate any eviction policy could reach
// on a trace at a capacity of C blocks, computed offline from the whole trace (Belady's MIN,
// "evict the block whose next use is furthest", adapted to prefix chains).
//
// The model (docs/policies.md, "The optimum"): the cache is a set of at most C block hashes.
// Requests are taken one at a time in file order. Request r has k_r = floor(n_r / B) full
// prompt blocks (chained hashes: a block's hash names its whole prefix) of which the first
// c_r = floor((n_r - 1) / B) are countable (vLLM recomputes the last token). Its hit is the
// longest run of its countable blocks, from the first, that is in the set (a prefix hit stops
// at the first miss); hit tokens = hit blocks * B; queries = n_r. Then the set becomes any
// subset of (set + the request's k_r blocks) of size <= C.
// Belady, adapted: a block's key is the next request that holds it if the block is countable
// there, and "never" if no later request holds it or the next one holds it only as its
// uncountable last block (that request re-inserts it for free). Keep the C blocks with the
// soonest keys; on equal keys the deeper block goes first. Plain furthest-next-countable-use is
// NOT optimal here: the exhaustive search found a trace where it keeps a parent that a later
// uncountable occurrence would have restored, instead of a child that nothing restores.
// docs/policies.md proves the adapted rule exact; tests/traces/prefix_optimum_test.cc checks it
// against an exhaustive search over every eviction choice.
// What it bounds: the model drops constraints the real manager has (a running request's blocks
// must all be resident at once, a prompt longer than the cache is not stored, a hash may be
// cached twice), so every eviction policy's sequence-mode hit rate at pool C + 1 blocks is at
// most this optimum.
// Invariants:
//   1. hits <= queries; the result is a deterministic function of (trace, B, C).
//   2. hits never decrease as C grows, and at C >= the trace's distinct blocks it equals the
//      infinite-cache hit rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/util/status.h"

namespace kv::trace {

// One request as the optimum sees it: its full prompt blocks as dense ids (equal ids = equal
// hashes), how many of them can hit, and its prompt length.
struct ChainRequest {
  std::vector<std::uint32_t> blocks;  // k_r full blocks, in prompt order
  std::size_t countable = 0;          // c_r <= blocks.size()
  std::int64_t tokens = 0;            // n_r
};

struct PrefixChains {
  int block_size = 16;
  std::uint32_t distinct_blocks = 0;  // ids are 0 .. distinct_blocks - 1
  std::vector<ChainRequest> requests;
};

struct OptimumResult {
  std::int64_t capacity_blocks = 0;
  std::int64_t lookups = 0, queries = 0, hits = 0;  // hits and queries in tokens
  double hit_rate = 0;
};

// Reads a trace's prompts (at most `limit` requests when > 0) and hashes them as the sweep does.
StatusOr<PrefixChains> load_prefix_chains(const std::string& trace_path, int block_size, std::int64_t limit = 0);

// Belady over `chains` with room for `capacity_blocks` blocks (>= 0).
OptimumResult prefix_optimum(const PrefixChains& chains, std::int64_t capacity_blocks);

}  // namespace kv::trace
