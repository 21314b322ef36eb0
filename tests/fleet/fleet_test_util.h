// Shared by the tests of fleet/: block hashes named by small integers, KV events and requests
// built from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleet/router.h"
#include "model/block_hash.h"
#include "model/kv_events.h"

namespace kv::fleet::testing {

// A 32-byte hash whose first byte names it (h(0) != h(1)); enough for the routers, which only
// compare hashes.
inline BlockHash h(int name) {
  BlockHash hash;
  hash.size = 32;
  hash.bytes[0] = static_cast<std::uint8_t>(name);
  hash.bytes[1] = static_cast<std::uint8_t>(name >> 8);
  hash.bytes[31] = 0x5a;
  return hash;
}

// Hashes h(first), h(first+1), ... h(first+n-1): a chain of n blocks.
inline std::vector<BlockHash> chain(int first, int n) {
  std::vector<BlockHash> hashes;
  for (int i = 0; i < n; ++i) hashes.push_back(h(first + i));
  return hashes;
}

inline KvEvent stored(std::vector<BlockHash> hashes) {
  BlockStored e;
  e.block_hashes = std::move(hashes);
  e.block_size = 16;
  return e;
}

inline KvEvent removed(std::vector<BlockHash> hashes) {
  BlockRemoved e;
  e.block_hashes = std::move(hashes);
  return e;
}

// A request of `prompt_tokens` tokens (block size 16) whose full blocks are `hashes`.
inline RouteRequest request(std::string id, int prompt_tokens, std::vector<BlockHash> hashes, std::int64_t now_ns = 0,
                            std::string session = "") {
  RouteRequest r;
  r.id = std::move(id);
  r.session_id = std::move(session);
  r.prompt_tokens = prompt_tokens;
  r.block_size = 16;
  r.block_hashes = std::move(hashes);
  r.now_ns = now_ns;
  return r;
}

}  // namespace kv::fleet::testing
