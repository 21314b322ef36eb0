// BlockHasher: the test vectors of docs/semantics.md §2.5, computed by vLLM, and the
// shape of the CBOR that goes into each hash.
#include "model/block_hasher.h"

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <random>
#include <span>
#include <string>
#include <vector>

#include "model/request.h"

namespace kv {
namespace {

std::vector<std::string> hex_all(const std::vector<BlockHash>& hashes) {
  std::vector<std::string> out;
  for (const BlockHash& h : hashes) out.push_back(h.hex());
  return out;
}

std::vector<std::string> hash_request(HashAlgo algo, std::vector<TokenId> tokens, HashExtras extras = {},
                                      int block_size = 4) {
  const BlockHasher hasher(algo, "0");
  std::vector<BlockHash> hashes;
  hasher.extend(hashes, tokens, block_size, extras);
  return hex_all(hashes);
}

std::string hex(const std::vector<std::uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

constexpr const char* kNoneHashSeed0 = "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e";

TEST(BlockHasherTest, NoneHashIsSha256OfCborSeed) {
  const BlockHasher hasher(HashAlgo::kSha256Cbor, "0");
  EXPECT_EQ(hasher.none_hash().hex(), kNoneHashSeed0);
  EXPECT_EQ(hasher.none_hash().size, 32);
  // Another seed, another chain root.
  const BlockHasher other(HashAlgo::kSha256Cbor, "1");
  EXPECT_NE(other.none_hash().hex(), kNoneHashSeed0);
}

TEST(BlockHasherTest, Tokens1To9HashTwoFullBlocks) {
  // The ninth token is a partial block: never hashed.
  EXPECT_EQ(hash_request(HashAlgo::kSha256Cbor, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
            (std::vector<std::string>{"c9d58ba695280d69b243e1e0df813136ca9196b286fb1a021e0b2e028ef071cb",
                                      "24125b23e68883b5c2141db2959d48433fe6bde2f26bd914efad121d154ab2d6"}));
}

TEST(BlockHasherTest, CacheSaltTenantA) {
  HashExtras extras;
  extras.cache_salt = "tenant-a";
  EXPECT_EQ(hash_request(HashAlgo::kSha256Cbor, {1, 2, 3, 4}, extras),
            (std::vector<std::string>{"5188afdf425172363edc325e9600bdb55cfc0950138d1c11b71ec2ac150962f4"}));
}

TEST(BlockHasherTest, LoraAdapter1) {
  HashExtras extras;
  extras.lora_name = "adapter1";
  EXPECT_EQ(hash_request(HashAlgo::kSha256Cbor, {1, 2, 3, 4, 5, 6, 7, 8}, extras),
            (std::vector<std::string>{"2b1ef82eb029772559156119f767e8f81310dc506e2e0809ad295c47377d4ec8",
                                      "a607d38b5a23c33ed3d0fdd4b43f6fa0200e154029417e5b1e71db80802ea80e"}));
}

TEST(BlockHasherTest, BigTokensUseWiderCborHeads) {
  EXPECT_EQ(hash_request(HashAlgo::kSha256Cbor, {1000, 70000, 5000000000, 0}),
            (std::vector<std::string>{"78ee659871810941ecda9562acd29f5b723e2c394afb50db36efcc8af2d237c9"}));
  const BlockHasher hasher;
  const std::vector<TokenId> tokens{1000, 70000, 5000000000, 0};
  const std::string cbor = hex(hasher.cbor_block(hasher.none_hash(), tokens, {}, 0));
  // 1000 -> 19 03e8, 70000 -> 1a 00011170, 5000000000 -> 1b 000000012a05f200, 0 -> 00.
  EXPECT_EQ(cbor.substr(2 * 35),
            "84"
            "1903e8"
            "1a00011170"
            "1b000000012a05f200"
            "00"
            "f6");
}

TEST(BlockHasherTest, EveryHeadSizeAtItsBoundaries) {
  const BlockHasher hasher;
  const std::vector<TokenId> tokens{23, 24, 255, 256, 65535, 65536, 4294967295, 4294967296};
  const std::string cbor = hex(hasher.cbor_block(hasher.none_hash(), tokens, {}, 0));
  EXPECT_EQ(cbor.substr(2 * 35),
            "88"
            "17"
            "1818"
            "18ff"
            "190100"
            "19ffff"
            "1a00010000"
            "1affffffff"
            "1b0000000100000000"
            "f6");
}

TEST(BlockHasherTest, XxhashTokens1To8) {
  const auto hashes = hash_request(HashAlgo::kXxhashCbor, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(hashes, (std::vector<std::string>{"0a8577df5ee3430515a8cc1f6e3ac52e", "d152782cb4d753bde718a811a3b75e23"}));
  const BlockHasher hasher(HashAlgo::kXxhashCbor, "0");
  EXPECT_EQ(hasher.none_hash().size, 16);
}

TEST(BlockHasherTest, CborBytesOfTheFirstBlock) {
  const BlockHasher hasher;
  const std::vector<TokenId> tokens{1, 2, 3, 4};
  const auto bytes = hasher.cbor_block(hasher.none_hash(), tokens, {}, 0);
  // array(3), bytes(32) NONE_HASH, array(4) 1 2 3 4, null.
  EXPECT_EQ(hex(bytes), std::string("835820") + kNoneHashSeed0 + "8401020304" + "f6");
  EXPECT_EQ(bytes.size(), 1u + 2u + 32u + 5u + 1u);
  EXPECT_EQ(hasher.hash_block(hasher.none_hash(), tokens, {}, 0).hex(),
            "c9d58ba695280d69b243e1e0df813136ca9196b286fb1a021e0b2e028ef071cb");
}

TEST(BlockHasherTest, ExtraKeysInOrderLoraThenMultimodalThenSalt) {
  const BlockHasher hasher;
  HashExtras extras;
  extras.lora_name = "L";
  extras.cache_salt = "s";
  extras.mm_items = {{"m1", 1, 2}};
  const std::vector<TokenId> tokens{1, 2, 3, 4};
  const std::string cbor = hex(hasher.cbor_block(hasher.none_hash(), tokens, extras, 0));
  // After the parent and the tokens: array(3) of "L", ["m1", 1], "s".
  EXPECT_EQ(cbor.substr(2 * 35),
            "8401020304"
            "83"
            "614c"
            "82"
            "626d31"
            "01"
            "6173");
}

TEST(BlockHasherTest, SaltEntersOnlyTheFirstBlock) {
  const BlockHasher hasher;
  HashExtras salted;
  salted.cache_salt = "tenant-a";
  const std::vector<TokenId> tokens{5, 6, 7, 8};
  const BlockHash parent = hasher.none_hash();
  // Block 1 (block_start 4) carries no extra keys at all: null.
  EXPECT_EQ(hex(hasher.cbor_block(parent, tokens, salted, 4)), hex(hasher.cbor_block(parent, tokens, {}, 4)));
  EXPECT_EQ(hex(hasher.cbor_block(parent, tokens, salted, 4)).substr(2 * 35), "8405060708f6");
  // Block 0 ends in array(1) "tenant-a".
  EXPECT_EQ(hex(hasher.cbor_block(parent, tokens, salted, 0)).substr(2 * 35),
            "8405060708"
            "81"
            "6874656e616e742d61");

  // Whole requests: the salt changes block 0, so it changes every later block through the
  // chain, but block 1 is hashed exactly as an unsalted block 1 with the same parent.
  const std::vector<TokenId> eight{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<BlockHash> with_salt, without;
  hasher.extend(with_salt, eight, 4, salted);
  hasher.extend(without, eight, 4, {});
  ASSERT_EQ(with_salt.size(), 2u);
  EXPECT_EQ(with_salt[0].hex(), "5188afdf425172363edc325e9600bdb55cfc0950138d1c11b71ec2ac150962f4");
  EXPECT_NE(with_salt[1], without[1]);
  EXPECT_EQ(with_salt[1], hasher.hash_block(with_salt[0], std::span(eight).subspan(4), {}, 4));
}

TEST(BlockHasherTest, LoraEntersEveryBlock) {
  const BlockHasher hasher;
  HashExtras lora;
  lora.lora_name = "adapter1";
  const std::vector<TokenId> tokens{5, 6, 7, 8};
  EXPECT_EQ(hex(hasher.cbor_block(hasher.none_hash(), tokens, lora, 4)).substr(2 * 35),
            "8405060708"
            "81"
            "6861646170746572"
            "31");
}

TEST(BlockHasherTest, MultimodalOffsetsAreRelativeToEachOverlappedBlock) {
  const BlockHasher hasher;
  HashExtras extras;
  // Item "img" covers tokens [2, 7): blocks 0 and 1 of size 4, not block 2.
  extras.mm_items = {{"img", 2, 5}};
  const std::vector<TokenId> tokens{9, 9, 9, 9};
  const BlockHash parent = hasher.none_hash();
  // Block 0: ["img", 2].
  EXPECT_EQ(hex(hasher.cbor_block(parent, tokens, extras, 0)).substr(2 * 35),
            "8409090909"
            "81"
            "82"
            "63696d67"
            "02");
  // Block 1 starts at 4: the item began 2 tokens before it, offset -2 (CBOR 0x21).
  EXPECT_EQ(hex(hasher.cbor_block(parent, tokens, extras, 4)).substr(2 * 35),
            "8409090909"
            "81"
            "82"
            "63696d67"
            "21");
  // Block 2 starts at 8, after the item ended at 7: no extra keys.
  EXPECT_EQ(hex(hasher.cbor_block(parent, tokens, extras, 8)).substr(2 * 35), "8409090909f6");

  // Two items in one block keep their order; an item ending exactly at a block start does not
  // overlap that block.
  extras.mm_items = {{"a", 0, 4}, {"b", 5, 1}};
  EXPECT_EQ(hex(hasher.cbor_block(parent, tokens, extras, 4)).substr(2 * 35),
            "8409090909"
            "81"
            "82"
            "6162"
            "01");
  extras.mm_items = {{"a", 4, 1}, {"b", 6, 3}};
  EXPECT_EQ(hex(hasher.cbor_block(parent, tokens, extras, 4)).substr(2 * 35),
            "8409090909"
            "82"
            "82"
            "6161"
            "00"
            "82"
            "6162"
            "02");
}

TEST(BlockHasherTest, IncrementalExtensionEqualsOneShot) {
  for (HashAlgo algo : {HashAlgo::kSha256Cbor, HashAlgo::kXxhashCbor}) {
    const BlockHasher hasher(algo, "0");
    HashExtras extras;
    extras.cache_salt = "tenant-a";
    extras.lora_name = "adapter1";
    std::vector<TokenId> tokens;
    for (TokenId t = 0; t < 37; ++t) tokens.push_back(t * 7919);

    std::vector<BlockHash> one_shot;
    hasher.extend(one_shot, tokens, 4, extras);
    ASSERT_EQ(one_shot.size(), 9u);

    // Through a Request, one token at a time after a 5-token prompt.
    Request r("r", {tokens.begin(), tokens.begin() + 5}, extras, &hasher, 4);
    EXPECT_EQ(r.block_hashes().size(), 1u);
    for (std::size_t i = 5; i < tokens.size(); ++i) {
      const std::vector<BlockHash> before = r.block_hashes();
      r.append_tokens(std::span(tokens).subspan(i, 1));
      // Earlier hashes never change; a hash appears exactly when its block fills up.
      ASSERT_EQ(r.block_hashes().size(), (i + 1) / 4);
      for (std::size_t j = 0; j < before.size(); ++j) EXPECT_EQ(r.block_hashes()[j], before[j]);
    }
    EXPECT_EQ(hex_all(r.block_hashes()), hex_all(one_shot));

    // In uneven chunks through extend.
    std::vector<BlockHash> chunked;
    for (std::size_t n : {3u, 3u, 11u, 12u, 37u}) {
      hasher.extend(chunked, std::span(tokens).first(n), 4, extras);
    }
    EXPECT_EQ(hex_all(chunked), hex_all(one_shot));
  }
}

// Random jobs for extend_all: prompts of 0-300 tokens, block sizes 1, 16, 32 and 80, ids of every
// CBOR width (and a few past 2^32), some with a LoRA name, a salt or multimodal items (so the
// lanes' messages differ in length), some already partly hashed.
struct RandomJobs {
  std::vector<std::vector<TokenId>> tokens;
  std::vector<HashExtras> extras;
  std::vector<int> block_sizes;
  std::vector<std::size_t> prehashed;  // blocks hashed by extend() before extend_all
};

RandomJobs random_jobs(std::mt19937_64& rng, std::size_t count) {
  RandomJobs jobs;
  const std::int64_t widths[] = {23, 255, 65535, 4294967295LL, 1LL << 40};
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<TokenId> tokens(rng() % 301);
    const std::int64_t width = widths[rng() % (rng() % 8 == 0 ? 5 : 4)];
    for (TokenId& t : tokens) t = static_cast<TokenId>(rng() % static_cast<std::uint64_t>(width + 1));
    HashExtras extras;
    if (rng() % 4 == 0) extras.lora_name = std::string(rng() % 80, 'l');
    if (rng() % 4 == 0) extras.cache_salt = "tenant-" + std::to_string(rng() % 1000);
    if (rng() % 4 == 0) extras.mm_items.push_back({std::string(64, 'm'), static_cast<std::int64_t>(rng() % 100), 40});
    jobs.tokens.push_back(std::move(tokens));
    jobs.extras.push_back(std::move(extras));
    const int sizes[] = {1, 16, 32, 80};  // 80: past the lanes' fixed buffers for plain blocks
    jobs.block_sizes.push_back(sizes[rng() % 4]);
    jobs.prehashed.push_back(rng() % 3 == 0 ? rng() % 4 : 0);
  }
  return jobs;
}

// The hash of every block is SHA-256 of the CBOR bytes cbor_block gives, whichever encoder
// wrote the message (the plain path for blocks with no extra keys, the general one otherwise):
// checked against OpenSSL's one-shot SHA-256, for random blocks and for every message length
// around the padding boundary (55 and 56 bytes past a multiple of 64).
std::string openssl_hex(const std::vector<std::uint8_t>& bytes) {
  BlockHash h;
  SHA256(bytes.data(), bytes.size(), h.bytes.data());
  h.size = 32;
  return h.hex();
}

TEST(BlockHasherTest, EveryBlockHashIsSha256OfItsCborBytes) {
  const BlockHasher hasher;
  std::mt19937_64 rng(7);
  const RandomJobs r = random_jobs(rng, 60);
  for (std::size_t i = 0; i < r.tokens.size(); ++i) {
    const auto size = static_cast<std::size_t>(r.block_sizes[i]);
    BlockHash parent = hasher.none_hash();
    for (std::size_t start = 0; start + size <= r.tokens[i].size(); start += size) {
      const std::span<const TokenId> block = std::span(r.tokens[i]).subspan(start, size);
      const auto at = static_cast<std::int64_t>(start);
      const BlockHash h = hasher.hash_block(parent, block, r.extras[i], at);
      ASSERT_EQ(h.hex(), openssl_hex(hasher.cbor_block(parent, block, r.extras[i], at))) << "job " << i;
      parent = h;
    }
  }
  // Messages of 38 to 130 bytes: 37 + n one-byte ids under a one-byte array head, more past 23.
  for (std::size_t n = 1; n <= 90; ++n) {
    const std::vector<TokenId> block(n, 7);
    const std::vector<std::uint8_t> cbor = hasher.cbor_block(hasher.none_hash(), block, {}, 0);
    EXPECT_EQ(hasher.hash_block(hasher.none_hash(), block, {}, 0).hex(), openssl_hex(cbor))
        << n << " ids, " << cbor.size() << " bytes";
  }
}

TEST(BlockHasherTest, ExtendAllEqualsExtendJobByJob) {
  std::mt19937_64 rng(20261127);
  for (HashAlgo algo : {HashAlgo::kSha256Cbor, HashAlgo::kXxhashCbor}) {
    const BlockHasher hasher(algo, "0");
    for (std::size_t count : {0, 1, 2, 3, 4, 5, 9, 40}) {
      const RandomJobs r = random_jobs(rng, count);
      std::vector<std::vector<BlockHash>> want(count), got(count);
      std::vector<HashJob> jobs;
      for (std::size_t i = 0; i < count; ++i) {
        const int bs = r.block_sizes[i];
        const std::span<const TokenId> all(r.tokens[i]);
        const std::size_t head = std::min(r.tokens[i].size(), r.prehashed[i] * static_cast<std::size_t>(bs));
        hasher.extend(got[i], all.first(head), bs, r.extras[i]);
        hasher.extend(want[i], all, bs, r.extras[i]);
        jobs.push_back(HashJob{&got[i], all, &r.extras[i], bs});
      }
      hasher.extend_all(jobs);
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(hex_all(got[i]), hex_all(want[i])) << to_string(algo) << ", " << count << " jobs, job " << i;
      }
    }
  }
}

TEST(BlockHasherTest, RequestWithoutHasherHasNoHashes) {
  Request r("r", {1, 2, 3, 4, 5, 6, 7, 8}, {}, nullptr, 4);
  EXPECT_TRUE(r.block_hashes().empty());
  r.append_tokens(std::vector<TokenId>{9, 10, 11, 12});
  EXPECT_TRUE(r.block_hashes().empty());
  EXPECT_EQ(r.num_tokens(), 12);
  EXPECT_EQ(r.num_prompt_tokens(), 8);
  EXPECT_EQ(r.num_output_tokens(), 4);
}

TEST(BlockHasherTest, ParsesAlgorithmNames) {
  EXPECT_EQ(parse_hash_algo("sha256_cbor"), HashAlgo::kSha256Cbor);
  EXPECT_EQ(parse_hash_algo("xxhash_cbor"), HashAlgo::kXxhashCbor);
  EXPECT_EQ(parse_hash_algo("sha256"), std::nullopt);
  EXPECT_STREQ(to_string(HashAlgo::kSha256Cbor), "sha256_cbor");
  EXPECT_STREQ(to_string(HashAlgo::kXxhashCbor), "xxhash_cbor");
}

}  // namespace
}  // namespace kv
