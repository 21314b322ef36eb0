#include "model/util/sha256.h"

#define OPENSSL_SUPPRESS_DEPRECATED
#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace kv {
namespace {

using Digest = std::array<std::uint8_t, 32>;
using PaddedFn = void (*)(const std::uint8_t*, std::size_t, std::uint8_t*);

// FIPS 180-4, 5.1.1: the message, 0x80, zeros, and its length in bits big-endian, to 64 bytes.
std::vector<std::uint8_t> pad(const std::vector<std::uint8_t>& message) {
  std::vector<std::uint8_t> out = message;
  out.push_back(0x80);
  while (out.size() % 64 != 56) out.push_back(0);
  const std::uint64_t bits = static_cast<std::uint64_t>(message.size()) * 8;
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(bits >> shift));
  return out;
}

Digest hash_with(PaddedFn fn, const std::vector<std::uint8_t>& message) {
  const std::vector<std::uint8_t> padded = pad(message);
  Digest d{};
  fn(padded.data(), padded.size() / 64, d.data());
  return d;
}

Digest openssl_one_shot(const std::vector<std::uint8_t>& message) {
  Digest d{};
  SHA256(message.data(), message.size(), d.data());
  return d;
}

std::string hex(const Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : d) s += {digits[b >> 4], digits[b & 15]};
  return s;
}

std::vector<std::uint8_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }

// The paths this machine can run: the dispatcher and OpenSSL always, SHA-NI where the CPU has it.
std::vector<std::pair<const char*, PaddedFn>> paths() {
  std::vector<std::pair<const char*, PaddedFn>> out = {{"dispatch", &sha256_padded},
                                                       {"openssl", &sha256_padded_openssl}};
  if (sha256_ni_available()) out.emplace_back("sha-ni", &sha256_padded_ni);
  return out;
}

TEST(Sha256, NistExamplesOfOneAndTwoBlocks) {
  RecordProperty("sha_ni", sha256_ni_available() ? "yes" : "no");
  for (const auto& [name, fn] : paths()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(hex(hash_with(fn, bytes("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hex(hash_with(fn, bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(hex(hash_with(fn, {})), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }
}

TEST(Sha256, EveryLengthUpTo300BytesAgreesWithOpenSslsOneShot) {
  std::mt19937 rng(20261127);
  for (std::size_t length = 0; length <= 300; ++length) {
    std::vector<std::uint8_t> message(length);
    for (auto& b : message) b = static_cast<std::uint8_t>(rng());
    const Digest want = openssl_one_shot(message);
    for (const auto& [name, fn] : paths()) {
      ASSERT_EQ(hex(hash_with(fn, message)), hex(want)) << name << ", " << length << " bytes";
    }
  }
}

using LanesFn = void (*)(const std::uint8_t* const*, const std::size_t*, std::size_t, std::uint8_t* const*);

// The batch paths this machine can run: the dispatcher always, SHA-NI and AVX-512 where the CPU
// has them.
std::vector<std::pair<const char*, LanesFn>> lane_paths() {
  std::vector<std::pair<const char*, LanesFn>> out = {{"dispatch", &sha256_padded_lanes}};
  if (sha256_ni_available()) out.emplace_back("sha-ni", &sha256_lanes_ni);
  if (sha256_avx512_available()) out.emplace_back("avx512", &sha256_lanes_avx512);
  return out;
}

// `count` messages of 1 to 4 padded blocks each (55 bytes more than the blocks before, at
// most): of one length when `mixed` is false, of lengths drawn at random otherwise.
struct Batch {
  std::vector<std::vector<std::uint8_t>> messages, padded;
  std::vector<const std::uint8_t*> data;
  std::vector<std::size_t> blocks;
};
Batch make_batch(std::mt19937& rng, std::size_t count, std::size_t blocks, bool mixed) {
  Batch b;
  for (std::size_t n = 0; n < count; ++n) {
    const std::size_t want = mixed ? 1 + rng() % 4 : blocks;
    std::vector<std::uint8_t> message(64 * (want - 1) + rng() % 56);
    for (auto& byte : message) byte = static_cast<std::uint8_t>(rng());
    b.messages.push_back(message);
    b.padded.push_back(pad(message));
    b.blocks.push_back(want);
  }
  for (const auto& p : b.padded) b.data.push_back(p.data());
  return b;
}

void expect_lanes_match_one_shot(std::mt19937& rng, std::size_t count, std::size_t blocks, bool mixed) {
  const Batch b = make_batch(rng, count, blocks, mixed);
  for (std::size_t n = 0; n < count; ++n) ASSERT_EQ(b.padded[n].size(), 64 * b.blocks[n]);
  for (const auto& [name, fn] : lane_paths()) {
    std::vector<Digest> got(count);
    std::vector<std::uint8_t*> out;
    for (auto& d : got) out.push_back(d.data());
    fn(b.data.data(), b.blocks.data(), count, out.data());
    for (std::size_t n = 0; n < count; ++n) {
      EXPECT_EQ(hex(got[n]), hex(openssl_one_shot(b.messages[n])))
          << name << ": " << count << " messages, " << b.blocks[n] << " blocks, message " << n;
    }
  }
}

TEST(Sha256, LanesHashEachMessageAsOpenSslsOneShot) {
  RecordProperty("avx512", sha256_avx512_available() ? "yes" : "no");
  RecordProperty("lanes_plan", sha256_lanes_plan().describe());
  std::mt19937 rng(27);
  for (std::size_t count = 0; count <= kSha256MaxLanes; ++count) {
    for (std::size_t blocks = 1; blocks <= 4; ++blocks) expect_lanes_match_one_shot(rng, count, blocks, false);
  }
}

// Messages of different lengths in one batch: the AVX-512 lanes that finish early keep their
// state while the longest messages go on; SHA-NI groups the messages of one length.
TEST(Sha256, LanesOfMixedLengthsHashEachMessageAsOpenSslsOneShot) {
  std::mt19937 rng(1128);
  for (int round = 0; round < 40; ++round) {
    expect_lanes_match_one_shot(rng, 1 + rng() % kSha256MaxLanes, 0, true);
  }
}

TEST(Sha256, TheLanesPlanNamesAPathThisCpuHas) {
  const Sha256LanesPlan& plan = sha256_lanes_plan();
  std::printf("sha256 lanes plan: %s (narrow %.1f ns, wide %.1f ns per message)\n", plan.describe().c_str(),
              plan.narrow_ns_per_message, plan.wide_ns_per_message);
  if (!sha256_avx512_available()) {
    EXPECT_GT(plan.wide_from, kSha256MaxLanes);
    return;
  }
  EXPECT_GT(plan.narrow_ns_per_message, 0);
  EXPECT_GT(plan.wide_ns_per_message, 0);
  EXPECT_GE(plan.wide_from, 1u);
  EXPECT_EQ(&plan, &sha256_lanes_plan()) << "measured once";
}

}  // namespace
}  // namespace kv
