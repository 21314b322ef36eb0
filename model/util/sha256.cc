#include "model/util/sha256.h"

#define OPENSSL_SUPPRESS_DEPRECATED
#include <cpuid.h>
#include <immintrin.h>
#include <openssl/sha.h>

#include <cstring>

#include "model/util/check.h"

namespace kv {
namespace {

// FIPS 180-4, 4.2.2: the first 32 bits of the fractional parts of the cube roots of the first
// 64 primes.
alignas(16) constexpr std::uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// FIPS 180-4, 5.3.3: H(0), the state before the first block.
constexpr std::uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

bool cpu_has_sha_ni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const bool ssse3_sse41 = (ecx & bit_SSSE3) && (ecx & bit_SSE4_1);
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return ssse3_sse41 && (ebx & bit_SHA);
}

// SHA-NI keeps the eight working variables as two vectors, ABEF and CDGH (high lane first).
// Each _mm_sha256rnds2_epu32 runs two rounds and returns the new ABEF; the old ABEF becomes
// the new CDGH, so the two vectors swap roles every two rounds.
#define KV_SHA_TARGET __attribute__((target("sha,ssse3,sse4.1")))

KV_SHA_TARGET inline __m128i byte_swap_words(__m128i v) {
  const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  return _mm_shuffle_epi8(v, mask);
}

// One 64-byte block of each of N messages into its (abef[n], cdgh[n]), the N in lockstep. The
// message schedule is kept as four vectors of four words each: w[n][g % 4] holds words
// 4g..4g+3 while group g is consumed. One message's rounds form a dependency chain (each
// sha256rnds2 waits for the last); N independent chains keep the SHA unit busy in its wait.
template <int N>
KV_SHA_TARGET inline void compress_blocks(const std::uint8_t* const* block, __m128i* abef, __m128i* cdgh) {
  __m128i abef_in[N], cdgh_in[N], w[N][4];
  for (int n = 0; n < N; ++n) abef_in[n] = abef[n], cdgh_in[n] = cdgh[n];
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) {
    const __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(kRound + 4 * g));
#pragma GCC unroll 4
    for (int n = 0; n < N; ++n) {
      __m128i words;
      if (g < 4) {
        words = byte_swap_words(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block[n] + 16 * g)));
      } else {
        // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] for t = 4g..4g+3: msg1 adds
        // s0(W[t-15]) to W[t-16] (groups g-4, g-3), W[t-7] straddles groups g-2 and g-1, and
        // msg2 adds s1(W[t-2]) from group g-1.
        __m128i t = _mm_sha256msg1_epu32(w[n][g % 4], w[n][(g + 1) % 4]);
        t = _mm_add_epi32(t, _mm_alignr_epi8(w[n][(g + 3) % 4], w[n][(g + 2) % 4], 4));
        words = _mm_sha256msg2_epu32(t, w[n][(g + 3) % 4]);
      }
      w[n][g % 4] = words;
      const __m128i wk = _mm_add_epi32(words, k);
      cdgh[n] = _mm_sha256rnds2_epu32(cdgh[n], abef[n], wk);
      abef[n] = _mm_sha256rnds2_epu32(abef[n], cdgh[n], _mm_shuffle_epi32(wk, 0x0E));
    }
  }
  for (int n = 0; n < N; ++n)
    abef[n] = _mm_add_epi32(abef[n], abef_in[n]), cdgh[n] = _mm_add_epi32(cdgh[n], cdgh_in[n]);
}

// N messages of `blocks` padded blocks each, hashed in lockstep.
template <int N>
KV_SHA_TARGET void sha256_lanes_ni(const std::uint8_t* const* data, std::size_t blocks, std::uint8_t* const* out) {
  __m128i abef[N], cdgh[N];
  for (int n = 0; n < N; ++n) {
    // H(0) as ABEF / CDGH: lanes low to high are F, E, B, A and H, G, D, C.
    abef[n] = _mm_set_epi32(static_cast<int>(kInitial[0]), static_cast<int>(kInitial[1]), static_cast<int>(kInitial[4]),
                            static_cast<int>(kInitial[5]));
    cdgh[n] = _mm_set_epi32(static_cast<int>(kInitial[2]), static_cast<int>(kInitial[3]), static_cast<int>(kInitial[6]),
                            static_cast<int>(kInitial[7]));
  }
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* block[N];
    for (int n = 0; n < N; ++n) block[n] = data[n] + 64 * b;
    compress_blocks<N>(block, abef, cdgh);
  }
  for (int n = 0; n < N; ++n) {
    // Back to A..H, low lane first: reversed, the vectors hold (A, B, E, F) and (C, D, G, H).
    const __m128i a_b_e_f = _mm_shuffle_epi32(abef[n], 0x1B);
    const __m128i c_d_g_h = _mm_shuffle_epi32(cdgh[n], 0x1B);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[n]), byte_swap_words(_mm_unpacklo_epi64(a_b_e_f, c_d_g_h)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[n] + 16), byte_swap_words(_mm_unpackhi_epi64(a_b_e_f, c_d_g_h)));
  }
}

}  // namespace

bool sha256_ni_available() {
  static const bool available = cpu_has_sha_ni();
  return available;
}

KV_SHA_TARGET void sha256_padded_ni(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out) {
  sha256_lanes_ni<1>(&data, blocks, &out);
}

void sha256_padded_openssl(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out) {
  SHA256_CTX ctx;
  KV_CHECK(SHA256_Init(&ctx) == 1, "SHA-256 failed");
  for (std::size_t b = 0; b < blocks; ++b) SHA256_Transform(&ctx, data + 64 * b);
  for (std::size_t i = 0; i < 8; ++i) {
    const std::uint32_t word = __builtin_bswap32(static_cast<std::uint32_t>(ctx.h[i]));
    std::memcpy(out + 4 * i, &word, sizeof word);
  }
}

void sha256_padded(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out) {
  if (sha256_ni_available()) {
    sha256_padded_ni(data, blocks, out);
  } else {
    sha256_padded_openssl(data, blocks, out);
  }
}

void sha256_padded_lanes(const std::uint8_t* const* data, std::size_t count, std::size_t blocks,
                         std::uint8_t* const* out) {
  KV_CHECK(count <= kSha256MaxLanes);
  if (!sha256_ni_available()) {
    for (std::size_t n = 0; n < count; ++n) sha256_padded_openssl(data[n], blocks, out[n]);
    return;
  }
  switch (count) {
    case 0:
      return;
    case 1:
      return sha256_lanes_ni<1>(data, blocks, out);
    case 2:
      return sha256_lanes_ni<2>(data, blocks, out);
    case 3:
      return sha256_lanes_ni<3>(data, blocks, out);
    default:
      return sha256_lanes_ni<4>(data, blocks, out);
  }
}

}  // namespace kv
