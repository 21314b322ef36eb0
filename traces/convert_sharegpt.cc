// ShareGPT JSON (converters.h): each user message with its answer becomes one request whose
// prompt is the conversation so far; sessions are interleaved and timed by write_sessions.
#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "traces/convert_formats.h"
#include "traces/convert_json.h"
#include "traces/generators.h"
#include "traces/text_tokenizer.h"

namespace kv::trace {

namespace {

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
      return Status::error(path + ": bad JSON: the top level must be an array of conversations (" + json_error(e) +
                           ")");
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
  Status read_messages(simdjson::ondemand::value value, const std::string& where, Session* s, ShareGptConversation& c) {
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
          if (auto e = mf.value().get_string().get(f))
            return Status::error(mwhere + "." + std::string(k) + ": " + json_error(e));
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
        if (auto e = field.value().get(v))
          return Status::error(where + "field " + std::string(key) + ": " + json_error(e));
        if (Status st = read_messages(v, where + "field " + std::string(key), s, c); !st.ok()) return st;
      }
    }
    if (!seen_messages) return Status::error(where + "missing field \"conversations\" (or \"messages\")");
    if (!c.user.empty() && !c.closed) ++unanswered;
    if (!c.system.empty()) s->preamble.push_back(PromptSegment::literal(std::move(c.system)));
    if (s->id.empty())
      s->id = "c" + std::to_string(index);
    else
      s->id = "c" + std::to_string(index) + ":" + s->id;
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

}  // namespace

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
  StatusOr<std::int64_t> n = write_sessions(
      a, [&](Session* s) { return src->next(s); }, writer);
  if (!n.ok()) return n.status();
  return ConvertStats{*n, src->skipped, src->unanswered};
}

}  // namespace kv::trace
