// What the JSON converters (ShareGPT, Mooncake, pre-tokenized JSONL) share: simdjson's error
// text and the check for text after a record. Internal to traces/.
#pragma once

#include <simdjson.h>

#include <string>

namespace kv::trace {

inline std::string json_error(simdjson::error_code e) { return simdjson::error_message(e); }

// True when the document's root value has been read and non-space text follows it.
inline bool has_trailing_text(simdjson::ondemand::document& doc) {
  const char* at = nullptr;
  return doc.current_location().get(at) == simdjson::SUCCESS;
}

}  // namespace kv::trace
