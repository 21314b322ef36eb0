#include "model/block_hasher.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <cstdio>

#include "model/check.h"

namespace kv {
namespace {

// ---- Canonical CBOR (RFC 8949, shortest-form heads) for the few types vLLM hashes ----

void put_head(std::vector<std::uint8_t>& out, std::uint8_t major, std::uint64_t value) {
  const std::uint8_t m = static_cast<std::uint8_t>(major << 5);
  if (value < 24) {
    out.push_back(static_cast<std::uint8_t>(m | value));
  } else if (value <= 0xff) {
    out.push_back(m | 24);
    out.push_back(static_cast<std::uint8_t>(value));
  } else if (value <= 0xffff) {
    out.push_back(m | 25);
    for (int s = 8; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(value >> s));
  } else if (value <= 0xffffffffULL) {
    out.push_back(m | 26);
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(value >> s));
  } else {
    out.push_back(m | 27);
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(value >> s));
  }
}

void put_int(std::vector<std::uint8_t>& out, std::int64_t v) {
  if (v >= 0) {
    put_head(out, 0, static_cast<std::uint64_t>(v));
  } else {
    put_head(out, 1, static_cast<std::uint64_t>(-(v + 1)));
  }
}

void put_text(std::vector<std::uint8_t>& out, std::string_view s) {
  put_head(out, 3, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void put_bytes(std::vector<std::uint8_t>& out, const std::uint8_t* p, std::size_t n) {
  put_head(out, 2, n);
  out.insert(out.end(), p, p + n);
}

constexpr std::uint8_t kCborNull = 0xf6;

struct EvpState {
  EVP_MD* md = nullptr;
  EVP_MD_CTX* ctx = nullptr;
  EvpState() {
    md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    ctx = EVP_MD_CTX_new();
    KV_CHECK(md != nullptr && ctx != nullptr, "OpenSSL could not provide SHA-256");
  }
  ~EvpState() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
  EvpState(const EvpState&) = delete;
  EvpState& operator=(const EvpState&) = delete;
};

}  // namespace

const char* to_string(HashAlgo algo) {
  return algo == HashAlgo::kSha256Cbor ? "sha256_cbor" : "xxhash_cbor";
}

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
  std::vector<std::uint8_t> buf;
  put_text(buf, seed_);
  none_hash_ = digest(buf.data(), buf.size());
}

BlockHash BlockHasher::digest(const std::uint8_t* data, std::size_t size) const {
  BlockHash h;
  if (algo_ == HashAlgo::kSha256Cbor) {
    thread_local EvpState evp;
    unsigned int len = 0;
    const bool ok = EVP_DigestInit_ex2(evp.ctx, evp.md, nullptr) == 1 &&
                    EVP_DigestUpdate(evp.ctx, data, size) == 1 &&
                    EVP_DigestFinal_ex(evp.ctx, h.bytes.data(), &len) == 1;
    KV_CHECK(ok && len == 32, "SHA-256 failed");
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

void BlockHasher::encode_block(std::vector<std::uint8_t>& out, const BlockHash& parent,
                               std::span<const TokenId> block_tokens, const HashExtras& extras,
                               std::int64_t block_start) const {
  out.clear();
  put_head(out, 4, 3);
  put_bytes(out, parent.bytes.data(), parent.size);
  put_head(out, 4, block_tokens.size());
  for (TokenId t : block_tokens) put_int(out, t);

  // Extra keys, in vLLM's order: LoRA, multimodal items overlapping the block, salt.
  const std::int64_t block_end = block_start + static_cast<std::int64_t>(block_tokens.size());
  std::size_t n_extra = extras.lora_name.empty() ? 0 : 1;
  for (const MultiModalItem& mm : extras.mm_items) {
    if (mm.offset < block_end && mm.offset + mm.length > block_start) ++n_extra;
  }
  const bool salted = block_start == 0 && !extras.cache_salt.empty();
  if (salted) ++n_extra;
  if (n_extra == 0) {
    out.push_back(kCborNull);
    return;
  }
  put_head(out, 4, n_extra);
  if (!extras.lora_name.empty()) put_text(out, extras.lora_name);
  for (const MultiModalItem& mm : extras.mm_items) {
    if (mm.offset < block_end && mm.offset + mm.length > block_start) {
      put_head(out, 4, 2);
      put_text(out, mm.identifier);
      put_int(out, mm.offset - block_start);
    }
  }
  if (salted) put_text(out, extras.cache_salt);
}

std::vector<std::uint8_t> BlockHasher::cbor_block(const BlockHash& parent,
                                                  std::span<const TokenId> block_tokens,
                                                  const HashExtras& extras,
                                                  std::int64_t block_start) const {
  std::vector<std::uint8_t> out;
  encode_block(out, parent, block_tokens, extras, block_start);
  return out;
}

BlockHash BlockHasher::hash_block(const BlockHash& parent, std::span<const TokenId> block_tokens,
                                  const HashExtras& extras, std::int64_t block_start) const {
  thread_local std::vector<std::uint8_t> buf;
  encode_block(buf, parent, block_tokens, extras, block_start);
  return digest(buf.data(), buf.size());
}

void BlockHasher::extend(std::vector<BlockHash>& hashes, std::span<const TokenId> tokens,
                         int block_size, const HashExtras& extras) const {
  KV_CHECK(block_size > 0);
  const std::size_t full = tokens.size() / static_cast<std::size_t>(block_size);
  for (std::size_t i = hashes.size(); i < full; ++i) {
    const BlockHash& parent = i == 0 ? none_hash_ : hashes[i - 1];
    const std::size_t start = i * static_cast<std::size_t>(block_size);
    // hashes may reallocate below: copy the parent first.
    const BlockHash parent_copy = parent;
    hashes.push_back(hash_block(parent_copy, tokens.subspan(start, static_cast<std::size_t>(block_size)),
                                extras, static_cast<std::int64_t>(start)));
  }
}

const char* to_string(FreeOrder order) {
  return order == FreeOrder::kClassic ? "classic" : "unhashed_first";
}

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
