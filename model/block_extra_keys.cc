#include "model/block_extra_keys.h"

namespace kv {

BlockExtraKeys block_extra_keys(const HashExtras& extras, std::int64_t block_start, std::int64_t block_end) {
  std::vector<ExtraKey> keys;
  struct Collect {
    std::vector<ExtraKey>& keys;
    void operator()(const std::string& text) const { keys.emplace_back(text); }
    void operator()(const MultiModalItem& mm, std::int64_t offset) const {
      keys.emplace_back(MultiModalKey{mm.identifier, offset});
    }
  };
  for_each_extra_key(extras, block_start, block_end, Collect{keys});
  if (keys.empty()) return std::nullopt;
  return keys;
}

}  // namespace kv
