// BurstGPT CSV (converters.h): Timestamp,Model,Request tokens,Response tokens,Total tokens,
// Log Type[,Session ID]. Prompts as for azure; failed requests (zero tokens) are skipped.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "traces/convert_csv.h"
#include "traces/convert_formats.h"

namespace kv::trace {

namespace {

// The columns a row is read from (nullopt: the file lacks that optional column).
struct BurstGptColumns {
  std::size_t timestamp = 0, request = 0, response = 0;
  std::optional<std::size_t> model, session;
};

// Timestamp, Request tokens and Response tokens are required; Model and Session ID optional.
StatusOr<BurstGptColumns> burstgpt_columns(const std::string& input, const CsvReader& csv) {
  std::array<std::size_t, 3> at{};
  if (Status s = find_csv_columns<3>(input, csv, {"Timestamp", "Request tokens", "Response tokens"}, at); !s.ok()) {
    return s;
  }
  return BurstGptColumns{at[0], at[1], at[2], csv.column("Model"), csv.column("Session ID")};
}

// A row's timestamp (seconds) and token counts within range.
Status check_burstgpt_row(const std::string& where, double ts, const std::string& ts_text, std::int64_t req,
                          std::int64_t resp) {
  // Seconds; the bound keeps microseconds far inside int64_t (trace.h's kMaxArrivalTimeUs).
  if (ts < 0 || ts > static_cast<double>(kMaxArrivalTimeUs) / 1e6) {
    return Status::error(where + "column Timestamp: " + ts_text + " is outside 0.." +
                         std::to_string(kMaxArrivalTimeUs / 1000000) + " seconds");
  }
  if (req < 0) return Status::error(where + "column Request tokens: negative");
  if (resp < 0) return Status::error(where + "column Response tokens: negative");
  if (req > (1 << 20)) return Status::error(where + "column Request tokens: too large");
  return Status();
}

// The request of row `row`: a unique random prompt of `req` tokens.
TraceRequest burstgpt_request(std::uint64_t seed, std::int64_t row, std::int64_t arrival_us, std::int64_t req,
                              std::int64_t resp) {
  TraceRequest r;
  r.id = "bg" + std::to_string(row);
  r.arrival_time_us = arrival_us;
  r.prompt_segments.push_back(PromptSegment::block(random_prompt_block(seed, row), static_cast<int>(req)));
  r.output_length = resp;
  return r;
}

// One row: its numbers checked, its arrival after the previous row's (`prev_us`, updated).
// Returns the request, or nullopt for a row that is filtered out or skipped (counted).
StatusOr<std::optional<TraceRequest>> burstgpt_row(const std::string& where, const CsvRow& cells,
                                                   const BurstGptColumns& at, const ConvertOptions& o, std::int64_t row,
                                                   double* first_ts, std::int64_t* prev_us, ConvertStats& stats) {
  double ts = 0;
  std::int64_t req = 0, resp = 0;
  const std::string& ts_text = cells.fields[at.timestamp];
  if (Status s = cell_double(where, "Timestamp", ts_text, &ts); !s.ok()) return s;
  if (Status s = cell_int(where, "Request tokens", cells.fields[at.request], &req); !s.ok()) return s;
  if (Status s = cell_int(where, "Response tokens", cells.fields[at.response], &resp); !s.ok()) return s;
  if (Status s = check_burstgpt_row(where, ts, ts_text, req, resp); !s.ok()) return s;
  if (row == 0) *first_ts = ts;
  const std::int64_t us = std::llround((ts - *first_ts) * 1e6);
  if (row > 0 && us < *prev_us) return Status::error(where + "column Timestamp: arrivals go backwards");
  *prev_us = us;
  if (!o.model.empty() && (!at.model || cells.fields[*at.model] != o.model)) return std::optional<TraceRequest>();
  if (req == 0 || resp == 0) {
    ++stats.skipped;
    return std::optional<TraceRequest>();
  }
  TraceRequest r = burstgpt_request(o.seed, row, us, req, resp);
  if (at.session) r.session_id = cells.fields[*at.session];
  return std::optional<TraceRequest>(std::move(r));
}

}  // namespace

StatusOr<ConvertStats> convert_burstgpt(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  const StatusOr<std::string> text = read_csv_input(input);
  if (!text.ok()) return text.status();
  StatusOr<CsvReader> csv = CsvReader::open(input, *text, kConverterCsv);
  if (!csv.ok()) return csv.status();
  const StatusOr<BurstGptColumns> at = burstgpt_columns(input, *csv);
  if (!at.ok()) return at.status();
  double first_ts = 0;
  std::int64_t prev_us = 0;
  return convert_csv_rows(input, *csv, o.max_requests, writer,
                          [&](const std::string& where, const CsvRow& cells, std::int64_t row, ConvertStats& stats) {
                            return burstgpt_row(where, cells, *at, o, row, &first_ts, &prev_us, stats);
                          });
}

}  // namespace kv::trace
