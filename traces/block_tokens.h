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
//   3. expand_block_tokens writes the same tokens on either path: eight at a time with AVX-512
//      (F and DQ) when the CPU has it, else one at a time (tests/traces/traces_io_test.cc
//      compares both with block_token()).
// Header-only but for the AVX-512 path; allocation-free beyond the appended tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#define KV_BLOCK_TOKENS_AVX512 1
#endif

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

// Token `position` of the block whose splitmix64(id) is `base`.
constexpr TokenId block_token_of_base(std::uint64_t base, std::uint64_t position) {
  return static_cast<TokenId>(splitmix64(base ^ position) % static_cast<std::uint64_t>(kBlockTokenVocab));
}

// Token `position` of block `block_id`.
constexpr TokenId block_token(std::uint64_t block_id, std::uint64_t position) {
  return block_token_of_base(splitmix64(block_id), position);
}

// Tokens [first, n) of the block whose splitmix64(id) is `base`, one at a time, at out[first..n).
inline void block_tokens_scalar(std::uint64_t base, int first, int n, TokenId* out) {
  for (int i = first; i < n; ++i) out[i] = block_token_of_base(base, static_cast<std::uint64_t>(i));
}

#ifdef KV_BLOCK_TOKENS_AVX512
// block_tokens_scalar from 0, eight tokens at a time (traces/block_tokens.cc); requires
// block_tokens_avx512_available().
void block_tokens_avx512(std::uint64_t base, int n, TokenId* out);
#endif

// Whether expand_block_tokens takes the AVX-512 path (checked once).
inline bool block_tokens_avx512_available() {
#ifdef KV_BLOCK_TOKENS_AVX512
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  }();
  return available;
#else
  return false;
#endif
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
  TokenId* const p = out.data() + start;
#ifdef KV_BLOCK_TOKENS_AVX512
  if (block_tokens_avx512_available()) return block_tokens_avx512(base, num_tokens, p);
#endif
  block_tokens_scalar(base, 0, num_tokens, p);
}

}  // namespace kv::trace
