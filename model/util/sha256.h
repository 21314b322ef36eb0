// SHA-256 (FIPS 180-4) of a message already padded to whole 64-byte blocks, for the short
// messages of block hashing (about 100 bytes: two blocks).
//
// Three implementations, one result:
//   - the x86 SHA extensions (SHA-NI), inline: state kept in registers across the blocks, no
//     context, no call per block. Used when the CPU has them (cpuid, checked once).
//   - AVX-512, sixteen messages at once, one per 32-bit lane (model/util/sha256_avx512.cc).
//   - OpenSSL's block function (SHA256_Transform) when the CPU has neither.
// A request's blocks form a chain, each message holding the previous digest, so one chain's
// rounds wait on each other. sha256_padded_lanes hashes up to sixteen messages (of different
// chains) together. On SHA-NI it interleaves four chains' rounds: on an AMD EPYC, in a bare
// loop of chained two-block messages, 79 ns per message for one chain, 44 for two in lockstep
// and 39 for four. On an Intel Xeon (Sapphire Rapids class) whose SHA unit is slower, SHA-NI
// four at a time took 77 ns per two-block message and AVX-512 sixteen at a time 46 ns
// (bench/README.md, "Sixteen lanes on AVX-512"). Which is faster depends on the CPU, so the
// batch path is chosen by timing both once, on first use (sha256_lanes_plan()).
// Invariants:
//   1. sha256_padded(data, n, out) == SHA-256 of the unpadded message, whichever path runs
//      (tests/model/util/sha256_test.cc compares every path with OpenSSL's one-shot SHA256).
//      The same holds for each message of sha256_padded_lanes and of the named lane paths.
//   2. The paths are fixed for the process: sha256_ni_available(), sha256_avx512_available()
//      and sha256_lanes_plan() do not change. The plan changes only the speed, never a digest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kv {

// True when this CPU has the SHA extensions (and the SSSE3/SSE4.1 the inline path uses).
bool sha256_ni_available();

// True when this CPU and OS run AVX-512F and AVX-512BW.
bool sha256_avx512_available();

// The digest of `blocks` padded 64-byte blocks at `data`, big-endian, into out[0..32).
void sha256_padded(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out);

// Most messages one sha256_padded_lanes call takes.
inline constexpr std::size_t kSha256MaxLanes = 16;

// The digests of `count` (at most kSha256MaxLanes) messages, message n being blocks[n] (at
// least 1) padded blocks at data[n], into out[n].
void sha256_padded_lanes(const std::uint8_t* const* data, const std::size_t* blocks, std::size_t count,
                         std::uint8_t* const* out);

// How sha256_padded_lanes splits a batch: batches of at least `wide_from` messages take the
// AVX-512 path, smaller ones the narrow path (SHA-NI four at a time, or OpenSSL one at a time).
// wide_from is kSha256MaxLanes + 1 when AVX-512 never wins or is missing. Measured once, in
// about a millisecond: the wide path runs for half a millisecond first (a core may wake its
// 512-bit units slowly), then the two paths hash sixteen two-block messages in alternating
// rounds, and the fastest round of each counts.
struct Sha256LanesPlan {
  std::size_t wide_from = kSha256MaxLanes + 1;
  double narrow_ns_per_message = 0;  // 0 when not measured (no AVX-512)
  double wide_ns_per_message = 0;
  std::string describe() const;  // e.g. "avx512 x16 from 9 messages, sha-ni x4 below"
};
const Sha256LanesPlan& sha256_lanes_plan();

// The paths by name, for tests and benchmarks. The _ni ones require sha256_ni_available(),
// sha256_lanes_avx512 sha256_avx512_available(); the lane paths take what
// sha256_padded_lanes takes.
void sha256_padded_ni(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out);
void sha256_padded_openssl(const std::uint8_t* data, std::size_t blocks, std::uint8_t* out);
void sha256_lanes_ni(const std::uint8_t* const* data, const std::size_t* blocks, std::size_t count,
                     std::uint8_t* const* out);
void sha256_lanes_avx512(const std::uint8_t* const* data, const std::size_t* blocks, std::size_t count,
                         std::uint8_t* const* out);

}  // namespace kv
