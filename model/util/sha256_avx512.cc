// The AVX-512 path of model/util/sha256.h: sixteen messages at once, one message per 32-bit
// lane of each 512-bit vector. Every round is the same sequence of vector instructions for all
// sixteen (rotates, three-input logic, adds), so sixteen chains cost about what one costs on
// scalar registers. A lane whose message has fewer blocks than the longest keeps its state
// through the remaining blocks (a masked add) and reads its own last block meanwhile.
// GCC 12's AVX-512 intrinsics pass an undefined vector through (_mm512_undefined_epi32), which
// its -Wmaybe-uninitialized reports in the intrinsic headers once inlined. GCC's
// diagnostic is turned off for this file, headers included, and for nothing else.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "model/util/check.h"
#include "model/util/sha256.h"
#include "model/util/sha256_constants.h"

namespace kv {
namespace {

#define KV_X16_TARGET __attribute__((target("avx512f,avx512bw")))

constexpr int kLanes = 16;

// rows[l] holds word 0..15 of lane l; afterwards rows[w] holds word w of lanes 0..15. Four
// rounds of pairwise interleaving: 32-bit, 64-bit, then 128-bit blocks twice.
KV_X16_TARGET inline void transpose_16x16(__m512i* rows) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(rows[2 * i], rows[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    rows[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    rows[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    rows[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    rows[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_i32x4(rows[8 * i + j], rows[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_i32x4(rows[8 * i + j], rows[8 * i + 4 + j], 0xDD);
    }
  }
  for (int j = 0; j < 8; ++j) {
    rows[j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0x88);
    rows[8 + j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0xDD);
  }
}

KV_X16_TARGET inline __m512i byte_swap_words(__m512i v) {
  return _mm512_shuffle_epi8(v, _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203));
}

// x ^ y ^ z and the two choice functions of FIPS 180-4, 4.1.2, as three-input logic.
KV_X16_TARGET inline __m512i xor3(__m512i x, __m512i y, __m512i z) { return _mm512_ternarylogic_epi32(x, y, z, 0x96); }
KV_X16_TARGET inline __m512i choose(__m512i e, __m512i f, __m512i g) {
  return _mm512_ternarylogic_epi32(e, f, g, 0xCA);
}
KV_X16_TARGET inline __m512i majority(__m512i a, __m512i b, __m512i c) {
  return _mm512_ternarylogic_epi32(a, b, c, 0xE8);
}

// The 64 rounds over one block's words w[0..16) (big-endian already), added into state[0..8)
// for the lanes in `active`. w is the message schedule's ring: w[t % 16] is W[t].
KV_X16_TARGET inline void compress(__m512i* state, __m512i* w, __mmask16 active) {
  __m512i v[8];
  for (int i = 0; i < 8; ++i) v[i] = state[i];
#pragma GCC unroll 64
  for (int t = 0; t < 64; ++t) {
    if (t >= 16) {
      const __m512i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
      const __m512i s0 = xor3(_mm512_ror_epi32(w15, 7), _mm512_ror_epi32(w15, 18), _mm512_srli_epi32(w15, 3));
      const __m512i s1 = xor3(_mm512_ror_epi32(w2, 17), _mm512_ror_epi32(w2, 19), _mm512_srli_epi32(w2, 10));
      w[t & 15] = _mm512_add_epi32(_mm512_add_epi32(w[t & 15], s0), _mm512_add_epi32(w[(t - 7) & 15], s1));
    }
    // This round's a is v[-t mod 8], b the slot after it, ..., h v[7 - t mod 8]: each round
    // renames the eight slots instead of moving eight vectors, and h's slot takes the new a.
    __m512i& a = v[(64 - t) & 7];
    const __m512i b = v[(65 - t) & 7], c = v[(66 - t) & 7];
    __m512i& d = v[(67 - t) & 7];
    const __m512i e = v[(68 - t) & 7], f = v[(69 - t) & 7], g = v[(70 - t) & 7];
    __m512i& h = v[(71 - t) & 7];
    const __m512i big_s1 = xor3(_mm512_ror_epi32(e, 6), _mm512_ror_epi32(e, 11), _mm512_ror_epi32(e, 25));
    const __m512i kw = _mm512_add_epi32(w[t & 15], _mm512_set1_epi32(static_cast<int>(kSha256Round[t])));
    const __m512i t1 = _mm512_add_epi32(_mm512_add_epi32(h, big_s1), _mm512_add_epi32(choose(e, f, g), kw));
    const __m512i big_s0 = xor3(_mm512_ror_epi32(a, 2), _mm512_ror_epi32(a, 13), _mm512_ror_epi32(a, 22));
    d = _mm512_add_epi32(d, t1);                                            // the new e
    h = _mm512_add_epi32(t1, _mm512_add_epi32(big_s0, majority(a, b, c)));  // the new a
  }
  for (int i = 0; i < 8; ++i) state[i] = _mm512_mask_add_epi32(state[i], active, state[i], v[i]);
}

}  // namespace

KV_X16_TARGET void sha256_lanes_avx512(const std::uint8_t* const* data, const std::size_t* blocks, std::size_t count,
                                       std::uint8_t* const* out) {
  KV_CHECK(count <= kLanes && sha256_avx512_available());
  if (count == 0) return;
  std::size_t longest = 0;
  for (std::size_t l = 0; l < count; ++l) {
    KV_CHECK(blocks[l] > 0, "a padded message has at least one block");
    longest = std::max(longest, blocks[l]);
  }
  __m512i state[8];
  for (int i = 0; i < 8; ++i) state[i] = _mm512_set1_epi32(static_cast<int>(kSha256Initial[i]));
  for (std::size_t b = 0; b < longest; ++b) {
    __m512i w[16];
    __mmask16 active = 0;
    for (std::size_t l = 0; l < kLanes; ++l) {
      // A lane past its message, or with none, rereads a block it may read; its state is kept.
      const std::size_t lane = l < count ? l : 0;
      const std::size_t block = std::min(b, blocks[lane] - 1);
      if (l < count && b < blocks[l]) active = static_cast<__mmask16>(active | (1u << l));
      w[l] = _mm512_loadu_si512(data[lane] + 64 * block);
    }
    transpose_16x16(w);
    for (__m512i& word : w) word = byte_swap_words(word);
    compress(state, w, active);
  }
  alignas(64) std::uint32_t words[8][kLanes];
  for (int i = 0; i < 8; ++i) _mm512_store_si512(words[i], byte_swap_words(state[i]));
  for (std::size_t l = 0; l < count; ++l) {
    for (int i = 0; i < 8; ++i) std::memcpy(out[l] + 4 * i, &words[i][l], 4);
  }
}

}  // namespace kv
