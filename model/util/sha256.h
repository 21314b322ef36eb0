// SHA-256 (FIPS 180-4) of a message already padded to whole 64-byte blocks, for the short
// messages of block hashing (about 100 bytes: two blocks).
//
// Two implementations, one result:
//   - the x86 SHA extensions (SHA-NI), inline: state kept in registers across the blocks, no
//     context, no call per block. Used when the CPU has them (cpuid, checked once).
//   - OpenSSL's block function (SHA256_Transform) otherwise.
// On an AMD EPYC with SHA-NI, a two-block message costs 56-65 ns inline against 75-85 ns
// through OpenSSL's block function, and 85-87 ns against 92-117 ns when each message holds the
// previous digest, as a request's blocks do (bench/README.md, "Hashing on the SHA extensions").
// A request's blocks form a chain, each message holding the previous digest, so one chain's
// rounds wait on each other. sha256_padded_lanes hashes up to four messages (of different
// chains) in lockstep, interleaving their rounds: in a bare loop of chained two-block messages,
// 79 ns per message for one chain, 44 for two in lockstep and 39 for four.
// Invariants:
//   1. sha256_padded(data, n, out) == SHA-256 of the unpadded message, whichever path runs
//      (tests/model/util/sha256_test.cc compares both paths with OpenSSL's one-shot SHA256).
//      The same holds for each message of sha256_padded_lanes.
//   2. The path is fixed for the process: sha256_ni_available() does not change.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kv {

// True when this CPU has the SHA extensions (and the SSSE3/SSE4.1 the inline path uses).
bool sha256_ni_available();

// The digest of `blocks` padded 64-byte blocks at `data`, big-endian, into out[0..32).
void sha256_padded(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out);

// Most messages one sha256_padded_lanes call takes.
inline constexpr std::size_t kSha256MaxLanes = 4;

// The digests of `count` (at most kSha256MaxLanes) messages of `blocks` padded blocks each,
// data[n] into out[n]; on SHA-NI, in lockstep.
void sha256_padded_lanes(const std::uint8_t* const* data, std::size_t count, std::size_t blocks,
                         std::uint8_t* const* out);

// The two paths by name, for tests and benchmarks. sha256_padded_ni requires
// sha256_ni_available().
void sha256_padded_ni(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out);
void sha256_padded_openssl(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out);

}  // namespace kv
