#include "model/block_hasher.h"

// SHA-256 of block messages: model/util/sha256.h (SHA-NI inline, else OpenSSL's block
// function). Of the seed (NONE_HASH, once per hasher): OpenSSL's low-level interface. EVP (the
// recommended one) allocates, frees and cleanses a context per digest, which cost about a third
// of sha256_cbor's hashing time on ~100-byte inputs.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
// Inlined: a ~100-byte input is too short to pay for a call into the shared library.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

#include "model/block_extra_keys.h"
#include "model/cbor_tokens.h"
#include "model/util/check.h"
#include "model/util/sha256.h"

namespace kv {
namespace {

// ---- Canonical CBOR (RFC 8949, shortest-form heads) for the few types vLLM hashes ----
// The writers store at `p` and return the end; callers size the buffer with an upper bound
// first (a head is at most 9 bytes), so the hot loop has no capacity checks.

constexpr std::size_t kMaxHead = 9;

inline std::uint8_t* put_head(std::uint8_t* p, std::uint8_t major, std::uint64_t value) {
  const auto m = static_cast<std::uint8_t>(major << 5);
  if (value < 24) {
    *p = static_cast<std::uint8_t>(m | value);
    return p + 1;
  }
  if (value <= 0xff) {
    p[0] = static_cast<std::uint8_t>(m | 24);
    p[1] = static_cast<std::uint8_t>(value);
    return p + 2;
  }
  if (value <= 0xffff) {
    p[0] = static_cast<std::uint8_t>(m | 25);
    p[1] = static_cast<std::uint8_t>(value >> 8);
    p[2] = static_cast<std::uint8_t>(value);
    return p + 3;
  }
  if (value <= 0xffffffffULL) {
    p[0] = static_cast<std::uint8_t>(m | 26);
    const std::uint32_t be = __builtin_bswap32(static_cast<std::uint32_t>(value));
    std::memcpy(p + 1, &be, 4);
    return p + 5;
  }
  p[0] = static_cast<std::uint8_t>(m | 27);
  const std::uint64_t be = __builtin_bswap64(value);
  std::memcpy(p + 1, &be, 8);
  return p + 9;
}

inline std::uint8_t* put_int(std::uint8_t* p, std::int64_t v) {
  return v >= 0 ? put_head(p, 0, static_cast<std::uint64_t>(v)) : put_head(p, 1, static_cast<std::uint64_t>(-(v + 1)));
}

inline std::uint8_t* put_text(std::uint8_t* p, std::string_view s) {
  p = put_head(p, 3, s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

inline std::uint8_t* put_bytes(std::uint8_t* p, const std::uint8_t* data, std::size_t n) {
  p = put_head(p, 2, n);
  if (n) std::memcpy(p, data, n);
  return p + n;
}

constexpr std::uint8_t kCborNull = 0xf6;

// Bytes past a message that padding it may touch: the 0x80 and 64 zeros, or the length ending
// 72 bytes past a message 8 bytes short of filling its last block.
constexpr std::size_t kPadSlack = 72;

// SHA-256 of a message is taken in place: pad_at pads the message p[0, size) where it lies
// (FIPS 180-4, 5.1.1: 0x80, zeros, the length in bits big-endian; kPadSlack bytes of room past
// it) and returns its number of 64-byte blocks, which are then hashed with no copy into a
// context (model/util/sha256.h; SHA256_Update and SHA256_Final cost about 15% more on such
// messages).
std::size_t pad_at(std::uint8_t* p, std::size_t size) {
  const std::size_t padded = (size + 9 + 63) / 64 * 64;
  p[size] = 0x80;
  // The zeros (at most 63 bytes) are stored as a fixed 64 bytes: a few vector stores, no call.
  std::memset(p + size + 1, 0, 64);
  const std::uint64_t bits = __builtin_bswap64(static_cast<std::uint64_t>(size) * 8);
  std::memcpy(p + padded - 8, &bits, sizeof bits);
  return padded / 64;
}

std::size_t pad_in_place(std::vector<std::uint8_t>& buf, std::size_t size) {
  if (buf.size() < size + kPadSlack) buf.resize(size + kPadSlack);
  return pad_at(buf.data(), size);
}

// Room encode_plain_padded needs for a block of n tokens (a plain block: no extra keys).
constexpr std::size_t plain_bound(std::size_t n) {
  return 3 + 32 + kMaxHead * (n + 1) + 1 + kTokenEncodeSlack + kPadSlack;
}

// The message of a plain block under a 32-byte parent, as encode_block writes it (an array of
// three: the parent's bytes, the ids, null), stored and padded at `out` with the fixed heads
// written as constants. Returns its 64-byte blocks, or 0 when an id needs the general encoder.
std::size_t encode_plain_padded(std::uint8_t* out, const BlockHash& parent, std::span<const TokenId> tokens) {
  out[0] = 0x83;  // array of 3
  out[1] = 0x58;  // byte string, one-byte length
  out[2] = 32;
  std::memcpy(out + 3, parent.bytes.data(), 32);
  std::uint8_t* p = encode_token_ids(put_head(out + 35, 4, tokens.size()), tokens);
  if (p == nullptr) return 0;
  *p++ = kCborNull;
  return pad_at(out, static_cast<std::size_t>(p - out));
}

// Blocks of at most this many tokens, in a job with no extra keys, are encoded by
// extend_stream into a fixed buffer per lane (plain_bound of it bytes, rounded to cache lines).
constexpr std::size_t kMaxPlainLaneTokens = 64;
constexpr std::size_t kPlainLaneBytes = (plain_bound(kMaxPlainLaneTokens) + 63) / 64 * 64;

// A job of BlockHasher::extend_stream being hashed: its next block and how many it has;
// plain: every block is encoded by encode_plain_padded (no extra keys, a short block).
struct Lane {
  HashJob job;
  std::size_t next = 0;
  std::size_t full = 0;
  bool plain = false;
};

// Starts loading the tokens of the lane's block `block` (if it has one). Called with the block
// after the lane's next one, so one whole round of the lanes (its encoding and SHA-256) lies
// between the prefetch and the encoder's read, which then finds them in the cache.
inline void prefetch_tokens(const Lane& lane, std::size_t block) {
  if (block >= lane.full) return;
  const auto size = static_cast<std::size_t>(lane.job.block_size);
  const auto* first = reinterpret_cast<const char*>(lane.job.tokens.data() + block * size);
  const auto* last = reinterpret_cast<const char*>(lane.job.tokens.data() + (block + 1) * size) - 1;
  for (const char* p = first; p <= last; p += 64) __builtin_prefetch(p);
  __builtin_prefetch(last);
}

}  // namespace

const char* to_string(HashAlgo algo) { return algo == HashAlgo::kSha256Cbor ? "sha256_cbor" : "xxhash_cbor"; }

std::optional<HashAlgo> parse_hash_algo(std::string_view text) {
  if (text == "sha256_cbor") return HashAlgo::kSha256Cbor;
  if (text == "xxhash_cbor") return HashAlgo::kXxhashCbor;
  return std::nullopt;
}

std::string BlockHash::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string s(2u * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    s[2 * i] = digits[bytes[i] >> 4];
    s[2 * i + 1] = digits[bytes[i] & 15];
  }
  return s;
}

BlockHasher::BlockHasher(HashAlgo algo, std::string seed) : algo_(algo), seed_(std::move(seed)) {
  std::vector<std::uint8_t> buf(kMaxHead + seed_.size());
  const std::uint8_t* end = put_text(buf.data(), seed_);
  none_hash_ = digest(buf.data(), static_cast<std::size_t>(end - buf.data()));
}

BlockHash BlockHasher::digest(const std::uint8_t* data, std::size_t size) const {
  BlockHash h;
  if (algo_ == HashAlgo::kSha256Cbor) {
    SHA256_CTX ctx;
    const bool ok =
        SHA256_Init(&ctx) == 1 && SHA256_Update(&ctx, data, size) == 1 && SHA256_Final(h.bytes.data(), &ctx) == 1;
    KV_CHECK(ok, "SHA-256 failed");
    h.size = 32;
  } else {
    const XXH128_hash_t x = XXH3_128bits(data, size);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, x);
    std::memcpy(h.bytes.data(), c.digest, 16);
    h.size = 16;
  }
  return h;
}

std::size_t BlockHasher::encode_block(std::vector<std::uint8_t>& buf, const BlockHash& parent,
                                      std::span<const TokenId> block_tokens, const HashExtras& extras,
                                      std::int64_t block_start) const {
  // Extra keys (model/block_extra_keys.h): first counted and bounded, then encoded.
  const std::int64_t block_end = block_start + static_cast<std::int64_t>(block_tokens.size());
  std::size_t n_extra = 0;
  std::size_t bound = 3 * kMaxHead + parent.size + kMaxHead * block_tokens.size() + 1 + kTokenEncodeSlack;
  struct Measure {
    std::size_t& n;
    std::size_t& bound;
    void operator()(const std::string& text) const { ++n, bound += kMaxHead + text.size(); }
    void operator()(const MultiModalItem& mm, std::int64_t) const { ++n, bound += 3 * kMaxHead + mm.identifier.size(); }
  };
  for_each_extra_key(extras, block_start, block_end, Measure{n_extra, bound});
  if (buf.size() < bound) buf.resize(bound);

  std::uint8_t* const begin = buf.data();
  std::uint8_t* p = put_head(begin, 4, 3);
  p = put_bytes(p, parent.bytes.data(), parent.size);
  p = put_head(p, 4, block_tokens.size());
  std::uint8_t* const tokens_begin = p;
  p = encode_token_ids(tokens_begin, block_tokens);
  if (p == nullptr) {  // an id outside [0, 2^32): the general encoder, one id at a time
    p = tokens_begin;
    for (TokenId t : block_tokens) p = put_int(p, t);
  }
  if (n_extra == 0) {
    *p++ = kCborNull;
    return static_cast<std::size_t>(p - begin);
  }
  p = put_head(p, 4, n_extra);
  struct Encode {
    std::uint8_t*& p;
    void operator()(const std::string& text) const { p = put_text(p, text); }
    void operator()(const MultiModalItem& mm, std::int64_t offset) const {
      p = put_head(p, 4, 2);
      p = put_text(p, mm.identifier);
      p = put_int(p, offset);
    }
  };
  for_each_extra_key(extras, block_start, block_end, Encode{p});
  return static_cast<std::size_t>(p - begin);
}

std::vector<std::uint8_t> BlockHasher::cbor_block(const BlockHash& parent, std::span<const TokenId> block_tokens,
                                                  const HashExtras& extras, std::int64_t block_start) const {
  std::vector<std::uint8_t> out;
  out.resize(encode_block(out, parent, block_tokens, extras, block_start));
  return out;
}

BlockHash BlockHasher::hash_block(const BlockHash& parent, std::span<const TokenId> block_tokens,
                                  const HashExtras& extras, std::int64_t block_start) const {
  thread_local std::vector<std::uint8_t> buf;
  if (algo_ == HashAlgo::kSha256Cbor) {
    const std::size_t blocks = encode_padded(buf, parent, block_tokens, extras, block_start);  // may grow buf
    BlockHash h;
    sha256_padded(buf.data(), blocks, h.bytes.data());
    h.size = 32;
    return h;
  }
  return digest(buf.data(), encode_block(buf, parent, block_tokens, extras, block_start));
}

void BlockHasher::extend(std::vector<BlockHash>& hashes, std::span<const TokenId> tokens, int block_size,
                         const HashExtras& extras) const {
  KV_CHECK(block_size > 0);
  const std::size_t full = tokens.size() / static_cast<std::size_t>(block_size);
  if (full > hashes.capacity()) hashes.reserve(std::max(full, 2 * hashes.capacity()));
  for (std::size_t i = hashes.size(); i < full; ++i) {
    const BlockHash& parent = i == 0 ? none_hash_ : hashes[i - 1];
    const std::size_t start = i * static_cast<std::size_t>(block_size);
    // hashes may reallocate below: copy the parent first.
    const BlockHash parent_copy = parent;
    hashes.push_back(hash_block(parent_copy, tokens.subspan(start, static_cast<std::size_t>(block_size)), extras,
                                static_cast<std::int64_t>(start)));
  }
}

std::size_t BlockHasher::encode_padded(std::vector<std::uint8_t>& buf, const BlockHash& parent,
                                       std::span<const TokenId> block_tokens, const HashExtras& extras,
                                       std::int64_t block_start) const {
  const auto block_end = block_start + static_cast<std::int64_t>(block_tokens.size());
  if (parent.size == 32 && !has_extra_keys(extras, block_start, block_end)) {
    const std::size_t bound = plain_bound(block_tokens.size());
    if (buf.size() < bound) buf.resize(bound);
    if (const std::size_t blocks = encode_plain_padded(buf.data(), parent, block_tokens)) return blocks;
  }
  return pad_in_place(buf, encode_block(buf, parent, block_tokens, extras, block_start));
}

std::size_t BlockHasher::encode_padded(std::vector<std::uint8_t>& buf, const HashJob& job, std::size_t block) const {
  const BlockHash& parent = block == 0 ? none_hash_ : (*job.hashes)[block - 1];
  const auto block_size = static_cast<std::size_t>(job.block_size);
  const std::size_t start = block * block_size;
  return encode_padded(buf, parent, job.tokens.subspan(start, block_size), *job.extras,
                       static_cast<std::int64_t>(start));
}

void BlockHasher::extend_all(std::span<const HashJob> jobs) const {
  struct Jobs : HashJobQueue {
    std::span<const HashJob> jobs;
    bool next(HashJob& job) override {
      if (jobs.empty()) return false;
      job = jobs.front();
      jobs = jobs.subspan(1);
      return true;
    }
    void done(const HashJob&) override {}
  } queue;
  queue.jobs = jobs;
  extend_stream(queue);
}

void BlockHasher::extend_stream(HashJobQueue& queue) const {
  thread_local std::array<std::vector<std::uint8_t>, kSha256MaxLanes> bufs;
  alignas(64) thread_local std::array<std::array<std::uint8_t, kPlainLaneBytes>, kSha256MaxLanes> plain_bufs;
  const auto lane_parent = [this](const Lane& lane) -> const BlockHash& {
    return lane.next == 0 ? none_hash_ : (*lane.job.hashes)[lane.next - 1];
  };
  const auto lane_tokens = [](const Lane& lane) {
    const auto size = static_cast<std::size_t>(lane.job.block_size);
    return lane.job.tokens.subspan(lane.next * size, size);
  };
  std::array<Lane, kSha256MaxLanes> lanes;
  std::size_t active = 0;
  while (true) {
    for (HashJob job; active < kSha256MaxLanes && queue.next(job);) {  // every lane busy while jobs last
      KV_CHECK(job.block_size > 0 && job.hashes != nullptr && job.extras != nullptr);
      const std::size_t full = job.tokens.size() / static_cast<std::size_t>(job.block_size);
      if (algo_ != HashAlgo::kSha256Cbor || job.hashes->size() >= full) {  // nothing to hash in lockstep
        extend(*job.hashes, job.tokens, job.block_size, *job.extras);
        queue.done(job);
        continue;
      }
      job.hashes->reserve(full);
      const bool plain =
          has_no_extra_keys(*job.extras) && static_cast<std::size_t>(job.block_size) <= kMaxPlainLaneTokens;
      lanes[active++] = Lane{job, job.hashes->size(), full, plain};
    }
    if (active == 0) return;
    // Each digest is written where it stays: the job's next hash (its vector has room for all
    // of them, so nothing moves while the lanes point into it).
    std::size_t blocks[kSha256MaxLanes];
    const std::uint8_t* data[kSha256MaxLanes];
    std::uint8_t* digests[kSha256MaxLanes];
    for (std::size_t l = 0; l < active; ++l) {
      Lane& lane = lanes[l];
      blocks[l] = lane.plain ? encode_plain_padded(plain_bufs[l].data(), lane_parent(lane), lane_tokens(lane)) : 0;
      if (blocks[l] != 0) {
        data[l] = plain_bufs[l].data();
      } else {  // extra keys, a long block or an id outside [0, 2^32)
        blocks[l] = encode_padded(bufs[l], lane.job, lane.next);
        data[l] = bufs[l].data();
      }
      BlockHash& h = lane.job.hashes->emplace_back();
      h.size = 32;
      digests[l] = h.bytes.data();
    }
    sha256_padded_lanes(data, blocks, active, digests);
    for (std::size_t l = 0; l < active; ++l) {
      ++lanes[l].next;
      prefetch_tokens(lanes[l], lanes[l].next + 1);
    }
    for (std::size_t l = 0; l < active;) {  // a finished lane leaves; the last one takes its slot
      if (lanes[l].next == lanes[l].full) {
        queue.done(lanes[l].job);
        lanes[l] = lanes[--active];
      } else {
        ++l;
      }
    }
  }
}

const char* to_string(FreeOrder order) { return order == FreeOrder::kClassic ? "classic" : "unhashed_first"; }

bool parse_free_order(const std::string& text, FreeOrder* out) {
  if (text == "classic") {
    *out = FreeOrder::kClassic;
    return true;
  }
  if (text == "unhashed_first") {
    *out = FreeOrder::kUnhashedFirst;
    return true;
  }
  return false;
}

}  // namespace kv
