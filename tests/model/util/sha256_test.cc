#include "model/util/sha256.h"

#define OPENSSL_SUPPRESS_DEPRECATED
#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <array>
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

TEST(Sha256, LanesHashEachMessageAsOpenSslsOneShot) {
  std::mt19937 rng(27);
  for (std::size_t count = 0; count <= kSha256MaxLanes; ++count) {
    for (std::size_t blocks = 1; blocks <= 4; ++blocks) {
      // Messages whose padding takes `blocks` blocks: 55 bytes more than the blocks before.
      std::vector<std::vector<std::uint8_t>> messages, padded;
      std::vector<const std::uint8_t*> data;
      std::vector<Digest> got(count);
      std::vector<std::uint8_t*> out;
      for (std::size_t n = 0; n < count; ++n) {
        std::vector<std::uint8_t> message(64 * (blocks - 1) + rng() % 56);
        for (auto& b : message) b = static_cast<std::uint8_t>(rng());
        messages.push_back(message);
        padded.push_back(pad(message));
        ASSERT_EQ(padded.back().size(), 64 * blocks);
        out.push_back(got[n].data());
      }
      for (const auto& p : padded) data.push_back(p.data());
      sha256_padded_lanes(data.data(), count, blocks, out.data());
      for (std::size_t n = 0; n < count; ++n) {
        EXPECT_EQ(hex(got[n]), hex(openssl_one_shot(messages[n])))
            << count << " lanes, " << blocks << " blocks, lane " << n;
      }
    }
  }
}

}  // namespace
}  // namespace kv
