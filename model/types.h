// Vocabulary types shared by the whole core.
#pragma once

#include <cstdint>
#include <string>

namespace kv {

using TokenId = std::int64_t;  // vLLM token ids are Python ints; hashing must accept any >= 0
using BlockId = std::int32_t;  // 0..num_blocks-1; block 0 is the null block
using RequestId = std::string;

inline constexpr BlockId kNoBlock = -1;

// Which end of the free queue a freed block goes to (docs/semantics.md §3.3).
enum class FreeOrder {
  kClassic,        // every freed block appended at the tail (vLLM up to mid-2026)
  kUnhashedFirst,  // freed blocks without a hash go to the head, hashed ones to the tail
};

const char* to_string(FreeOrder order);
bool parse_free_order(const std::string& text, FreeOrder* out);

}  // namespace kv
