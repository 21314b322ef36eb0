#include "model/block_extra_keys.h"

namespace kv {

BlockExtraKeys block_extra_keys(const HashExtras& extras, std::int64_t block_start, std::int64_t block_end) {
  std::vector<ExtraKey> keys;
  if (!extras.lora_name.empty()) keys.emplace_back(extras.lora_name);
  for (const MultiModalItem& mm : extras.mm_items) {
    if (mm.offset < block_end && mm.offset + mm.length > block_start) {
      keys.emplace_back(MultiModalKey{mm.identifier, mm.offset - block_start});
    }
  }
  if (block_start == 0 && !extras.cache_salt.empty()) keys.emplace_back(extras.cache_salt);
  if (keys.empty()) return std::nullopt;
  return keys;
}

}  // namespace kv
