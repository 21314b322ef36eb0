#include "traces/request_id_set.h"

#include <xxhash.h>

namespace kv::trace {

bool RequestIdSet::insert(std::string_view id) {
  const XXH128_hash_t h = XXH3_128bits(id.data(), id.size());
  return keys_.insert(Key{h.low64, h.high64}).second;
}

}  // namespace kv::trace
