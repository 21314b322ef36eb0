// Block extra keys: which keys besides its tokens identify one block (docs/semantics.md §2),
// stated once in for_each_extra_key. BlockHasher folds them into the block's hash through it;
// block_extra_keys() returns them as data for readers outside the hash (the KV events carry
// them per stored block, as vLLM's generate_block_hash_extra_keys() hands them to BlockStored).
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

// Calls visit(text) for a LoRA name or the cache salt and visit(item, offset) for a multimodal
// item of the block [block_start, block_end), in the order of invariant 1.
template <typename Visit>
void for_each_extra_key(const HashExtras& extras, std::int64_t block_start, std::int64_t block_end, Visit&& visit) {
  if (!extras.lora_name.empty()) visit(extras.lora_name);
  for (const MultiModalItem& mm : extras.mm_items) {
    if (mm.offset < block_end && mm.offset + mm.length > block_start) visit(mm, mm.offset - block_start);
  }
  if (block_start == 0 && !extras.cache_salt.empty()) visit(extras.cache_salt);
}

// Whether the block [block_start, block_end) has any extra key (for_each_extra_key visits one).
inline bool has_extra_keys(const HashExtras& extras, std::int64_t block_start, std::int64_t block_end) {
  bool any = false;
  for_each_extra_key(extras, block_start, block_end, [&any](const auto&...) { any = true; });
  return any;
}

// Whether no block of a request with these extras has any extra key (invariant 1: empty
// strings are no key); then every block's extra keys are None.
inline bool has_no_extra_keys(const HashExtras& extras) {
  return extras.lora_name.empty() && extras.cache_salt.empty() && extras.mm_items.empty();
}

BlockExtraKeys block_extra_keys(const HashExtras& extras, std::int64_t block_start, std::int64_t block_end);

}  // namespace kv
