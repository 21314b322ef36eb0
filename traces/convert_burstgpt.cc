// BurstGPT CSV (converters.h): Timestamp,Model,Request tokens,Response tokens,Total tokens,
// Log Type[,Session ID]. Prompts as for azure; failed requests (zero tokens) are skipped.
#include <cmath>
#include <cstdint>
#include <string>

#include "traces/convert_csv.h"
#include "traces/convert_formats.h"

namespace kv::trace {

namespace {

using BurstGptCsv = io::CSVReader<7, CsvTrim, CsvQuote>;

// The header: Timestamp, Request tokens and Response tokens are required, the rest optional.
// Throws what the CSV parser throws.
Status read_burstgpt_header(BurstGptCsv& csv, const std::string& input) {
  csv.read_header(io::ignore_extra_column | io::ignore_missing_column, "Timestamp", "Model", "Request tokens",
                  "Response tokens", "Total tokens", "Log Type", "Session ID");
  for (const char* required : {"Timestamp", "Request tokens", "Response tokens"}) {
    if (!csv.has_column(required)) {
      return Status::error(input + ": line 1: missing column '" + std::string(required) + "'");
    }
  }
  return Status();
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

}  // namespace

StatusOr<ConvertStats> convert_burstgpt(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  ConvertStats stats;
  try {
    BurstGptCsv csv(input);
    if (Status s = read_burstgpt_header(csv, input); !s.ok()) return s;
    const bool has_session = csv.has_column("Session ID");
    double ts = 0;
    std::string ts_text, model, req_text, resp_text, total, log_type, session;
    std::int64_t req = 0, resp = 0;
    double first_ts = 0;
    std::int64_t prev_us = 0, row = 0;
    while (csv.read_row(ts_text, model, req_text, resp_text, total, log_type, session)) {
      const std::string where = input + ": line " + std::to_string(csv.get_file_line()) + ": ";
      if (Status s = cell_double(where, "Timestamp", ts_text, &ts); !s.ok()) return s;
      if (Status s = cell_int(where, "Request tokens", req_text, &req); !s.ok()) return s;
      if (Status s = cell_int(where, "Response tokens", resp_text, &resp); !s.ok()) return s;
      if (Status s = check_burstgpt_row(where, ts, ts_text, req, resp); !s.ok()) return s;
      if (row == 0) first_ts = ts;
      const std::int64_t us = std::llround((ts - first_ts) * 1e6);
      if (row > 0 && us < prev_us) return Status::error(where + "column Timestamp: arrivals go backwards");
      prev_us = us;
      const std::int64_t this_row = row++;
      if (!o.model.empty() && model != o.model) continue;
      if (req == 0 || resp == 0) {
        ++stats.skipped;
        continue;
      }
      TraceRequest r = burstgpt_request(o.seed, this_row, us, req, resp);
      if (has_session) r.session_id = session;
      if (Status s = writer.write(r); !s.ok()) return s.with_context(where);
      if (++stats.requests == o.max_requests) break;
    }
  } catch (const io::error::base& e) {
    return Status::error(e.what());
  }
  return stats;
}

}  // namespace kv::trace
