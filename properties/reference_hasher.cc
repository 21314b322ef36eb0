#include "properties/reference_hasher.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include "model/util/check.h"

namespace kv::props {

namespace {

// RFC 8949 head: major type in the top 3 bits, the argument in the shortest form.
void head(std::vector<std::uint8_t>& out, int major, std::uint64_t arg) {
  const auto type = static_cast<std::uint8_t>(major << 5);
  int extra_bytes = 0;
  if (arg < 24) {
    out.push_back(static_cast<std::uint8_t>(type | arg));
    return;
  } else if (arg <= 0xff) {
    out.push_back(type | 24);
    extra_bytes = 1;
  } else if (arg <= 0xffff) {
    out.push_back(type | 25);
    extra_bytes = 2;
  } else if (arg <= 0xffffffffULL) {
    out.push_back(type | 26);
    extra_bytes = 4;
  } else {
    out.push_back(type | 27);
    extra_bytes = 8;
  }
  for (int i = extra_bytes - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(arg >> (8 * i)));
}

void integer(std::vector<std::uint8_t>& out, std::int64_t v) {
  if (v >= 0) {
    head(out, 0, static_cast<std::uint64_t>(v));
  } else {
    head(out, 1, static_cast<std::uint64_t>(-(v + 1)));
  }
}

void text(std::vector<std::uint8_t>& out, const std::string& s) {
  head(out, 3, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void bytes(std::vector<std::uint8_t>& out, const BlockHash& h) {
  head(out, 2, h.size);
  out.insert(out.end(), h.bytes.begin(), h.bytes.begin() + h.size);
}

}  // namespace

ReferenceHasher::ReferenceHasher(HashAlgo algo, std::string seed) : algo_(algo) {
  std::vector<std::uint8_t> cbor;
  text(cbor, seed);
  none_hash_ = digest(cbor);
}

BlockHash ReferenceHasher::digest(const std::vector<std::uint8_t>& data) const {
  BlockHash h;
  if (algo_ == HashAlgo::kSha256Cbor) {
    unsigned int len = 0;
    const int ok = EVP_Digest(data.data(), data.size(), h.bytes.data(), &len, EVP_sha256(), nullptr);
    KV_CHECK(ok == 1 && len == 32);
    h.size = 32;
    return h;
  }
  const XXH128_hash_t x = XXH3_128bits(data.data(), data.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, x);
  for (int i = 0; i < 16; ++i) h.bytes[static_cast<std::size_t>(i)] = canonical.digest[i];
  h.size = 16;
  return h;
}

std::vector<std::uint8_t> ReferenceHasher::block_bytes(const BlockHash& parent, const std::vector<TokenId>& tokens,
                                                       int block_size, std::size_t index,
                                                       const HashExtras& extras) const {
  const auto b = static_cast<std::int64_t>(block_size);
  const std::int64_t start = static_cast<std::int64_t>(index) * b;
  std::vector<std::uint8_t> keys;
  std::uint64_t num_keys = 0;
  if (!extras.lora_name.empty()) {
    text(keys, extras.lora_name);
    ++num_keys;
  }
  for (const MultiModalItem& item : extras.mm_items) {
    const bool overlaps = item.offset < start + b && item.offset + item.length > start;
    if (!overlaps) continue;
    head(keys, 4, 2);
    text(keys, item.identifier);
    integer(keys, item.offset - start);
    ++num_keys;
  }
  if (index == 0 && !extras.cache_salt.empty()) {
    text(keys, extras.cache_salt);
    ++num_keys;
  }
  std::vector<std::uint8_t> out;
  head(out, 4, 3);
  bytes(out, parent);
  head(out, 4, static_cast<std::uint64_t>(b));
  for (std::int64_t t = start; t < start + b; ++t) integer(out, tokens[static_cast<std::size_t>(t)]);
  if (num_keys == 0) {
    out.push_back(0xf6);
  } else {
    head(out, 4, num_keys);
    out.insert(out.end(), keys.begin(), keys.end());
  }
  return out;
}

std::vector<BlockHash> ReferenceHasher::hashes(const std::vector<TokenId>& tokens, int block_size,
                                               const HashExtras& extras) const {
  std::vector<BlockHash> out;
  const std::size_t full = tokens.size() / static_cast<std::size_t>(block_size);
  for (std::size_t i = 0; i < full; ++i) {
    const BlockHash& parent = i == 0 ? none_hash_ : out.back();
    out.push_back(digest(block_bytes(parent, tokens, block_size, i, extras)));
  }
  return out;
}

}  // namespace kv::props
