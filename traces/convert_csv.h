// What the CSV converters (Azure, BurstGPT) share: the strict CSV reader's rules
// (model/util/csv_table.h: exact field counts, RFC 4180 quotes without line breaks, no stray
// carriage returns), the input read whole, cells that must hold numbers, and the seeded random
// prompt that stands in for a prompt whose tokens the source does not record. Internal to
// traces/.
#pragma once

#include <array>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "model/util/csv_table.h"
#include "model/util/parse_number.h"
#include "model/util/status.h"
#include "traces/block_tokens.h"
#include "traces/converters.h"
#include "traces/trace_io.h"

namespace kv::trace {

// The prompt block of CSV row `row`: unique per (seed, row), so prompts share nothing.
inline std::uint64_t random_prompt_block(std::uint64_t seed, std::int64_t row) {
  return splitmix64(splitmix64(seed ^ 0x7261'6e64'7072'6f6dULL) + static_cast<std::uint64_t>(row));
}

// A CSV cell that must hold a number: empty cells and trailing text are errors, never 0.
// Integers are digits; other numbers plain decimals (no exponent, "inf" or "nan"), as the
// formats write them.
inline Status cell_int(const std::string& where, const char* column, const std::string& text, std::int64_t* out) {
  const std::optional<std::int64_t> v = parse_int64(text);
  if (!v) return Status::error(where + "column " + column + ": '" + text + "' is not an integer");
  *out = *v;
  return Status();
}

inline Status cell_double(const std::string& where, const char* column, const std::string& text, double* out) {
  const std::optional<double> v = parse_plain_decimal(text);
  if (!v) return Status::error(where + "column " + column + ": '" + text + "' is not a plain decimal number");
  *out = *v;
  return Status();
}

// Quoted fields (a Model name with a comma), but no line break inside one.
inline constexpr CsvRules kConverterCsv{true, false};

// The whole text of `input`.
inline StatusOr<std::string> read_csv_input(const std::string& input) {
  std::ifstream in(input, std::ios::binary);
  if (!in) return Status::error(input + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::error(input + ": read error");
  return text.str();
}

// The indices of the columns `names` of `csv`; a missing one is an error naming it.
template <std::size_t N>
Status find_csv_columns(const std::string& input, const CsvReader& csv, const std::array<const char*, N>& names,
                        std::array<std::size_t, N>& out) {
  for (std::size_t i = 0; i < N; ++i) {
    const std::optional<std::size_t> c = csv.column(names[i]);
    if (!c) return Status::error(input + ": line 1: missing column '" + std::string(names[i]) + "'");
    out[i] = *c;
  }
  return Status();
}

// Writes the request of every data row of `csv` to `writer`, in order, until `max_requests`
// (0: all): row_fn(where, cells, row, stats) gives it, or nullopt for a row it skips (and counts
// in stats when the format says so). `where` is "INPUT: line N: ".
template <typename RowFn>
StatusOr<ConvertStats> convert_csv_rows(const std::string& input, CsvReader& csv, std::int64_t max_requests,
                                        TraceWriter& writer, RowFn&& row_fn) {
  ConvertStats stats;
  CsvRow cells;
  for (std::int64_t row = 0;; ++row) {
    const StatusOr<bool> got = csv.next(cells);
    if (!got.ok()) return got.status();
    if (!*got) break;
    const std::string where = input + ": line " + std::to_string(cells.line) + ": ";
    StatusOr<std::optional<TraceRequest>> r = row_fn(where, cells, row, stats);
    if (!r.ok()) return r.status();
    if (!*r) continue;
    if (Status s = writer.write(**r); !s.ok()) return s.with_context(where);
    if (++stats.requests == max_requests) break;
  }
  return stats;
}

}  // namespace kv::trace
