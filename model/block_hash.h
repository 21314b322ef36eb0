// BlockHash: the digest identifying a full block's tokens and everything before them.
// 32 bytes for sha256_cbor, 16 for xxhash_cbor; compared and hashed by value. Equality of two
// BlockHash values means equal prefixes (up to collisions of the chosen digest).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace kv {

struct BlockHash {
  std::array<std::uint8_t, 32> bytes{};
  std::uint8_t size = 0;  // 0 = empty (no hash), 16 or 32 otherwise

  bool empty() const { return size == 0; }
  friend bool operator==(const BlockHash& a, const BlockHash& b) {
    if (a.size != b.size) return false;
    // Fixed-size compares of the two digest sizes compile to a few vector instructions.
    if (a.size == 32) return std::memcmp(a.bytes.data(), b.bytes.data(), 32) == 0;
    if (a.size == 16) return std::memcmp(a.bytes.data(), b.bytes.data(), 16) == 0;
    return std::memcmp(a.bytes.data(), b.bytes.data(), a.size) == 0;
  }
  std::string hex() const;
  // The first 8 bytes as an integer: what hash tables and compact logs use.
  std::uint64_t prefix64() const {
    std::uint64_t v;
    std::memcpy(&v, bytes.data(), sizeof v);
    return v;
  }
};

struct BlockHashHasher {
  std::size_t operator()(const BlockHash& h) const { return static_cast<std::size_t>(h.prefix64()); }
};

}  // namespace kv
