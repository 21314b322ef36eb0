// Deterministic block expansion: a block id stands for a fixed run of token ids.
//
// Traces that describe prompts by block ids (Mooncake's `hash_ids` of 512-token blocks, the
// compact segment form of trace.proto) expand each id through this function, and so does any
// code that needs "the tokens of block b" without a trace (benchmarks, tests).
// Invariants:
//   1. Pure: token i of block b is splitmix64(splitmix64(b) ^ i) mod kBlockTokenVocab; it depends
//      on nothing else (no seed, no state), so the same id always gives the same tokens, and a
//      shorter expansion of a block is a prefix of a longer one.
//   2. Every token is in [0, kBlockTokenVocab) (Llama-3's 128,256-token vocabulary).
// Header-only and allocation-free beyond the appended tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/types.h"

namespace kv::trace {

inline constexpr std::int64_t kBlockTokenVocab = 128256;
inline constexpr int kMooncakeBlockTokens = 512;

// splitmix64's finalizer applied to x + golden gamma: a bijective 64-bit mix.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Token `position` of block `block_id`.
constexpr TokenId block_token(std::uint64_t block_id, std::uint64_t position) {
  return static_cast<TokenId>(splitmix64(splitmix64(block_id) ^ position) %
                              static_cast<std::uint64_t>(kBlockTokenVocab));
}

// Appends the first `num_tokens` tokens of block `block_id` to `out` (nothing if num_tokens <= 0).
inline void expand_block_tokens(std::uint64_t block_id, int num_tokens, std::vector<TokenId>& out) {
  if (num_tokens <= 0) return;
  const std::uint64_t base = splitmix64(block_id);
  // Grows geometrically: a prompt of many blocks is expanded block by block, and an exact
  // reserve per block would copy the whole prompt each time.
  const std::size_t start = out.size();
  const std::size_t needed = start + static_cast<std::size_t>(num_tokens);
  if (needed > out.capacity()) out.reserve(std::max(needed, 2 * out.capacity()));
  out.resize(needed);
  TokenId* const p = out.data() + start;  // a plain loop: no capacity check per token
  for (int i = 0; i < num_tokens; ++i) {
    p[i] = static_cast<TokenId>(splitmix64(base ^ static_cast<std::uint64_t>(i)) %
                                static_cast<std::uint64_t>(kBlockTokenVocab));
  }
}

}  // namespace kv::trace
