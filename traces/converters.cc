#include "traces/converters.h"

#include <limits>  // libfccp/csv.h uses std::numeric_limits without including it
#include <libfccp/csv.h>
#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "model/util/parse_number.h"
#include "traces/block_tokens.h"
#include "traces/generators.h"
#include "traces/tokenizer.h"

namespace kv::trace {

namespace {

std::uint64_t random_prompt_block(std::uint64_t seed, std::int64_t row) {
  return splitmix64(splitmix64(seed ^ 0x7261'6e64'7072'6f6dULL) + static_cast<std::uint64_t>(row));
}

std::string json_error(simdjson::error_code e) { return simdjson::error_message(e); }

// True when the document's root value has been read and non-space text follows it.
bool has_trailing_text(simdjson::ondemand::document& doc) {
  const char* at = nullptr;
  return doc.current_location().get(at) == simdjson::SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// ShareGPT

bool is_user_role(std::string_view r) { return r == "human" || r == "user"; }
bool is_assistant_role(std::string_view r) {
  return r == "gpt" || r == "assistant" || r == "chatgpt" || r == "bing" || r == "bard" || r == "model";
}

// The conversation being read: its pending user text and what has been kept so far.
struct ShareGptConversation {
  std::vector<TokenId> user;    // user text not answered yet
  std::vector<TokenId> system;  // the top-level "system" text and system messages before the first turn
  std::int64_t context = 0;     // tokens of the kept turns
  bool closed = false;          // max_model_len reached: later turns are dropped
};

// Holds the parser state of one ShareGPT file; never moved once iteration has begun.
struct ShareGptSource {
  std::string path;
  int max_model_len = 0;
  const TextTokenizer* tokenizer = nullptr;
  simdjson::padded_string json;
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::array conversations;
  simdjson::ondemand::array_iterator it;
  simdjson::ondemand::array_iterator end;
  std::int64_t index = 0;       // conversations consumed
  std::int64_t skipped = 0;     // turns dropped (empty answers, over max_model_len)
  std::int64_t unanswered = 0;  // conversations whose last user message has no answer

  Status open() {
    if (auto e = simdjson::padded_string::load(path).get(json)) {
      return Status::error(path + ": cannot read: " + json_error(e));
    }
    if (auto e = parser.iterate(json).get(doc)) return Status::error(path + ": bad JSON: " + json_error(e));
    if (auto e = doc.get_array().get(conversations)) {
      return Status::error(path + ": bad JSON: the top level must be an array of conversations (" +
                           json_error(e) + ")");
    }
    if (auto e = conversations.begin().get(it)) return Status::error(path + ": bad JSON: " + json_error(e));
    if (auto e = conversations.end().get(end)) return Status::error(path + ": bad JSON: " + json_error(e));
    return Status();
  }

  Status encode(std::string_view text, std::vector<TokenId>& out, const std::string& where) const {
    return tokenizer->encode(text, out).with_context(where + ": ");
  }

  // One message: a user message waits for its answer; an answer closes a turn.
  Status add_message(const std::string& from, std::string_view value, const std::string& where, Session* s,
                     ShareGptConversation& c) {
    if (is_user_role(from)) return encode(value, c.user, where);
    if (from == "system") {
      if (s->turns.empty() && c.user.empty()) return encode(value, c.system, where);
      return Status();
    }
    if (!is_assistant_role(from)) return Status::error(where + ".from: unknown role '" + from + "'");
    std::vector<TokenId> reply;
    if (Status st = encode(value, reply, where); !st.ok()) return st;
    if (c.user.empty() && s->turns.empty() && c.system.empty()) {
      ++skipped;  // an answer with nothing before it
      return Status();
    }
    if (reply.empty() || c.closed) {
      ++skipped;
      return Status();
    }
    const auto added = static_cast<std::int64_t>(c.user.size() + reply.size());
    if (max_model_len > 0 && c.context + static_cast<std::int64_t>(c.system.size()) + added > max_model_len) {
      c.closed = true;
      ++skipped;
      return Status();
    }
    c.context += added;
    s->turns.push_back(Turn{PromptSegment::literal(std::move(c.user)), PromptSegment::literal(std::move(reply))});
    c.user.clear();
    return Status();
  }

  // The message list of one conversation ("conversations" or "messages").
  Status read_messages(simdjson::ondemand::value value, const std::string& where, Session* s,
                       ShareGptConversation& c) {
    simdjson::ondemand::array messages;
    if (auto e = value.get_array().get(messages)) return Status::error(where + ": " + json_error(e));
    std::int64_t m = 0;
    for (auto message : messages) {
      const std::string mwhere = where + "[" + std::to_string(m++) + "]";
      simdjson::ondemand::object mo;
      if (auto e = message.get_object().get(mo)) return Status::error(mwhere + ": " + json_error(e));
      std::string from;
      std::string_view text;
      bool have_value = false;
      for (auto mf : mo) {
        std::string_view k;
        if (auto e = mf.unescaped_key().get(k)) return Status::error(mwhere + ": " + json_error(e));
        if (k == "from" || k == "role") {
          std::string_view f;
          if (auto e = mf.value().get_string().get(f)) return Status::error(mwhere + "." + std::string(k) + ": " + json_error(e));
          from = std::string(f);
        } else if (k == "value" || k == "content") {
          if (auto e = mf.value().get_string().get(text)) {
            return Status::error(mwhere + "." + std::string(k) + ": " + json_error(e) + " (the text must be a string)");
          }
          have_value = true;  // the view stays valid while the document is being read
        }
      }
      if (from.empty()) return Status::error(mwhere + ": missing field \"from\" (or \"role\")");
      if (!have_value) return Status::error(mwhere + ": missing field \"value\" (or \"content\")");
      if (Status st = add_message(from, text, mwhere, s, c); !st.ok()) return st;
    }
    return Status();
  }

  StatusOr<bool> next(Session* s) {
    if (it == end) {
      if (has_trailing_text(doc)) return Status::error(path + ": bad JSON: text after the top-level array");
      return false;
    }
    const std::string where = path + ": conversation " + std::to_string(index) + ": ";
    simdjson::ondemand::object conv;
    if (auto e = (*it).get_object().get(conv)) return Status::error(where + "bad JSON: " + json_error(e));
    s->id.clear();
    s->preamble.clear();
    s->turns.clear();
    ShareGptConversation c;
    if (Status st = read_system(conv, where, c); !st.ok()) return st;
    bool seen_messages = false;
    for (auto field : conv) {
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return Status::error(where + "bad JSON: " + json_error(e));
      if (key == "id") {
        std::string_view id;
        if (field.value().get_string().get(id) == simdjson::SUCCESS) s->id = std::string(id);
      } else if (key == "conversations" || key == "messages") {
        seen_messages = true;
        simdjson::ondemand::value v;
        if (auto e = field.value().get(v)) return Status::error(where + "field " + std::string(key) + ": " + json_error(e));
        if (Status st = read_messages(v, where + "field " + std::string(key), s, c); !st.ok()) return st;
      }
    }
    if (!seen_messages) return Status::error(where + "missing field \"conversations\" (or \"messages\")");
    if (!c.user.empty() && !c.closed) ++unanswered;
    if (!c.system.empty()) s->preamble.push_back(PromptSegment::literal(std::move(c.system)));
    if (s->id.empty()) s->id = "c" + std::to_string(index);
    else s->id = "c" + std::to_string(index) + ":" + s->id;
    ++index;
    ++it;
    return true;
  }

  // The top-level "system" text, wherever it stands in the object; leaves `conv` at its start.
  Status read_system(simdjson::ondemand::object& conv, const std::string& where, ShareGptConversation& c) {
    simdjson::ondemand::value v;
    const simdjson::error_code found = conv.find_field_unordered("system").get(v);
    bool is_null = false;
    if (found == simdjson::SUCCESS && v.is_null().get(is_null) == simdjson::SUCCESS && !is_null) {
      std::string_view text;
      if (auto e = v.get_string().get(text)) return Status::error(where + "field system: " + json_error(e));
      if (Status st = encode(text, c.system, where + "field system"); !st.ok()) return st;
    } else if (found != simdjson::SUCCESS && found != simdjson::NO_SUCH_FIELD) {
      return Status::error(where + "bad JSON: " + json_error(found));
    }
    if (auto e = conv.reset().error()) return Status::error(where + "bad JSON: " + json_error(e));
    return Status();
  }
};

StatusOr<ConvertStats> convert_sharegpt(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  auto src = std::make_unique<ShareGptSource>();
  src->path = input;
  src->max_model_len = o.max_model_len;
  const TextTokenizer word_hash;
  src->tokenizer = o.tokenizer != nullptr ? o.tokenizer : &word_hash;
  if (Status s = src->open(); !s.ok()) return s;
  ArrivalOptions a;
  a.rate = o.rate;
  a.arrival_cv = o.arrival_cv;
  a.concurrent_sessions = o.concurrent_sessions;
  a.max_requests = o.max_requests;
  a.seed = o.seed;
  StatusOr<std::int64_t> n = write_sessions(a, [&](Session* s) { return src->next(s); }, writer);
  if (!n.ok()) return n.status();
  return ConvertStats{*n, src->skipped, src->unanswered};
}

// ---------------------------------------------------------------------------------------------
// Mooncake

StatusOr<ConvertStats> convert_mooncake(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  std::ifstream in(input);
  if (!in) return Status::error(input + ": cannot open");
  simdjson::ondemand::parser parser;
  std::string line;
  std::int64_t line_no = 0;
  std::int64_t prev_ms = 0;
  ConvertStats stats;
  TraceRequest r;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = input + ": line " + std::to_string(line_no) + ": ";
    simdjson::padded_string padded(line);
    simdjson::ondemand::document doc;
    if (auto e = parser.iterate(padded).get(doc)) return Status::error(where + "bad JSON: " + json_error(e));
    simdjson::ondemand::object obj;
    if (auto e = doc.get_object().get(obj)) return Status::error(where + "bad JSON: " + json_error(e));
    std::int64_t ts = 0;
    std::int64_t input_length = 0;
    std::int64_t output_length = 0;
    std::vector<std::uint64_t> hash_ids;
    bool have_ts = false, have_in = false, have_out = false, have_ids = false;
    for (auto field : obj) {
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return Status::error(where + "bad JSON: " + json_error(e));
      simdjson::error_code e = simdjson::SUCCESS;
      if (key == "timestamp") {
        e = field.value().get_int64().get(ts);
        have_ts = true;
      } else if (key == "input_length") {
        e = field.value().get_int64().get(input_length);
        have_in = true;
      } else if (key == "output_length") {
        e = field.value().get_int64().get(output_length);
        have_out = true;
      } else if (key == "hash_ids") {
        have_ids = true;
        simdjson::ondemand::array ids;
        e = field.value().get_array().get(ids);
        if (!e) {
          for (auto v : ids) {
            std::uint64_t h = 0;
            if ((e = v.get_uint64().get(h))) break;
            hash_ids.push_back(h);
          }
        }
      } else {
        continue;
      }
      if (e) return Status::error(where + "field " + std::string(key) + ": " + json_error(e));
    }
    if (has_trailing_text(doc)) return Status::error(where + "bad JSON: text after the record's object");
    if (!have_ts) return Status::error(where + "missing field timestamp");
    if (!have_in) return Status::error(where + "missing field input_length");
    if (!have_out) return Status::error(where + "missing field output_length");
    if (!have_ids) return Status::error(where + "missing field hash_ids");
    if (ts < 0) return Status::error(where + "field timestamp: negative (" + std::to_string(ts) + ")");
    if (ts > kMaxArrivalTimeUs / 1000) {
      return Status::error(where + "field timestamp: " + std::to_string(ts) + " ms is beyond " +
                           std::to_string(kMaxArrivalTimeUs / 1000) + " (about 31 years)");
    }
    if (stats.requests > 0 && ts < prev_ms) {
      return Status::error(where + "field timestamp: arrivals go backwards (" + std::to_string(ts) +
                           " after " + std::to_string(prev_ms) + ")");
    }
    if (input_length <= 0) return Status::error(where + "field input_length: must be > 0");
    if (output_length < 0) return Status::error(where + "field output_length: negative");
    const auto blocks = static_cast<std::int64_t>(hash_ids.size());
    if (blocks != (input_length + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens) {
      return Status::error(where + "field hash_ids: " + std::to_string(blocks) + " ids for input_length " +
                           std::to_string(input_length) + " (expected ceil(input_length / 512))");
    }
    r = TraceRequest();
    r.id = "mc" + std::to_string(stats.requests);
    r.arrival_time_us = ts * 1000;
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t n = std::min<std::int64_t>(kMooncakeBlockTokens, input_length - b * kMooncakeBlockTokens);
      r.prompt_segments.push_back(PromptSegment::block(hash_ids[static_cast<std::size_t>(b)], static_cast<int>(n)));
    }
    r.output_length = output_length;
    if (Status s = writer.write(r); !s.ok()) return s.with_context(where);
    prev_ms = ts;
    if (++stats.requests == o.max_requests) break;
  }
  if (in.bad()) return Status::error(input + ": read error");
  return stats;
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenized JSONL

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
    if (auto e = x.get_int64().get(id)) return Status::error("element " + std::to_string(out.size()) + ": " + json_error(e));
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
      if (auto e = field.value().get_int64().get(line.request.output_length)) st = Status::error(json_error(e));
      else if (line.request.output_length < 0) st = Status::error("negative");
      have_output = true;
    } else if (key == "timestamp") {
      double t = 0;
      if (auto e = field.value().get_double().get(t)) st = Status::error(json_error(e));
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
      return Status::error(where + "field timestamp: " + (*timed ? "missing" : "present") +
                           ", but the first request " + (*timed ? "had one" : "had none") + " (all or none)");
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

// ---------------------------------------------------------------------------------------------
// CSV traces

// "2023-11-16 18:15:46.6805900" -> microseconds since the Unix epoch.
std::optional<std::int64_t> parse_timestamp_us(const std::string& t) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, consumed = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) != 6) {
    return std::nullopt;
  }
  using namespace std::chrono;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60 || h < 0 || mi < 0 || s < 0) return std::nullopt;
  std::int64_t us = sys_days{ymd}.time_since_epoch().count() * 86400LL * 1000000LL +
                    ((h * 60LL + mi) * 60LL + s) * 1000000LL;
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

// A CSV cell that must hold a number: empty cells and trailing text are errors, never 0.
Status cell_int(const std::string& where, const char* column, const std::string& text, std::int64_t* out) {
  const std::optional<std::int64_t> v = parse_int64(text);
  if (!v) return Status::error(where + "column " + column + ": '" + text + "' is not an integer");
  *out = *v;
  return Status();
}

Status cell_double(const std::string& where, const char* column, const std::string& text, double* out) {
  const std::optional<double> v = parse_finite_double(text);
  if (!v) return Status::error(where + "column " + column + ": '" + text + "' is not a finite number");
  *out = *v;
  return Status();
}

using CsvTrim = io::trim_chars<' ', '\t', '\r'>;
using CsvQuote = io::double_quote_escape<',', '"'>;

StatusOr<ConvertStats> convert_azure(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  ConvertStats stats;
  try {
    io::CSVReader<3, CsvTrim, CsvQuote> csv(input);
    csv.read_header(io::ignore_extra_column, "TIMESTAMP", "ContextTokens", "GeneratedTokens");
    std::string ts_text, context_text, generated_text;
    std::int64_t context = 0, generated = 0;
    std::int64_t first_us = 0, prev_us = 0, row = 0;
    TraceRequest r;
    while (csv.read_row(ts_text, context_text, generated_text)) {
      const std::string where = input + ": line " + std::to_string(csv.get_file_line()) + ": ";
      if (Status s = cell_int(where, "ContextTokens", context_text, &context); !s.ok()) return s;
      if (Status s = cell_int(where, "GeneratedTokens", generated_text, &generated); !s.ok()) return s;
      const std::optional<std::int64_t> us = parse_timestamp_us(ts_text);
      if (!us) return Status::error(where + "column TIMESTAMP: bad timestamp '" + ts_text + "'");
      if (row == 0) first_us = *us;
      if (row > 0 && *us < prev_us) return Status::error(where + "column TIMESTAMP: arrivals go backwards");
      if (context < 0) return Status::error(where + "column ContextTokens: negative");
      if (context > (1 << 20)) return Status::error(where + "column ContextTokens: too large");
      if (generated < 0) return Status::error(where + "column GeneratedTokens: negative");
      if (*us - first_us > kMaxArrivalTimeUs) {
        return Status::error(where + "column TIMESTAMP: more than 31 years after the first row");
      }
      prev_us = *us;
      if (context == 0) {
        ++stats.skipped;
        ++row;
        continue;
      }
      r = TraceRequest();
      r.id = "az" + std::to_string(row);
      r.arrival_time_us = *us - first_us;
      r.prompt_segments.push_back(PromptSegment::block(random_prompt_block(o.seed, row), static_cast<int>(context)));
      r.output_length = generated;
      ++row;
      if (Status s = writer.write(r); !s.ok()) return s.with_context(where);
      if (++stats.requests == o.max_requests) break;
    }
  } catch (const io::error::base& e) {
    return Status::error(e.what());
  }
  return stats;
}

StatusOr<ConvertStats> convert_burstgpt(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  ConvertStats stats;
  try {
    io::CSVReader<7, CsvTrim, CsvQuote> csv(input);
    csv.read_header(io::ignore_extra_column | io::ignore_missing_column, "Timestamp", "Model",
                    "Request tokens", "Response tokens", "Total tokens", "Log Type", "Session ID");
    for (const char* required : {"Timestamp", "Request tokens", "Response tokens"}) {
      if (!csv.has_column(required)) {
        return Status::error(input + ": line 1: missing column '" + std::string(required) + "'");
      }
    }
    const bool has_session = csv.has_column("Session ID");
    double ts = 0;
    std::string ts_text, model, req_text, resp_text, total, log_type, session;
    std::int64_t req = 0, resp = 0;
    double first_ts = 0;
    std::int64_t prev_us = 0, row = 0;
    TraceRequest r;
    while (csv.read_row(ts_text, model, req_text, resp_text, total, log_type, session)) {
      const std::string where = input + ": line " + std::to_string(csv.get_file_line()) + ": ";
      if (Status s = cell_double(where, "Timestamp", ts_text, &ts); !s.ok()) return s;
      if (Status s = cell_int(where, "Request tokens", req_text, &req); !s.ok()) return s;
      if (Status s = cell_int(where, "Response tokens", resp_text, &resp); !s.ok()) return s;
      // Seconds; the bound keeps microseconds far inside int64_t (trace.h's kMaxArrivalTimeUs).
      if (ts < 0 || ts > static_cast<double>(kMaxArrivalTimeUs) / 1e6) {
        return Status::error(where + "column Timestamp: " + ts_text + " is outside 0.." +
                             std::to_string(kMaxArrivalTimeUs / 1000000) + " seconds");
      }
      if (req < 0) return Status::error(where + "column Request tokens: negative");
      if (resp < 0) return Status::error(where + "column Response tokens: negative");
      if (req > (1 << 20)) return Status::error(where + "column Request tokens: too large");
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
      r = TraceRequest();
      r.id = "bg" + std::to_string(this_row);
      r.arrival_time_us = us;
      r.prompt_segments.push_back(PromptSegment::block(random_prompt_block(o.seed, this_row), static_cast<int>(req)));
      r.output_length = resp;
      if (has_session) r.session_id = session;
      if (Status s = writer.write(r); !s.ok()) return s.with_context(where);
      if (++stats.requests == o.max_requests) break;
    }
  } catch (const io::error::base& e) {
    return Status::error(e.what());
  }
  return stats;
}

}  // namespace

std::optional<SourceFormat> parse_source_format(std::string_view name) {
  if (name == "sharegpt") return SourceFormat::kShareGpt;
  if (name == "mooncake") return SourceFormat::kMooncake;
  if (name == "azure") return SourceFormat::kAzure;
  if (name == "burstgpt") return SourceFormat::kBurstGpt;
  if (name == "tokens") return SourceFormat::kTokens;
  return std::nullopt;
}

const char* to_string(SourceFormat f) {
  switch (f) {
    case SourceFormat::kShareGpt: return "sharegpt";
    case SourceFormat::kMooncake: return "mooncake";
    case SourceFormat::kAzure: return "azure";
    case SourceFormat::kBurstGpt: return "burstgpt";
    case SourceFormat::kTokens: return "tokens";
  }
  return "?";
}

Status validate(const ConvertOptions& o) {
  if (o.max_requests < 0) return Status::error("--max-requests: must be >= 0");
  if (!(o.rate >= kMinGenRate && o.rate <= kMaxGenRate)) {
    return Status::error("--rate: must be from 0.0001 to 1e9 per second");
  }
  if (!(o.arrival_cv >= 1e-3 && o.arrival_cv <= 100)) return Status::error("--arrival-cv: must be from 0.001 to 100");
  if (o.concurrent_sessions < 1 || o.concurrent_sessions > 1000000) {
    return Status::error("--sessions: must be from 1 to 1000000");
  }
  if (o.vocab_size < 0) return Status::error("--vocab-size: must be >= 0");
  if (o.max_model_len < 0 || o.max_model_len > kMaxPromptTokens) {
    return Status::error("--max-model-len: must be from 0 to " + std::to_string(kMaxPromptTokens));
  }
  return Status();
}

TraceHeader convert_header(SourceFormat format, const std::string& input, const ConvertOptions& o) {
  TraceHeader h;
  std::string base = input.substr(input.find_last_of('/') == std::string::npos ? 0 : input.find_last_of('/') + 1);
  std::ostringstream src;
  src << "kvsim convert --from " << to_string(format) << " " << base << " --seed " << o.seed;
  switch (format) {
    case SourceFormat::kShareGpt:
      src << " --rate " << o.rate << " --arrival-cv " << o.arrival_cv << " --sessions "
          << o.concurrent_sessions << " --max-model-len " << o.max_model_len;
      if (o.tokenizer != nullptr && o.tokenizer->name() != kWordHashTokenizerName) {
        src << " --tokenizer " << o.tokenizer->name();
      }
      h.tokenizer = o.tokenizer != nullptr ? o.tokenizer->description() : kWordHashTokenizerDescription;
      h.notes = "ShareGPT conversations: each prompt is the conversation so far; outputs are the "
                "recorded answers";
      break;
    case SourceFormat::kMooncake:
      h.tokenizer = "synthetic: hash_id h -> expand_block_tokens(h, 512) (traces/block_tokens.h)";
      h.notes = "Mooncake trace: 512-token blocks; equal hash ids give equal tokens";
      break;
    case SourceFormat::kAzure:
    case SourceFormat::kBurstGpt:
      h.tokenizer = "synthetic: a unique seeded random block per request (traces/block_tokens.h)";
      h.notes = "no prefix information in the source: prompts share nothing";
      if (!o.model.empty()) src << " --model " << o.model;
      break;
    case SourceFormat::kTokens:
      break;
  }
  if (o.max_requests > 0) src << " --max-requests " << o.max_requests;
  h.source = src.str();
  h.vocab_size = kBlockTokenVocab;
  if (format == SourceFormat::kShareGpt && o.tokenizer != nullptr) h.vocab_size = o.tokenizer->vocab_size();
  if (format == SourceFormat::kTokens) {
    h.tokenizer = "pre-tokenized: prompt_token_ids as given in the source";
    h.notes = "requests read from a JSONL of token ids; outputs are generated at replay";
    h.vocab_size = o.vocab_size;
    if (o.vocab_size > 0) src << " --vocab-size " << o.vocab_size;
    h.source = src.str();
  }
  return h;
}

StatusOr<ConvertStats> convert_trace(SourceFormat format, const std::string& input,
                                     const ConvertOptions& options, TraceWriter& writer) {
  switch (format) {
    case SourceFormat::kShareGpt: return convert_sharegpt(input, options, writer);
    case SourceFormat::kMooncake: return convert_mooncake(input, options, writer);
    case SourceFormat::kAzure: return convert_azure(input, options, writer);
    case SourceFormat::kBurstGpt: return convert_burstgpt(input, options, writer);
    case SourceFormat::kTokens: return convert_tokens(input, options, writer);
  }
  return Status::error("unknown format");
}

}  // namespace kv::trace
