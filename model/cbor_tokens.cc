#include "model/cbor_tokens.h"

#include <immintrin.h>

#include <array>
#include <cstring>

namespace kv {
namespace {

// One id: stores 8 bytes (the head, then the big-endian value) and advances by the encoded
// length, 1, 2, 3 or 5, without data-dependent branches.
inline std::uint8_t* put_u32(std::uint8_t* p, std::uint32_t v) {
  static constexpr std::uint8_t kLength[4] = {1, 2, 3, 5};
  static constexpr std::uint8_t kShift[4] = {0, 56, 48, 32};
  const unsigned size_class =
      static_cast<unsigned>(v >= 24) + static_cast<unsigned>(v > 0xff) + static_cast<unsigned>(v > 0xffff);
  // The value's bytes, most significant first, in the low bytes of `payload`.
  const std::uint64_t big_endian = __builtin_bswap64(v);
  const std::uint64_t payload = size_class == 0 ? 0 : big_endian >> kShift[size_class];
  const std::uint64_t head = size_class == 0 ? v : 23u + size_class;  // major type 0
  const std::uint64_t word = head | (payload << 8);
  std::memcpy(p, &word, sizeof word);
  return p + kLength[size_class];
}

#define KV_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi2")))

// A byte-shuffle control that puts, in each 64-bit lane, the lane's source bytes `order` (-1
// for zero) at bytes 0..7. _mm512_shuffle_epi8 indexes within 128-bit lanes: two ids each.
struct ShuffleControl {
  alignas(64) std::int8_t bytes[64];
};

constexpr ShuffleControl lane_shuffle(const std::array<std::int8_t, 8>& order) {
  ShuffleControl c{};
  for (int i = 0; i < 64; ++i) {
    const std::int8_t source = order[static_cast<std::size_t>(i % 8)];
    c.bytes[i] = source < 0 ? std::int8_t{-128} : static_cast<std::int8_t>(source + 8 * ((i / 8) % 2));
  }
  return c;
}

// After the head byte: 1 byte (24..255), 2 bytes (..65535) or 4 bytes, big-endian; and the
// length in byte 0 spread over the lane's 8 bytes.
constexpr ShuffleControl kOneByte = lane_shuffle({-1, 0, -1, -1, -1, -1, -1, -1});
constexpr ShuffleControl kTwoBytes = lane_shuffle({-1, 1, 0, -1, -1, -1, -1, -1});
constexpr ShuffleControl kFourBytes = lane_shuffle({-1, 3, 2, 1, 0, -1, -1, -1});
constexpr ShuffleControl kSpreadByte0 = lane_shuffle({0, 0, 0, 0, 0, 0, 0, 0});

KV_AVX512_TARGET inline __m512i load(const ShuffleControl& c) { return _mm512_load_si512(c.bytes); }

// Eight ids (lanes outside `live` encode nothing) at `out`: each lane's encoded word, low byte
// first, and its length; then the valid bytes of all lanes packed together.
KV_AVX512_TARGET inline std::uint8_t* encode8(std::uint8_t* out, __m512i ids, __mmask8 live) {
  const __m512i byte_index = _mm512_set1_epi64(0x0706050403020100LL);

  const __mmask8 ge24 = _mm512_cmpgt_epu64_mask(ids, _mm512_set1_epi64(23));
  const __mmask8 gt8bit = _mm512_cmpgt_epu64_mask(ids, _mm512_set1_epi64(0xff));
  const __mmask8 gt16bit = _mm512_cmpgt_epu64_mask(ids, _mm512_set1_epi64(0xffff));

  __m512i word = ids;  // below 24: the id is its own head
  word = _mm512_mask_mov_epi64(word, ge24,
                               _mm512_or_si512(_mm512_shuffle_epi8(ids, load(kOneByte)), _mm512_set1_epi64(24)));
  word = _mm512_mask_mov_epi64(word, gt8bit,
                               _mm512_or_si512(_mm512_shuffle_epi8(ids, load(kTwoBytes)), _mm512_set1_epi64(25)));
  word = _mm512_mask_mov_epi64(word, gt16bit,
                               _mm512_or_si512(_mm512_shuffle_epi8(ids, load(kFourBytes)), _mm512_set1_epi64(26)));

  const __m512i one = _mm512_set1_epi64(1);
  __m512i length = _mm512_maskz_mov_epi64(live, one);
  length = _mm512_mask_add_epi64(length, ge24 & live, length, one);
  length = _mm512_mask_add_epi64(length, gt8bit & live, length, one);
  length = _mm512_mask_add_epi64(length, gt16bit & live, length, _mm512_set1_epi64(2));

  const __mmask64 valid = _mm512_cmplt_epu8_mask(byte_index, _mm512_shuffle_epi8(length, load(kSpreadByte0)));
  _mm512_storeu_si512(out, _mm512_maskz_compress_epi8(valid, word));
  return out + __builtin_popcountll(valid);
}

bool cpu_has_avx512_encoder() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vbmi2");
}

}  // namespace

bool token_encoder_avx512_available() {
  static const bool available = cpu_has_avx512_encoder();
  return available;
}

std::uint8_t* encode_token_ids_scalar(std::uint8_t* out, std::span<const TokenId> ids) {
  std::uint64_t high = 0;
  for (TokenId t : ids) {
    high |= static_cast<std::uint64_t>(t) >> 32;
    out = put_u32(out, static_cast<std::uint32_t>(t));
  }
  return high == 0 ? out : nullptr;
}

KV_AVX512_TARGET std::uint8_t* encode_token_ids_avx512(std::uint8_t* out, std::span<const TokenId> ids) {
  static_assert(sizeof(TokenId) == 8, "eight ids per 512-bit vector");
  const __m512i high_half = _mm512_set1_epi64(static_cast<long long>(0xffffffff00000000ULL));
  __m512i high = _mm512_setzero_si512();  // every id's bits above 32, or-ed together
  const std::size_t n = ids.size();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512i v = _mm512_loadu_si512(ids.data() + i);
    high = _mm512_or_si512(high, v);
    out = encode8(out, v, 0xff);
  }
  if (i < n) {
    const auto live = static_cast<__mmask8>((1u << (n - i)) - 1);
    const __m512i v = _mm512_maskz_loadu_epi64(live, ids.data() + i);
    high = _mm512_or_si512(high, v);
    out = encode8(out, v, live);
  }
  return _mm512_test_epi64_mask(high, high_half) == 0 ? out : nullptr;
}

std::uint8_t* encode_token_ids(std::uint8_t* out, std::span<const TokenId> ids) {
  return token_encoder_avx512_available() ? encode_token_ids_avx512(out, ids) : encode_token_ids_scalar(out, ids);
}

}  // namespace kv
