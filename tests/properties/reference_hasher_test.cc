// ReferenceHasher (properties/reference_hasher.h), the tests' own hasher written from
// docs/semantics.md §2: the test vectors of §2.5, and the boundary rules of every extra key,
// byte for byte, with the project's BlockHasher held to the same bytes and hashes.
#include "properties/reference_hasher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/block_extra_keys.h"
#include "model/block_hasher.h"

namespace kv::props {
namespace {

std::string hex(const std::vector<std::uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::vector<std::string> ref_hex(HashAlgo algo, const std::vector<TokenId>& tokens, const HashExtras& extras = {}) {
  const ReferenceHasher ref(algo, "0");
  std::vector<std::string> out;
  for (const BlockHash& h : ref.hashes(tokens, 4, extras)) out.push_back(h.hex());
  return out;
}

std::vector<TokenId> iota_tokens(TokenId from, TokenId to) {
  std::vector<TokenId> t;
  for (TokenId v = from; v <= to; ++v) t.push_back(v);
  return t;
}

// block_extra_keys() as CBOR (short strings and offsets only, as in these vectors), to hold the
// extra keys the KV events publish to the bytes the hash was computed over.
std::string cbor_hex(const BlockExtraKeys& keys) {
  if (!keys) return "f6";
  std::vector<std::uint8_t> out{static_cast<std::uint8_t>(0x80 + keys->size())};
  const auto text = [&](const std::string& s) {
    out.push_back(static_cast<std::uint8_t>(0x60 + s.size()));
    out.insert(out.end(), s.begin(), s.end());
  };
  for (const ExtraKey& key : *keys) {
    if (const auto* s = std::get_if<std::string>(&key)) {
      text(*s);
      continue;
    }
    const auto& mm = std::get<MultiModalKey>(key);
    out.push_back(0x82);
    text(mm.identifier);
    out.push_back(static_cast<std::uint8_t>(mm.offset >= 0 ? mm.offset : 0x20 + (-1 - mm.offset)));
  }
  return hex(out);
}

// The extra keys of every block of `tokens` (B = 4, tokens below 24): the CBOR after the
// parent (2 + 32 bytes), the array head and 4 one-byte tokens. The project's hasher must
// produce the same bytes and the same hashes.
std::vector<std::string> extra_keys_hex(const std::vector<TokenId>& tokens, const HashExtras& extras) {
  const ReferenceHasher ref(HashAlgo::kSha256Cbor, "0");
  const BlockHasher project(HashAlgo::kSha256Cbor, "0");
  const std::vector<BlockHash> hashes = ref.hashes(tokens, 4, extras);
  std::vector<BlockHash> project_hashes;
  project.extend(project_hashes, tokens, 4, extras);
  EXPECT_EQ(project_hashes, hashes);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    const BlockHash& parent = i == 0 ? ref.none_hash() : hashes[i - 1];
    const std::vector<std::uint8_t> bytes = ref.block_bytes(parent, tokens, 4, i, extras);
    const std::span<const TokenId> block(tokens.data() + 4 * i, 4);
    EXPECT_EQ(hex(project.cbor_block(parent, block, extras, static_cast<std::int64_t>(4 * i))), hex(bytes))
        << "block " << i;
    out.push_back(hex(bytes).substr(2 * (1 + 34 + 1 + 4)));
    const auto start = static_cast<std::int64_t>(4 * i);
    EXPECT_EQ(cbor_hex(block_extra_keys(extras, start, start + 4)), out.back()) << "block " << i;
  }
  return out;
}

TEST(ReferenceHasherTest, SemanticsTestVectors) {
  EXPECT_EQ(ReferenceHasher(HashAlgo::kSha256Cbor, "0").none_hash().hex(),
            "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e");
  EXPECT_EQ(ref_hex(HashAlgo::kSha256Cbor, iota_tokens(1, 9)),
            (std::vector<std::string>{"c9d58ba695280d69b243e1e0df813136ca9196b286fb1a021e0b2e028ef071cb",
                                      "24125b23e68883b5c2141db2959d48433fe6bde2f26bd914efad121d154ab2d6"}));
  HashExtras salt;
  salt.cache_salt = "tenant-a";
  EXPECT_EQ(ref_hex(HashAlgo::kSha256Cbor, {1, 2, 3, 4}, salt),
            (std::vector<std::string>{"5188afdf425172363edc325e9600bdb55cfc0950138d1c11b71ec2ac150962f4"}));
  HashExtras lora;
  lora.lora_name = "adapter1";
  EXPECT_EQ(ref_hex(HashAlgo::kSha256Cbor, iota_tokens(1, 8), lora),
            (std::vector<std::string>{"2b1ef82eb029772559156119f767e8f81310dc506e2e0809ad295c47377d4ec8",
                                      "a607d38b5a23c33ed3d0fdd4b43f6fa0200e154029417e5b1e71db80802ea80e"}));
  EXPECT_EQ(ref_hex(HashAlgo::kSha256Cbor, {1000, 70000, 5000000000, 0}),
            (std::vector<std::string>{"78ee659871810941ecda9562acd29f5b723e2c394afb50db36efcc8af2d237c9"}));
  EXPECT_EQ(ref_hex(HashAlgo::kXxhashCbor, iota_tokens(1, 8)),
            (std::vector<std::string>{"0a8577df5ee3430515a8cc1f6e3ac52e", "d152782cb4d753bde718a811a3b75e23"}));
}

TEST(ReferenceHasherTest, FirstBlockBytesAsInTheSemanticsExample) {
  const ReferenceHasher ref(HashAlgo::kSha256Cbor, "0");
  EXPECT_EQ(hex(ref.block_bytes(ref.none_hash(), {1, 2, 3, 4}, 4, 0, {})),
            "835820" + ref.none_hash().hex() + "8401020304f6");
}

// 83 = array(3) of one pair: 82 (array 2), 63 "img" (text 3), then the offset.
constexpr const char* kImg = "63696d67";

TEST(ReferenceHasherTest, MultimodalItemStartingAtABlockBoundary) {
  HashExtras e;
  e.mm_items = {{"img", 4, 2}};  // tokens [4, 6): block 1 only, at offset 0
  EXPECT_EQ(extra_keys_hex(iota_tokens(0, 11), e),
            (std::vector<std::string>{"f6", std::string("8182") + kImg + "00", "f6"}));
}

TEST(ReferenceHasherTest, MultimodalItemEndingAtABlockBoundary) {
  HashExtras e;
  e.mm_items = {{"img", 2, 2}};  // tokens [2, 4): block 0 only; block 1 starts where it ends
  EXPECT_EQ(extra_keys_hex(iota_tokens(0, 11), e),
            (std::vector<std::string>{std::string("8182") + kImg + "02", "f6", "f6"}));
}

TEST(ReferenceHasherTest, MultimodalItemSpanningThreeBlocks) {
  HashExtras e;
  e.mm_items = {{"img", 2, 8}};  // tokens [2, 10): offsets 2, -2 (0x21), -6 (0x25)
  EXPECT_EQ(extra_keys_hex(iota_tokens(0, 15), e),
            (std::vector<std::string>{std::string("8182") + kImg + "02", std::string("8182") + kImg + "21",
                                      std::string("8182") + kImg + "25", "f6"}));
}

TEST(ReferenceHasherTest, TwoMultimodalItemsInOneBlock) {
  HashExtras e;
  e.mm_items = {{"a", 0, 1}, {"b", 2, 1}};  // both in block 0, in item order
  EXPECT_EQ(extra_keys_hex(iota_tokens(0, 7), e), (std::vector<std::string>{"82"
                                                                            "82"
                                                                            "6161"
                                                                            "00"
                                                                            "82"
                                                                            "6162"
                                                                            "02",
                                                                            "f6"}));
}

TEST(ReferenceHasherTest, SaltAndLoraTogether) {
  HashExtras e;
  e.lora_name = "l1";
  e.cache_salt = "s1";  // LoRA first on block 0, then the salt; LoRA alone afterwards
  EXPECT_EQ(extra_keys_hex(iota_tokens(0, 11), e), (std::vector<std::string>{"82"
                                                                             "626c31"
                                                                             "627331",
                                                                             "81"
                                                                             "626c31",
                                                                             "81"
                                                                             "626c31"}));
}

TEST(ReferenceHasherTest, LoraMultimodalAndSaltInOrder) {
  HashExtras e;
  e.lora_name = "l1";
  e.cache_salt = "s1";
  e.mm_items = {{"img", 3, 2}};  // [3, 5): block 0 at 3, block 1 at -1 (0x20)
  EXPECT_EQ(extra_keys_hex(iota_tokens(0, 7), e),
            (std::vector<std::string>{std::string("83") + "626c31" + "82" + kImg + "03" + "627331",
                                      std::string("82") + "626c31" + "82" + kImg + "20"}));
}

TEST(ReferenceHasherTest, DifferentSaltsOrAdaptersShareNoHash) {
  const std::vector<TokenId> tokens = iota_tokens(0, 15);
  HashExtras a, b, c;
  a.cache_salt = "s1";
  b.cache_salt = "s2";
  c.lora_name = "l1";
  const ReferenceHasher ref(HashAlgo::kSha256Cbor, "0");
  const auto ha = ref.hashes(tokens, 4, a), hb = ref.hashes(tokens, 4, b), hc = ref.hashes(tokens, 4, c),
             plain = ref.hashes(tokens, 4, {});
  for (std::size_t i = 0; i < ha.size(); ++i) {
    EXPECT_NE(ha[i], hb[i]);
    EXPECT_NE(ha[i], plain[i]);
    EXPECT_NE(hc[i], plain[i]);
  }
}

}  // namespace
}  // namespace kv::props
