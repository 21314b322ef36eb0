// DeferredPrompt: a prompt kept in a compact form until a request first needs its tokens.
//
// A trace that describes prompts by block references (Mooncake's 512-token `hash_ids`) costs a
// few bytes per block until expanded; an overloaded replay holds thousands of waiting requests
// that the scheduler only looks at once they reach the head of the queue. A Request built from
// a DeferredPrompt expands it (and hashes its blocks) on first use (model/request.h).
// Invariants:
//   1. expand(out) appends exactly `size` tokens to out, the same ones at every call (a pure
//      function of what it captured); size >= 0.
//   2. An empty DeferredPrompt (no expand) stands for "not deferred".
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/types.h"

namespace kv {

struct DeferredPrompt {
  std::int64_t size = 0;
  std::function<void(std::vector<TokenId>& out)> expand;
  // Room the expanded token list reserves past the prompt (the outputs to come), so that
  // appending them never copies the prompt; a hint, no effect on any result.
  std::int64_t output_room = 0;

  bool deferred() const { return static_cast<bool>(expand); }
};

}  // namespace kv
