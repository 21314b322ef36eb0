// ReferenceHasher: a second, deliberately plain implementation of vLLM v1's block hashing,
// written from docs/semantics.md §2 alone for the tests (no code shared with
// model/block_hasher.cc): its own CBOR encoder, SHA-256 through OpenSSL's EVP interface and
// XXH3-128 through libxxhash.
// Invariants:
//   1. hash_i = H(cbor([parent_i, [tokens of block i], extra_keys_i or null])), parent_0 =
//      NONE_HASH = H(cbor(seed as text)); only full blocks are hashed.
//   2. extra_keys_i, in order: the LoRA name (every block); [identifier, offset - i*B] for each
//      multimodal item whose span [offset, offset + length) intersects [i*B, (i+1)*B), in item
//      order; the salt on block 0 only. Empty strings are no key.
//   3. Pure: the same inputs give the same hashes; nothing is cached between calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/block_hash.h"
#include "model/block_hasher.h"
#include "model/types.h"

namespace kv::props {

class ReferenceHasher {
 public:
  ReferenceHasher(HashAlgo algo, std::string seed);

  const BlockHash& none_hash() const { return none_hash_; }
  // The hashes of every full block of `tokens` (block size `block_size`).
  std::vector<BlockHash> hashes(const std::vector<TokenId>& tokens, int block_size, const HashExtras& extras) const;
  // The CBOR bytes of block `index` given its parent (exposed for the byte-level tests).
  std::vector<std::uint8_t> block_bytes(const BlockHash& parent, const std::vector<TokenId>& tokens, int block_size,
                                        std::size_t index, const HashExtras& extras) const;

 private:
  BlockHash digest(const std::vector<std::uint8_t>& bytes) const;

  HashAlgo algo_;
  BlockHash none_hash_;
};

}  // namespace kv::props
