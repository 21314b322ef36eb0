// Pre-tokenized JSONL (converters.h, docs/tokenizers.md): one request a line, its prompt given
// as token ids; either every line has a timestamp or none has.
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/convert_formats.h"
#include "traces/convert_json.h"

namespace kv::trace {

namespace {

// One line of a tokens file; `have_timestamp` says whether the line had one.
struct TokensLine {
  TraceRequest request;
  bool have_timestamp = false;
};

Status read_token_ids(simdjson::ondemand::value v, std::int64_t vocab_size, std::vector<TokenId>& out) {
  simdjson::ondemand::array ids;
  if (auto e = v.get_array().get(ids)) return Status::error(json_error(e));
  for (auto x : ids) {
    std::int64_t id = 0;
    if (static_cast<std::int64_t>(out.size()) >= kMaxPromptTokens) {
      return Status::error("more than " + std::to_string(kMaxPromptTokens) + " tokens");
    }
    if (auto e = x.get_int64().get(id))
      return Status::error("element " + std::to_string(out.size()) + ": " + json_error(e));
    if (id < 0 || (vocab_size > 0 && id >= vocab_size)) {
      return Status::error("element " + std::to_string(out.size()) + ": id " + std::to_string(id) +
                           (id < 0 ? " is negative" : " is not below --vocab-size " + std::to_string(vocab_size)));
    }
    out.push_back(id);
  }
  return Status();
}

StatusOr<TokensLine> parse_tokens_line(simdjson::ondemand::object obj, const ConvertOptions& o) {
  TokensLine line;
  bool have_prompt = false, have_output = false;
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return Status::error("bad JSON: " + json_error(e));
    const std::string where = "field " + std::string(key) + ": ";
    Status st;
    if (key == "prompt_token_ids") {
      st = read_token_ids(field.value(), o.vocab_size, line.request.prompt);
      have_prompt = true;
    } else if (key == "output_len") {
      if (auto e = field.value().get_int64().get(line.request.output_length))
        st = Status::error(json_error(e));
      else if (line.request.output_length < 0)
        st = Status::error("negative");
      else if (line.request.output_length == 0)
        st = Status::error("must be >= 1 (a request generates at least one token, as vLLM's max_tokens)");
      have_output = true;
    } else if (key == "timestamp") {
      double t = 0;
      if (auto e = field.value().get_double().get(t))
        st = Status::error(json_error(e));
      else if (!(t >= 0 && t <= static_cast<double>(kMaxArrivalTimeUs) / 1e6)) {
        st = Status::error("must be a number of seconds from 0 to " + std::to_string(kMaxArrivalTimeUs / 1000000));
      }
      if (st.ok()) line.request.arrival_time_us = std::llround(t * 1e6);
      line.have_timestamp = true;
    } else if (std::string* target = key == "id"           ? &line.request.id
                                     : key == "session_id" ? &line.request.session_id
                                     : key == "cache_salt" ? &line.request.cache_salt
                                     : key == "lora_name"  ? &line.request.lora_name
                                                           : nullptr) {
      std::string_view text;
      if (auto e = field.value().get_string().get(text)) st = Status::error(json_error(e));
      *target = std::string(text);
    }
    if (!st.ok()) return st.with_context(where);
  }
  if (!have_prompt) return Status::error("missing field prompt_token_ids");
  if (line.request.prompt.empty()) return Status::error("field prompt_token_ids: empty");
  if (!have_output) return Status::error("missing field output_len");
  return line;
}

}  // namespace

StatusOr<ConvertStats> convert_tokens(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  std::ifstream in(input);
  if (!in) return Status::error(input + ": cannot open");
  simdjson::ondemand::parser parser;
  std::string text;
  std::int64_t line_no = 0, prev_us = 0;
  std::optional<bool> timed;  // whether lines carry timestamps, fixed by the first line
  ConvertStats stats;
  while (std::getline(in, text)) {
    ++line_no;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = input + ": line " + std::to_string(line_no) + ": ";
    simdjson::padded_string padded(text);
    simdjson::ondemand::document doc;
    simdjson::ondemand::object obj;
    if (auto e = parser.iterate(padded).get(doc)) return Status::error(where + "bad JSON: " + json_error(e));
    if (auto e = doc.get_object().get(obj)) return Status::error(where + "bad JSON: " + json_error(e));
    StatusOr<TokensLine> line = parse_tokens_line(obj, o);
    if (!line.ok()) return line.status().with_context(where);
    if (has_trailing_text(doc)) return Status::error(where + "bad JSON: text after the record's object");
    if (!timed) timed = line->have_timestamp;
    if (*timed != line->have_timestamp) {
      return Status::error(where + "field timestamp: " + (*timed ? "missing" : "present") + ", but the first request " +
                           (*timed ? "had one" : "had none") + " (all or none)");
    }
    TraceRequest& r = line->request;
    if (r.arrival_time_us < prev_us) return Status::error(where + "field timestamp: arrivals go backwards");
    prev_us = r.arrival_time_us;
    if (r.id.empty()) r.id = "tk" + std::to_string(line_no);
    if (Status s = writer.write(r); !s.ok()) return s.with_context(where);
    if (++stats.requests == o.max_requests) break;
  }
  if (in.bad()) return Status::error(input + ": read error");
  return stats;
}
}  // namespace kv::trace
