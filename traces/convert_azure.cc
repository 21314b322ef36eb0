// Azure LLM inference trace CSV (converters.h): TIMESTAMP,ContextTokens,GeneratedTokens. No
// prefix information: each prompt is a unique seeded random block.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "traces/convert_csv.h"
#include "traces/convert_formats.h"

namespace kv::trace {

namespace {

// The number of the digits t[from, from + n), or -1 when one is not a digit.
int digits_at(const std::string& t, std::size_t from, std::size_t n) {
  int v = 0;
  for (std::size_t i = from; i < from + n; ++i) {
    if (i >= t.size() || t[i] < '0' || t[i] > '9') return -1;
    v = v * 10 + (t[i] - '0');
  }
  return v;
}

// "2023-11-16 18:15:46.6805900" -> microseconds since the Unix epoch. Exactly
// YYYY-MM-DD HH:MM:SS with one space, then optionally '.' and digits.
std::optional<std::int64_t> parse_timestamp_us(const std::string& t) {
  if (t.size() < 19 || t[4] != '-' || t[7] != '-' || t[10] != ' ' || t[13] != ':' || t[16] != ':') {
    return std::nullopt;
  }
  const int y = digits_at(t, 0, 4), mo = digits_at(t, 5, 2), d = digits_at(t, 8, 2);
  const int h = digits_at(t, 11, 2), mi = digits_at(t, 14, 2), s = digits_at(t, 17, 2);
  using namespace std::chrono;
  if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || s < 0) return std::nullopt;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::int64_t us =
      sys_days{ymd}.time_since_epoch().count() * 86400LL * 1000000LL + ((h * 60LL + mi) * 60LL + s) * 1000000LL;
  if (t.size() == 19) return us;
  if (t[19] != '.' || t.size() == 20) return std::nullopt;
  std::int64_t scale = 100000;
  for (std::size_t i = 20; i < t.size(); ++i) {
    if (t[i] < '0' || t[i] > '9') return std::nullopt;
    us += (t[i] - '0') * scale;  // digits past the microsecond are dropped (scale 0)
    scale /= 10;
  }
  return us;
}

// Row `row` (from 0) after its timestamp `us`: in order, within range, at most 31 years on.
Status check_azure_row(const std::string& where, std::int64_t row, std::int64_t us, std::int64_t first_us,
                       std::int64_t prev_us, std::int64_t context, std::int64_t generated) {
  if (row > 0 && us < prev_us) return Status::error(where + "column TIMESTAMP: arrivals go backwards");
  if (context < 0) return Status::error(where + "column ContextTokens: negative");
  if (context > (1 << 20)) return Status::error(where + "column ContextTokens: too large");
  if (generated < 0) return Status::error(where + "column GeneratedTokens: negative");
  if (us - first_us > kMaxArrivalTimeUs) {
    return Status::error(where + "column TIMESTAMP: more than 31 years after the first row");
  }
  return Status();
}

// The request of row `row`: a unique random prompt of `context` tokens.
TraceRequest azure_request(std::uint64_t seed, std::int64_t row, std::int64_t arrival_us, std::int64_t context,
                           std::int64_t generated) {
  TraceRequest r;
  r.id = "az" + std::to_string(row);
  r.arrival_time_us = arrival_us;
  r.prompt_segments.push_back(PromptSegment::block(random_prompt_block(seed, row), static_cast<int>(context)));
  r.output_length = generated;
  return r;
}

// One row (the `row`-th, from 0): its cells checked, its arrival after `*prev_us` (updated;
// `*first_us` set by row 0). Returns the request, or nullopt for a row of no context or no output
// (a failed request: skipped, as BurstGPT's).
StatusOr<std::optional<TraceRequest>> azure_row(const std::string& where, const CsvRow& cells,
                                                const std::array<std::size_t, 3>& at, std::uint64_t seed,
                                                std::int64_t row, std::int64_t* first_us, std::int64_t* prev_us) {
  std::int64_t context = 0, generated = 0;
  const std::string& ts_text = cells.fields[at[0]];
  if (Status s = cell_int(where, "ContextTokens", cells.fields[at[1]], &context); !s.ok()) return s;
  if (Status s = cell_int(where, "GeneratedTokens", cells.fields[at[2]], &generated); !s.ok()) return s;
  const std::optional<std::int64_t> us = parse_timestamp_us(ts_text);
  if (!us) return Status::error(where + "column TIMESTAMP: bad timestamp '" + ts_text + "'");
  if (row == 0) *first_us = *us;
  if (Status s = check_azure_row(where, row, *us, *first_us, *prev_us, context, generated); !s.ok()) return s;
  *prev_us = *us;
  if (context == 0 || generated == 0) return std::optional<TraceRequest>();
  return std::optional<TraceRequest>(azure_request(seed, row, *us - *first_us, context, generated));
}

}  // namespace

StatusOr<ConvertStats> convert_azure(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  const StatusOr<std::string> text = read_csv_input(input);
  if (!text.ok()) return text.status();
  StatusOr<CsvReader> csv = CsvReader::open(input, *text, kConverterCsv);
  if (!csv.ok()) return csv.status();
  std::array<std::size_t, 3> at{};
  if (Status s = find_csv_columns<3>(input, *csv, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, at); !s.ok()) {
    return s;
  }
  std::int64_t first_us = 0, prev_us = 0;
  return convert_csv_rows(input, *csv, o.max_requests, writer,
                          [&](const std::string& where, const CsvRow& cells, std::int64_t row, ConvertStats& stats) {
                            auto r = azure_row(where, cells, at, o.seed, row, &first_us, &prev_us);
                            if (r.ok() && !*r) ++stats.skipped;
                            return r;
                          });
}

}  // namespace kv::trace
