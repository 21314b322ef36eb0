// BlockHasher: chained block hashes bit-exact with vLLM v1 (docs/semantics.md §2).
//
//   hash_i = H(cbor([hash_{i-1} or NONE_HASH, [tokens of block i], extra_keys or null]))
//   NONE_HASH = H(cbor(seed))
//
// H is SHA-256 (OpenSSL) for sha256_cbor or XXH3-128 (libxxhash, canonical big-endian digest)
// for xxhash_cbor. extra_keys holds, in order: the LoRA name (every block), one
// [identifier, item_start - block_start] pair per multimodal item overlapping the block, the
// cache salt (first block only); an empty list is encoded as null.
// Invariants:
//   1. Only full blocks are hashed; a request's hashes are a pure function of its tokens,
//      extras, block size, algorithm and seed.
//   2. extend() never rehashes a block: hashes are computed once, as tokens are appended.
//   3. extend_all and extend_stream leave every job's hashes as extend() would, job by job.
// A BlockHasher is immutable after construction and safe to share between threads.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/block_hash.h"
#include "model/types.h"

namespace kv {

enum class HashAlgo { kSha256Cbor, kXxhashCbor };

// The seed of NONE_HASH when none is configured (vLLM takes it from PYTHONHASHSEED).
inline constexpr std::string_view kDefaultHashSeed = "0";

const char* to_string(HashAlgo algo);
std::optional<HashAlgo> parse_hash_algo(std::string_view text);

// A multimodal input occupying tokens [offset, offset + length) of the prompt.
struct MultiModalItem {
  std::string identifier;
  std::int64_t offset = 0;
  std::int64_t length = 0;
};

// Everything besides tokens that enters a request's block hashes.
struct HashExtras {
  std::string lora_name;                 // empty = no LoRA
  std::string cache_salt;                // empty = no salt (as vLLM: a falsy salt is ignored)
  std::vector<MultiModalItem> mm_items;  // sorted by offset
};

// One request's part of BlockHasher::extend_all: what extend() takes, and the caller's tag.
struct HashJob {
  std::vector<BlockHash>* hashes = nullptr;
  std::span<const TokenId> tokens;
  const HashExtras* extras = nullptr;
  int block_size = 0;
  const void* tag = nullptr;  // not read by the hasher
};

// The jobs of BlockHasher::extend_stream, handed out one at a time as lanes free up.
class HashJobQueue {
 public:
  virtual ~HashJobQueue() = default;
  // The next job into `job`, or false if there is none now (asked again as lanes free up).
  virtual bool next(HashJob& job) = 0;
  // Called once for every job next() gave, after its last hash is appended.
  virtual void done(const HashJob& job) = 0;
};

class BlockHasher {
 public:
  explicit BlockHasher(HashAlgo algo = HashAlgo::kSha256Cbor, std::string seed = std::string(kDefaultHashSeed));

  HashAlgo algo() const { return algo_; }
  const std::string& seed() const { return seed_; }
  const BlockHash& none_hash() const { return none_hash_; }

  // The hash of one block whose first token is at position block_start of the request.
  BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> block_tokens, const HashExtras& extras,
                       std::int64_t block_start) const;

  // Appends to `hashes` the hash of every full block of `tokens` not yet hashed.
  void extend(std::vector<BlockHash>& hashes, std::span<const TokenId> tokens, int block_size,
              const HashExtras& extras) const;

  // extend() for every job, with the same result. On sha256_cbor, the chains of up to
  // kSha256MaxLanes jobs are hashed in lockstep (model/util/sha256.h): one chain's blocks wait
  // on each other, several chains' do not. Jobs must not share a hashes vector.
  void extend_all(std::span<const HashJob> jobs) const;
  // The same over the jobs of `queue`, taken as lanes free up (a long prompt does not leave the
  // other lanes idle until the end of a batch); returns when every lane is empty and next()
  // gives nothing.
  void extend_stream(HashJobQueue& queue) const;

  // The CBOR bytes hashed for one block (exposed for tests and debugging).
  std::vector<std::uint8_t> cbor_block(const BlockHash& parent, std::span<const TokenId> block_tokens,
                                       const HashExtras& extras, std::int64_t block_start) const;

 private:
  BlockHash digest(const std::uint8_t* data, std::size_t size) const;
  // Encodes a block into buf, padded for SHA-256; returns the number of 64-byte blocks. A block
  // with no extra keys under a 32-byte parent (nearly every block) takes a path with the fixed
  // heads written as constants; it gives the same bytes as encode_block.
  std::size_t encode_padded(std::vector<std::uint8_t>& buf, const BlockHash& parent,
                            std::span<const TokenId> block_tokens, const HashExtras& extras,
                            std::int64_t block_start) const;
  // The same for block `block` of the job, its parent from job.hashes.
  std::size_t encode_padded(std::vector<std::uint8_t>& buf, const HashJob& job, std::size_t block) const;
  // Encodes into buf (grown as needed, never shrunk); returns the encoded length.
  std::size_t encode_block(std::vector<std::uint8_t>& buf, const BlockHash& parent,
                           std::span<const TokenId> block_tokens, const HashExtras& extras,
                           std::int64_t block_start) const;

  HashAlgo algo_;
  std::string seed_;
  BlockHash none_hash_;
};

}  // namespace kv
