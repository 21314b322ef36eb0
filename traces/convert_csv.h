// What the CSV converters (Azure, BurstGPT) share: the Fast C++ CSV Parser's settings, cells
// that must hold numbers, and the seeded random prompt that stands in for a prompt whose
// tokens the source does not record. Internal to traces/.
#pragma once

// The parser's own code trips a warning of newer compilers (a bounded strncpy it terminates
// by hand); keep it out of -Werror builds.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#include <libfccp/csv.h>
#include <limits>  // libfccp/csv.h uses std::numeric_limits without including it
#pragma GCC diagnostic pop

#include <cstdint>
#include <optional>
#include <string>

#include "model/util/parse_number.h"
#include "model/util/status.h"
#include "traces/block_tokens.h"

namespace kv::trace {

// The prompt block of CSV row `row`: unique per (seed, row), so prompts share nothing.
inline std::uint64_t random_prompt_block(std::uint64_t seed, std::int64_t row) {
  return splitmix64(splitmix64(seed ^ 0x7261'6e64'7072'6f6dULL) + static_cast<std::uint64_t>(row));
}

// A CSV cell that must hold a number: empty cells and trailing text are errors, never 0.
inline Status cell_int(const std::string& where, const char* column, const std::string& text, std::int64_t* out) {
  const std::optional<std::int64_t> v = parse_int64(text);
  if (!v) return Status::error(where + "column " + column + ": '" + text + "' is not an integer");
  *out = *v;
  return Status();
}

inline Status cell_double(const std::string& where, const char* column, const std::string& text, double* out) {
  const std::optional<double> v = parse_finite_double(text);
  if (!v) return Status::error(where + "column " + column + ": '" + text + "' is not a finite number");
  *out = *v;
  return Status();
}

using CsvTrim = io::trim_chars<' ', '\t', '\r'>;
using CsvQuote = io::double_quote_escape<',', '"'>;

}  // namespace kv::trace
