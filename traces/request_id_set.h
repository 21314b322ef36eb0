// RequestIdSet: the request ids seen so far in a trace, for duplicate detection, in about 40
// bytes an id whatever its length. Each id is kept as its 128-bit XXH3 hash: a false duplicate
// needs a 128-bit collision (probability about n^2 / 2^129, below 10^-26 for 10^6 ids).
// Invariants:
//   1. insert(id) returns false exactly when an equal id was inserted before (up to 1.).
//   2. Memory grows by one 16-byte key (plus the hash set's node) per distinct id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_set>

namespace kv::trace {

class RequestIdSet {
 public:
  bool insert(std::string_view id);  // false: already present
  std::size_t size() const { return keys_.size(); }

 private:
  struct Key {
    std::uint64_t low = 0, high = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return static_cast<std::size_t>(k.low); }
  };
  std::unordered_set<Key, KeyHash> keys_;
};

}  // namespace kv::trace
