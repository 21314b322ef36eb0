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

#include "model/parse_number.h"
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

// Holds the parser state of one ShareGPT file; never moved once iteration has begun.
struct ShareGptSource {
  std::string path;
  int max_model_len = 0;
  simdjson::padded_string json;
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::array conversations;
  simdjson::ondemand::array_iterator it;
  simdjson::ondemand::array_iterator end;
  std::int64_t index = 0;     // conversations consumed
  std::int64_t skipped = 0;   // turns dropped (empty answers, over max_model_len)

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
    std::vector<TokenId> user;       // the pending user message
    std::vector<TokenId> system;     // system text before the first turn
    std::int64_t context = 0;
    bool closed = false;             // max_model_len reached: later turns are dropped
    bool seen_messages = false;
    for (auto field : conv) {
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return Status::error(where + "bad JSON: " + json_error(e));
      if (key == "id") {
        std::string_view id;
        if (field.value().get_string().get(id) == simdjson::SUCCESS) s->id = std::string(id);
        continue;
      }
      if (key != "conversations") continue;
      seen_messages = true;
      simdjson::ondemand::array messages;
      if (auto e = field.value().get_array().get(messages)) {
        return Status::error(where + "field conversations: " + json_error(e));
      }
      std::int64_t m = 0;
      for (auto message : messages) {
        const std::string mwhere = where + "field conversations[" + std::to_string(m++) + "]";
        simdjson::ondemand::object mo;
        if (auto e = message.get_object().get(mo)) return Status::error(mwhere + ": " + json_error(e));
        std::string from;
        std::string_view value;
        bool have_value = false;
        for (auto mf : mo) {
          std::string_view k;
          if (auto e = mf.unescaped_key().get(k)) return Status::error(mwhere + ": " + json_error(e));
          if (k == "from" || k == "role") {
            std::string_view f;
            if (auto e = mf.value().get_string().get(f)) return Status::error(mwhere + ".from: " + json_error(e));
            from = std::string(f);
          } else if (k == "value" || k == "content") {
            if (auto e = mf.value().get_string().get(value)) {
              return Status::error(mwhere + ".value: " + json_error(e));
            }
            have_value = true;  // the view stays valid while the document is being read
          }
        }
        if (from.empty()) return Status::error(mwhere + ": missing field \"from\"");
        if (!have_value) return Status::error(mwhere + ": missing field \"value\"");
        if (is_user_role(from)) {
          tokenize_words(value, user);
        } else if (from == "system") {
          if (s->turns.empty() && user.empty()) tokenize_words(value, system);
        } else if (is_assistant_role(from)) {
          std::vector<TokenId> reply;
          tokenize_words(value, reply);
          if (user.empty() && s->turns.empty() && system.empty()) {
            ++skipped;  // an answer with nothing before it
            continue;
          }
          if (reply.empty() || closed) {
            ++skipped;
            continue;
          }
          const auto added = static_cast<std::int64_t>(user.size() + reply.size());
          if (max_model_len > 0 && context + static_cast<std::int64_t>(system.size()) + added > max_model_len) {
            closed = true;
            ++skipped;
            continue;
          }
          context += added;
          s->turns.push_back(Turn{PromptSegment::literal(std::move(user)), PromptSegment::literal(std::move(reply))});
          user.clear();
        } else {
          return Status::error(mwhere + ".from: unknown role '" + from + "'");
        }
      }
    }
    if (!seen_messages) return Status::error(where + "missing field \"conversations\"");
    if (!system.empty()) s->preamble.push_back(PromptSegment::literal(std::move(system)));
    if (s->id.empty()) s->id = "c" + std::to_string(index);
    else s->id = "c" + std::to_string(index) + ":" + s->id;
    ++index;
    ++it;
    return true;
  }
};

StatusOr<ConvertStats> convert_sharegpt(const std::string& input, const ConvertOptions& o, TraceWriter& writer) {
  auto src = std::make_unique<ShareGptSource>();
  src->path = input;
  src->max_model_len = o.max_model_len;
  if (Status s = src->open(); !s.ok()) return s;
  ArrivalOptions a;
  a.rate = o.rate;
  a.arrival_cv = o.arrival_cv;
  a.concurrent_sessions = o.concurrent_sessions;
  a.max_requests = o.max_requests;
  a.seed = o.seed;
  StatusOr<std::int64_t> n = write_sessions(a, [&](Session* s) { return src->next(s); }, writer);
  if (!n.ok()) return n.status();
  return ConvertStats{*n, src->skipped};
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
  return std::nullopt;
}

const char* to_string(SourceFormat f) {
  switch (f) {
    case SourceFormat::kShareGpt: return "sharegpt";
    case SourceFormat::kMooncake: return "mooncake";
    case SourceFormat::kAzure: return "azure";
    case SourceFormat::kBurstGpt: return "burstgpt";
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
      h.tokenizer = kWordHashTokenizerDescription;
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
  }
  if (o.max_requests > 0) src << " --max-requests " << o.max_requests;
  h.source = src.str();
  h.vocab_size = kBlockTokenVocab;
  return h;
}

StatusOr<ConvertStats> convert_trace(SourceFormat format, const std::string& input,
                                     const ConvertOptions& options, TraceWriter& writer) {
  switch (format) {
    case SourceFormat::kShareGpt: return convert_sharegpt(input, options, writer);
    case SourceFormat::kMooncake: return convert_mooncake(input, options, writer);
    case SourceFormat::kAzure: return convert_azure(input, options, writer);
    case SourceFormat::kBurstGpt: return convert_burstgpt(input, options, writer);
  }
  return Status::error("unknown format");
}

}  // namespace kv::trace
