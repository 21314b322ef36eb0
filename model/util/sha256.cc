#include "model/util/sha256.h"

#define OPENSSL_SUPPRESS_DEPRECATED
#include <cpuid.h>
#include <immintrin.h>
#include <openssl/sha.h>

#include <chrono>
#include <cstring>

#include "model/util/check.h"
#include "model/util/sha256_constants.h"

namespace kv {
namespace {

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
    const __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(kSha256Round + 4 * g));
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
KV_SHA_TARGET void lockstep_ni(const std::uint8_t* const* data, std::size_t blocks, std::uint8_t* const* out) {
  __m128i abef[N], cdgh[N];
  for (int n = 0; n < N; ++n) {
    // H(0) as ABEF / CDGH: lanes low to high are F, E, B, A and H, G, D, C.
    abef[n] = _mm_set_epi32(static_cast<int>(kSha256Initial[0]), static_cast<int>(kSha256Initial[1]),
                            static_cast<int>(kSha256Initial[4]), static_cast<int>(kSha256Initial[5]));
    cdgh[n] = _mm_set_epi32(static_cast<int>(kSha256Initial[2]), static_cast<int>(kSha256Initial[3]),
                            static_cast<int>(kSha256Initial[6]), static_cast<int>(kSha256Initial[7]));
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

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

// Up to four messages of `blocks` blocks each, in lockstep.
KV_SHA_TARGET void lockstep_ni_upto4(const std::uint8_t* const* data, std::size_t count, std::size_t blocks,
                                     std::uint8_t* const* out) {
  switch (count) {
    case 1:
      return lockstep_ni<1>(data, blocks, out);
    case 2:
      return lockstep_ni<2>(data, blocks, out);
    case 3:
      return lockstep_ni<3>(data, blocks, out);
    default:
      return lockstep_ni<4>(data, blocks, out);
  }
}

// The path for batches below the plan's wide_from.
void narrow_lanes(const std::uint8_t* const* data, const std::size_t* blocks, std::size_t count,
                  std::uint8_t* const* out) {
  if (sha256_ni_available()) return sha256_lanes_ni(data, blocks, count, out);
  for (std::size_t n = 0; n < count; ++n) sha256_padded_openssl(data[n], blocks[n], out[n]);
}

// Sixteen two-block messages to time both paths on.
struct TimingBatch {
  alignas(64) std::uint8_t messages[kSha256MaxLanes][128] = {};
  std::uint8_t digests[kSha256MaxLanes][32] = {};
  const std::uint8_t* data[kSha256MaxLanes];
  std::uint8_t* out[kSha256MaxLanes];
  std::size_t blocks[kSha256MaxLanes];
  TimingBatch() {
    for (std::size_t n = 0; n < kSha256MaxLanes; ++n) {
      messages[n][0] = static_cast<std::uint8_t>(n);
      data[n] = messages[n], out[n] = digests[n], blocks[n] = 2;
    }
  }
};

// Nanoseconds per message of one round of `lanes` on the batch.
template <typename Lanes>
double time_round(Lanes lanes, TimingBatch& batch) {
  constexpr int kCallsPerRound = 8;
  const auto start = std::chrono::steady_clock::now();
  for (int call = 0; call < kCallsPerRound; ++call) lanes(batch.data, batch.blocks, kSha256MaxLanes, batch.out);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return ns / (kCallsPerRound * kSha256MaxLanes);
}

// Runs the wide path for at least `micros` of wall time: a core may keep its 512-bit units
// powered down (running them slowly for tens of microseconds after their first use), which a
// measurement taken straight away would charge to the wide path.
void warm_wide_path(TimingBatch& batch, int micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  while (std::chrono::steady_clock::now() < until) time_round(&sha256_lanes_avx512, batch);
}

Sha256LanesPlan measure_plan() {
  Sha256LanesPlan plan;
  if (!sha256_avx512_available()) return plan;
  TimingBatch batch;
  warm_wide_path(batch, 500);
  // Rounds of the two paths alternate, so that a slow spell of the machine hits both; the
  // fastest round of each counts.
  constexpr int kRounds = 16;
  for (int round = 0; round < kRounds; ++round) {
    const double narrow = time_round(&narrow_lanes, batch), wide = time_round(&sha256_lanes_avx512, batch);
    if (round == 0 || narrow < plan.narrow_ns_per_message) plan.narrow_ns_per_message = narrow;
    if (round == 0 || wide < plan.wide_ns_per_message) plan.wide_ns_per_message = wide;
  }
  // The wide path costs sixteen messages whatever the batch; the narrow one about its count.
  const double wide_batch = plan.wide_ns_per_message * kSha256MaxLanes;
  for (std::size_t count = 1; count <= kSha256MaxLanes; ++count) {
    if (plan.narrow_ns_per_message * static_cast<double>(count) > wide_batch) {
      plan.wide_from = count;
      break;
    }
  }
  return plan;
}

}  // namespace

bool sha256_ni_available() {
  static const bool available = cpu_has_sha_ni();
  return available;
}

bool sha256_avx512_available() {
  static const bool available = cpu_has_avx512();
  return available;
}

const Sha256LanesPlan& sha256_lanes_plan() {
  static const Sha256LanesPlan plan = measure_plan();
  return plan;
}

std::string Sha256LanesPlan::describe() const {
  const std::string narrow = sha256_ni_available() ? "sha-ni x4" : "openssl x1";
  if (wide_from > kSha256MaxLanes) return narrow;
  return "avx512 x16 from " + std::to_string(wide_from) + " messages, " + narrow + " below";
}

KV_SHA_TARGET void sha256_padded_ni(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out) {
  lockstep_ni<1>(&data, blocks, &out);
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

// Messages of equal length in lockstep, four at a time.
void sha256_lanes_ni(const std::uint8_t* const* data, const std::size_t* blocks, std::size_t count,
                     std::uint8_t* const* out) {
  KV_CHECK(count <= kSha256MaxLanes && sha256_ni_available());
  std::uint32_t done = 0;  // bit n: message n hashed
  for (std::size_t n = 0; n < count; ++n) {
    if (done >> n & 1) continue;
    const std::uint8_t* group[4];
    std::uint8_t* group_out[4];
    std::size_t size = 0;
    for (std::size_t m = n; m < count && size < 4; ++m) {
      if (done >> m & 1 || blocks[m] != blocks[n]) continue;
      group[size] = data[m], group_out[size++] = out[m];
      done |= 1u << m;
    }
    lockstep_ni_upto4(group, size, blocks[n], group_out);
  }
}

void sha256_padded_lanes(const std::uint8_t* const* data, const std::size_t* blocks, std::size_t count,
                         std::uint8_t* const* out) {
  KV_CHECK(count <= kSha256MaxLanes);
  if (count >= sha256_lanes_plan().wide_from) return sha256_lanes_avx512(data, blocks, count, out);
  narrow_lanes(data, blocks, count, out);
}

}  // namespace kv
