// Azure LLM inference trace CSV (converters.h): TIMESTAMP,ContextTokens,GeneratedTokens. No
// prefix information: each prompt is a unique seeded random block.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "traces/convert_csv.h"
#include "traces/convert_formats.h"

namespace kv::trace {

namespace {

// "2023-11-16 18:15:46.6805900" -> microseconds since the Unix epoch.
std::optional<std::int64_t> parse_timestamp_us(const std::string& t) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, consumed = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) != 6) {
    return std::nullopt;
  }
  using namespace std::chrono;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60 || h < 0 || mi < 0 || s < 0) return std::nullopt;
  std::int64_t us =
      sys_days{ymd}.time_since_epoch().count() * 86400LL * 1000000LL + ((h * 60LL + mi) * 60LL + s) * 1000000LL;
  std::size_t i = static_cast<std::size_t>(consumed);
  if (i < t.size()) {
    if (t[i] != '.') return std::nullopt;
    std::int64_t scale = 100000;
    for (++i; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return std::nullopt;
      us += (t[i] - '0') * scale;  // digits past the microsecond are dropped (scale 0)
      scale /= 10;
    }
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

}  // namespace

StatusOr<ConvertStats> convert_azure(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  ConvertStats stats;
  try {
    io::CSVReader<3, CsvTrim, CsvQuote> csv(input);
    csv.read_header(io::ignore_extra_column, "TIMESTAMP", "ContextTokens", "GeneratedTokens");
    std::string ts_text, context_text, generated_text;
    std::int64_t context = 0, generated = 0;
    std::int64_t first_us = 0, prev_us = 0, row = 0;
    while (csv.read_row(ts_text, context_text, generated_text)) {
      const std::string where = input + ": line " + std::to_string(csv.get_file_line()) + ": ";
      if (Status s = cell_int(where, "ContextTokens", context_text, &context); !s.ok()) return s;
      if (Status s = cell_int(where, "GeneratedTokens", generated_text, &generated); !s.ok()) return s;
      const std::optional<std::int64_t> us = parse_timestamp_us(ts_text);
      if (!us) return Status::error(where + "column TIMESTAMP: bad timestamp '" + ts_text + "'");
      if (row == 0) first_us = *us;
      if (Status s = check_azure_row(where, row, *us, first_us, prev_us, context, generated); !s.ok()) return s;
      prev_us = *us;
      if (context == 0) {
        ++stats.skipped;
        ++row;
        continue;
      }
      const TraceRequest r = azure_request(o.seed, row++, *us - first_us, context, generated);
      if (Status s = writer.write(r); !s.ok()) return s.with_context(where);
      if (++stats.requests == o.max_requests) break;
    }
  } catch (const io::error::base& e) {
    return Status::error(e.what());
  }
  return stats;
}

}  // namespace kv::trace
