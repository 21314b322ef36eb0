#include "model/cbor_tokens.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace kv {
namespace {

using Encoder = std::uint8_t* (*)(std::uint8_t*, std::span<const TokenId>);

std::vector<std::uint8_t> encode_with(Encoder encoder, const std::vector<TokenId>& ids) {
  std::vector<std::uint8_t> out(5 * ids.size() + kTokenEncodeSlack, 0xee);
  const std::uint8_t* end = encoder(out.data(), ids);
  if (end == nullptr) {
    ADD_FAILURE() << "ids in [0, 2^32) refused";
    return {};
  }
  out.resize(static_cast<std::size_t>(end - out.data()));
  return out;
}

// The encoders this machine can run: the dispatcher and the scalar one always, AVX-512 where
// the CPU has it.
std::vector<std::pair<const char*, Encoder>> encoders() {
  std::vector<std::pair<const char*, Encoder>> out = {{"dispatch", &encode_token_ids},
                                                      {"scalar", &encode_token_ids_scalar}};
  if (token_encoder_avx512_available()) out.emplace_back("avx512", &encode_token_ids_avx512);
  return out;
}

TEST(CborTokens, ShortestFormAtEverySizeBoundary) {
  RecordProperty("avx512", token_encoder_avx512_available() ? "yes" : "no");
  const std::vector<TokenId> ids = {0, 23, 24, 255, 256, 65535, 65536, 4294967295};
  const std::vector<std::uint8_t> want = {0x00, 0x17, 0x18, 0x18, 0x18, 0xff, 0x19, 0x01, 0x00, 0x19, 0xff,
                                          0xff, 0x1a, 0x00, 0x01, 0x00, 0x00, 0x1a, 0xff, 0xff, 0xff, 0xff};
  for (const auto& [name, encoder] : encoders()) EXPECT_EQ(encode_with(encoder, ids), want) << name;
}

TEST(CborTokens, EveryLengthAndMixOfSizesMatchesTheScalarEncoder) {
  std::mt19937_64 rng(20261127);
  // Ids drawn from each size class, so that a run mixes lengths 1, 2, 3 and 5.
  const std::uint64_t limits[] = {24, 256, 65536, 1ULL << 32};
  for (std::size_t count = 0; count <= 40; ++count) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<TokenId> ids(count);
      for (auto& id : ids) id = static_cast<TokenId>(rng() % limits[rng() % 4]);
      const auto want = encode_with(&encode_token_ids_scalar, ids);
      for (const auto& [name, encoder] : encoders()) {
        ASSERT_EQ(encode_with(encoder, ids), want) << name << ", " << count << " ids";
      }
    }
  }
}

TEST(CborTokens, IdsOutsideU32AreLeftToTheCaller) {
  for (const auto& [name, encoder] : encoders()) {
    std::vector<std::uint8_t> out(5 * 9 + kTokenEncodeSlack);
    EXPECT_NE(encoder(out.data(), std::vector<TokenId>{}), nullptr) << name;
    EXPECT_NE(encoder(out.data(), std::vector<TokenId>{0, 4294967295}), nullptr) << name;
    EXPECT_EQ(encoder(out.data(), std::vector<TokenId>{1, 4294967296}), nullptr) << name;
    EXPECT_EQ(encoder(out.data(), std::vector<TokenId>{-1, 5}), nullptr) << name;
    // In the tail of nine ids (one full vector, then one id) as in the first vector.
    EXPECT_EQ(encoder(out.data(), std::vector<TokenId>{1, 2, 3, 4, 5, 6, 7, 8, -7}), nullptr) << name;
  }
}

}  // namespace
}  // namespace kv
