// CBOR encoding of a block's token ids: the inner array of the block message that
// model/block_hasher.h hashes, the one part of the encoding whose length grows with the block.
//
// Each id in [0, 2^32) is an unsigned integer in its shortest form (RFC 8949, 4.2.1): 1 byte
// below 24, else a head byte (24, 25, 26) and 1, 2 or 4 big-endian bytes. Two encoders:
//   - scalar, branch-free per token (ids spread over the vocabulary would mispredict a branch
//     on the size about every other token);
//   - AVX-512 (F, BW, VBMI2), eight ids per step: every id's encoded word and length side by
//     side, then the valid bytes packed together with one byte compress. Used when the CPU has
//     it (checked once).
// Invariants:
//   1. encode_token_ids writes exactly the bytes the scalar encoder writes, on either path
//      (tests/model/cbor_tokens_test.cc compares them on every size boundary).
//   2. Only ids in [0, 2^32) are encoded; given any other, the encoders return nullptr and the
//      caller encodes the block one id at a time (negative or wider ids take other heads).
//   3. The output needs kTokenEncodeSlack bytes past the encoded length: both encoders store
//      whole words and advance by the encoded length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "model/types.h"

namespace kv {

// Bytes an encoder may store beyond the end of what it encodes.
inline constexpr std::size_t kTokenEncodeSlack = 64;

// Encodes the ids at `out` and returns the end of the encoding, or nullptr (having stored
// garbage) when an id is outside [0, 2^32).
std::uint8_t* encode_token_ids(std::uint8_t* out, std::span<const TokenId> ids);

// The two paths by name, for tests and benchmarks. encode_token_ids_avx512 requires
// token_encoder_avx512_available().
bool token_encoder_avx512_available();
std::uint8_t* encode_token_ids_scalar(std::uint8_t* out, std::span<const TokenId> ids);
std::uint8_t* encode_token_ids_avx512(std::uint8_t* out, std::span<const TokenId> ids);

}  // namespace kv
