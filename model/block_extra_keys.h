// BlockExtraKeys: the extra keys of one block as data, the same entries BlockHasher folds into
// the block's hash (docs/semantics.md §2), for readers outside the hash: the KV events carry
// them per stored block, as vLLM's generate_block_hash_extra_keys() hands them to BlockStored.
// Invariants:
//   1. Entries in vLLM's order: the LoRA name; one (identifier, item offset - block start) per
//      multimodal item whose span meets [block_start, block_end), in item order; the cache salt
//      on the block starting at token 0 only. Empty strings are no key.
//   2. No entry at all gives nullopt (vLLM's None), never an empty list.
//   3. Pure: a function of the extras and the block's token range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "model/block_hasher.h"

namespace kv {

// A multimodal item in a block: its identifier and where it starts relative to the block.
struct MultiModalKey {
  std::string identifier;
  std::int64_t offset = 0;
  bool operator==(const MultiModalKey&) const = default;
};

// A LoRA name or cache salt (a string), or a multimodal item.
using ExtraKey = std::variant<std::string, MultiModalKey>;
using BlockExtraKeys = std::optional<std::vector<ExtraKey>>;

BlockExtraKeys block_extra_keys(const HashExtras& extras, std::int64_t block_start, std::int64_t block_end);

}  // namespace kv
