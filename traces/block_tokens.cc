// The AVX-512 path of traces/block_tokens.h: eight tokens of a block at a time, each lane
// splitmix64 then the modulus, with no 64-bit division (none exists in AVX-512).
// GCC 12's AVX-512 intrinsics pass an undefined vector through (_mm512_undefined_epi32), which
// its -Wmaybe-uninitialized reports in the intrinsic headers once inlined: turned off for this
// file, headers included, and for nothing else (as in model/util/sha256_avx512.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "traces/block_tokens.h"

#ifdef KV_BLOCK_TOKENS_AVX512
#include <immintrin.h>

namespace kv::trace {
namespace {

#define KV_BLOCK_TOKENS_TARGET __attribute__((target("avx512f,avx512dq")))

// n mod 501 in each 64-bit lane, for n < 2^29: the quotient is (n * M) >> 38 with
// M = ceil(2^38 / 501), exact below 2^29 because M * 501 - 2^38 = 53 < 2^(38 - 29).
KV_BLOCK_TOKENS_TARGET inline __m512i mod_501_below_2_29(__m512i n) {
  const __m512i q = _mm512_srli_epi64(_mm512_mul_epu32(n, _mm512_set1_epi64(548658497)), 38);
  return _mm512_sub_epi64(n, _mm512_mul_epu32(q, _mm512_set1_epi64(501)));
}

// x mod kBlockTokenVocab in each lane. 128,256 = 256 * 501: x mod 128,256 is
// (y mod 501) * 256 + (x & 255) with y = x >> 8, and with y = hi * 2^28 + lo (both below
// 2^28), y mod 501 = ((hi mod 501) * (2^28 mod 501) + lo) mod 501, all below 2^29.
KV_BLOCK_TOKENS_TARGET inline __m512i mod_vocab(__m512i x) {
  static_assert(kBlockTokenVocab == 256 * 501, "the lanes' modulus is 256 * 501");
  const __m512i y = _mm512_srli_epi64(x, 8);
  const __m512i lo = _mm512_and_si512(y, _mm512_set1_epi64((1LL << 28) - 1));
  const __m512i hi = mod_501_below_2_29(_mm512_srli_epi64(y, 28));
  const __m512i r =
      mod_501_below_2_29(_mm512_add_epi64(_mm512_mul_epu32(hi, _mm512_set1_epi64((1LL << 28) % 501)), lo));
  return _mm512_or_si512(_mm512_slli_epi64(r, 8), _mm512_and_si512(x, _mm512_set1_epi64(255)));
}

// splitmix64 in each lane.
KV_BLOCK_TOKENS_TARGET inline __m512i splitmix64_x8(__m512i x) {
  x = _mm512_add_epi64(x, _mm512_set1_epi64(static_cast<long long>(0x9e3779b97f4a7c15ULL)));
  x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 30)),
                         _mm512_set1_epi64(static_cast<long long>(0xbf58476d1ce4e5b9ULL)));
  x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 27)),
                         _mm512_set1_epi64(static_cast<long long>(0x94d049bb133111ebULL)));
  return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}

}  // namespace

KV_BLOCK_TOKENS_TARGET void block_tokens_avx512(std::uint64_t base, int n, TokenId* out) {
  static_assert(sizeof(TokenId) == 8, "eight tokens per 512-bit vector");
  const __m512i b = _mm512_set1_epi64(static_cast<long long>(base));
  __m512i position = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm512_storeu_si512(out + i, mod_vocab(splitmix64_x8(_mm512_xor_si512(b, position))));
    position = _mm512_add_epi64(position, _mm512_set1_epi64(8));
  }
  block_tokens_scalar(base, i, n, out);
}

}  // namespace kv::trace

#endif
