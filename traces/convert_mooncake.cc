// Mooncake JSONL (converters.h): {"timestamp" (ms), "input_length", "output_length",
// "hash_ids"}, one record a line. Hash id h stands for the 512-token block
// expand_block_tokens(h, 512); the last block is truncated to input_length.
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "traces/block_tokens.h"
#include "traces/convert_formats.h"
#include "traces/convert_json.h"

namespace kv::trace {

namespace {

// One line of a Mooncake trace as read; `have_*` say which fields it had.
struct MooncakeRecord {
  std::int64_t ts = 0;  // milliseconds
  std::int64_t input_length = 0;
  std::int64_t output_length = 0;
  std::vector<std::uint64_t> hash_ids;
  bool have_ts = false, have_in = false, have_out = false, have_ids = false;
};

simdjson::error_code read_hash_ids(simdjson::simdjson_result<simdjson::ondemand::value> value,
                                   std::vector<std::uint64_t>& hash_ids) {
  simdjson::ondemand::array ids;
  simdjson::error_code e = value.get_array().get(ids);
  if (!e) {
    for (auto v : ids) {
      std::uint64_t h = 0;
      if ((e = v.get_uint64().get(h))) break;
      hash_ids.push_back(h);
    }
  }
  return e;
}

// The record's fields, in any order; unknown fields are ignored.
Status read_mooncake_fields(simdjson::ondemand::object& obj, const std::string& where, MooncakeRecord& rec) {
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return Status::error(where + "bad JSON: " + json_error(e));
    simdjson::error_code e = simdjson::SUCCESS;
    if (key == "timestamp") {
      e = field.value().get_int64().get(rec.ts);
      rec.have_ts = true;
    } else if (key == "input_length") {
      e = field.value().get_int64().get(rec.input_length);
      rec.have_in = true;
    } else if (key == "output_length") {
      e = field.value().get_int64().get(rec.output_length);
      rec.have_out = true;
    } else if (key == "hash_ids") {
      rec.have_ids = true;
      e = read_hash_ids(field.value(), rec.hash_ids);
    } else {
      continue;
    }
    if (e) return Status::error(where + "field " + std::string(key) + ": " + json_error(e));
  }
  return Status();
}

// Every field present and in range; `prev_ms` is the last request's timestamp, if `written`.
Status check_mooncake_record(const MooncakeRecord& rec, const std::string& where, bool written, std::int64_t prev_ms) {
  if (!rec.have_ts) return Status::error(where + "missing field timestamp");
  if (!rec.have_in) return Status::error(where + "missing field input_length");
  if (!rec.have_out) return Status::error(where + "missing field output_length");
  if (!rec.have_ids) return Status::error(where + "missing field hash_ids");
  const std::int64_t ts = rec.ts;
  if (ts < 0) return Status::error(where + "field timestamp: negative (" + std::to_string(ts) + ")");
  if (ts > kMaxArrivalTimeUs / 1000) {
    return Status::error(where + "field timestamp: " + std::to_string(ts) + " ms is beyond " +
                         std::to_string(kMaxArrivalTimeUs / 1000) + " (about 31 years)");
  }
  if (written && ts < prev_ms) {
    return Status::error(where + "field timestamp: arrivals go backwards (" + std::to_string(ts) + " after " +
                         std::to_string(prev_ms) + ")");
  }
  if (rec.input_length <= 0) return Status::error(where + "field input_length: must be > 0");
  if (rec.output_length < 0) return Status::error(where + "field output_length: negative");
  if (rec.output_length == 0) {
    return Status::error(where + "field output_length: must be >= 1 (a request generates at least one token)");
  }
  const auto blocks = static_cast<std::int64_t>(rec.hash_ids.size());
  if (blocks != (rec.input_length + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens) {
    return Status::error(where + "field hash_ids: " + std::to_string(blocks) + " ids for input_length " +
                         std::to_string(rec.input_length) + " (expected ceil(input_length / 512))");
  }
  return Status();
}

// The request of a checked record: one block segment per hash id, the last one truncated.
TraceRequest mooncake_request(const MooncakeRecord& rec, std::int64_t index) {
  TraceRequest r;
  r.id = "mc" + std::to_string(index);
  r.arrival_time_us = rec.ts * 1000;
  const auto blocks = static_cast<std::int64_t>(rec.hash_ids.size());
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t n = std::min<std::int64_t>(kMooncakeBlockTokens, rec.input_length - b * kMooncakeBlockTokens);
    r.prompt_segments.push_back(PromptSegment::block(rec.hash_ids[static_cast<std::size_t>(b)], static_cast<int>(n)));
  }
  r.output_length = rec.output_length;
  return r;
}

// One non-blank line: parsed, checked and written as request `stats.requests`; `prev_ms`
// becomes its timestamp.
Status convert_mooncake_line(simdjson::ondemand::parser& parser, const std::string& line, const std::string& where,
                             const ConvertStats& stats, std::int64_t& prev_ms, TraceWriter& writer) {
  simdjson::padded_string padded(line);
  simdjson::ondemand::document doc;
  if (auto e = parser.iterate(padded).get(doc)) return Status::error(where + "bad JSON: " + json_error(e));
  simdjson::ondemand::object obj;
  if (auto e = doc.get_object().get(obj)) return Status::error(where + "bad JSON: " + json_error(e));
  MooncakeRecord rec;
  if (Status s = read_mooncake_fields(obj, where, rec); !s.ok()) return s;
  if (has_trailing_text(doc)) return Status::error(where + "bad JSON: text after the record's object");
  if (Status s = check_mooncake_record(rec, where, stats.requests > 0, prev_ms); !s.ok()) return s;
  if (Status s = writer.write(mooncake_request(rec, stats.requests)); !s.ok()) return s.with_context(where);
  prev_ms = rec.ts;
  return Status();
}

}  // namespace

StatusOr<ConvertStats> convert_mooncake(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  std::ifstream in(input);
  if (!in) return Status::error(input + ": cannot open");
  simdjson::ondemand::parser parser;
  std::string line;
  std::int64_t line_no = 0;
  std::int64_t prev_ms = 0;
  ConvertStats stats;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = input + ": line " + std::to_string(line_no) + ": ";
    if (Status s = convert_mooncake_line(parser, line, where, stats, prev_ms, writer); !s.ok()) return s;
    if (++stats.requests == o.max_requests) break;
  }
  if (in.bad()) return Status::error(input + ": read error");
  return stats;
}

}  // namespace kv::trace
