#include "traces/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <openssl/evp.h>
#include <pcre2.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <array>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <unordered_map>

namespace kv::trace {

namespace {

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// UTF-8

std::string utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Length of the UTF-8 sequence starting at s[i], or 0 when it is not valid UTF-8.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) >> 6) != 0x2) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  const bool overlong = (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// The byte offset of the first invalid UTF-8 sequence, or npos.
std::size_t invalid_utf8_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

// GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for 256 + k.
std::array<std::string, 256> byte_level_alphabet() {
  std::array<std::string, 256> a;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    a[static_cast<std::size_t>(b)] = utf8(printable ? static_cast<char32_t>(b) : next++);
  }
  return a;
}

std::string nfc(std::string_view text) {
  UErrorCode e = U_ZERO_ERROR;
  const UNormalizer2* n = unorm2_getNFCInstance(&e);
  std::vector<UChar> in(text.size() + 1), out;
  int32_t in_len = 0;
  u_strFromUTF8(in.data(), static_cast<int32_t>(in.size()), &in_len, text.data(), static_cast<int32_t>(text.size()),
                &e);
  if (U_FAILURE(e) || unorm2_isNormalized(n, in.data(), in_len, &e)) return std::string(text);
  out.resize(static_cast<std::size_t>(in_len) * 3 + 16);
  const int32_t out_len = unorm2_normalize(n, in.data(), in_len, out.data(), static_cast<int32_t>(out.size()), &e);
  std::string result(static_cast<std::size_t>(out_len) * 3 + 4, '\0');
  int32_t bytes = 0;
  u_strToUTF8(result.data(), static_cast<int32_t>(result.size()), &bytes, out.data(), out_len, &e);
  if (U_FAILURE(e)) return std::string(text);
  result.resize(static_cast<std::size_t>(bytes));
  return result;
}

// ---------------------------------------------------------------------------------------------
// Regexes

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
using RegexCode = std::unique_ptr<pcre2_code, CodeDeleter>;

// Oniguruma's (the Rust library's) \s: U+0009-000D, U+0085 and General_Category Z.
constexpr const char* kOnigSpace = "\\t-\\r\\x{85}\\p{Z}";

// Rewrites \s and \S to kOnigSpace; \S inside a character class cannot be rewritten.
StatusOr<std::string> onig_pattern(std::string_view p) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      if (e == 's') {
        out += in_class ? std::string(kOnigSpace) : "[" + std::string(kOnigSpace) + "]";
      } else if (e == 'S') {
        if (in_class) return Status::error("\\S inside a character class is not supported");
        out += "[^" + std::string(kOnigSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ] first
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

StatusOr<RegexCode> compile_regex(const std::string& pattern) {
  StatusOr<std::string> p = onig_pattern(pattern);
  if (!p.ok()) return p.status();
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p->data()), p->size(), PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
  if (re == nullptr) {
    std::array<PCRE2_UCHAR, 256> msg{};
    pcre2_get_error_message(code, msg.data(), msg.size());
    return Status::error("regex does not compile at offset " + std::to_string(offset) + ": " +
                         reinterpret_cast<const char*>(msg.data()));
  }
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  // best effort: the interpreter gives the same matches
  return RegexCode(re);
}

// Byte ranges [begin, end) of the non-empty matches of `re` in `s`, left to right.
StatusOr<std::vector<std::pair<std::size_t, std::size_t>>> find_all(const pcre2_code* re, std::string_view s) {
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(pcre2_match_data_create_from_pattern(re, nullptr),
                                                                    pcre2_match_data_free);
  std::vector<std::pair<std::size_t, std::size_t>> found;
  std::size_t at = 0;
  while (at < s.size()) {
    const int rc =
        pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), at, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return Status::error("regex match failed (PCRE2 error " + std::to_string(rc) + ")");
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    if (ov[1] == ov[0]) {
      at = ov[0] + std::max<std::size_t>(1, utf8_length(s, ov[0]));
      continue;
    }
    found.emplace_back(ov[0], ov[1]);
    at = ov[1];
  }
  return found;
}

// GPT-2's pre-tokenizer regex: what ByteLevel with use_regex = true splits with.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ---------------------------------------------------------------------------------------------
// Steps

struct NormalizeStep {
  bool nfc = false;  // else: replace every `from` with `to`
  std::string from, to;
};

enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious };

struct PreTokenizeStep {
  enum class Kind { kRegex, kString, kByteLevel } kind = Kind::kRegex;
  RegexCode regex;      // kRegex, and kByteLevel with use_regex
  std::string literal;  // kString
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool add_prefix_space = false;  // kByteLevel
};

struct Merge {
  int rank = 0;
  TokenId id = 0;
};

std::uint64_t pair_key(TokenId a, TokenId b) {
  return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
}

// The added tokens, as a byte trie for leftmost-longest matching.
struct AddedTokens {
  struct Node {
    std::map<unsigned char, int> next;
    TokenId id = -1;  // >= 0: a token ends here
  };
  std::vector<Node> nodes{Node{}};

  void add(std::string_view content, TokenId id) {
    int n = 0;
    for (char ch : content) {
      const auto c = static_cast<unsigned char>(ch);
      auto it = nodes[static_cast<std::size_t>(n)].next.find(c);
      if (it == nodes[static_cast<std::size_t>(n)].next.end()) {
        nodes.push_back(Node{});
        it = nodes[static_cast<std::size_t>(n)].next.emplace(c, static_cast<int>(nodes.size() - 1)).first;
      }
      n = it->second;
    }
    nodes[static_cast<std::size_t>(n)].id = id;
  }

  // The longest token starting at s[i]: {length, id}, length 0 if none.
  std::pair<std::size_t, TokenId> longest_at(std::string_view s, std::size_t i) const {
    std::pair<std::size_t, TokenId> best{0, -1};
    int n = 0;
    for (std::size_t k = i; k < s.size(); ++k) {
      const auto& next = nodes[static_cast<std::size_t>(n)].next;
      const auto it = next.find(static_cast<unsigned char>(s[k]));
      if (it == next.end()) break;
      n = it->second;
      if (nodes[static_cast<std::size_t>(n)].id >= 0) best = {k + 1 - i, nodes[static_cast<std::size_t>(n)].id};
    }
    return best;
  }
};

}  // namespace

struct BpeTokenizer::Impl {
  std::vector<NormalizeStep> normalizers;
  std::vector<PreTokenizeStep> pre_tokenizers;
  bool byte_level = false;  // pieces are spelled in the byte-level alphabet before BPE
  std::array<std::string, 256> alphabet = byte_level_alphabet();
  std::unordered_map<std::string, TokenId> vocab;
  std::unordered_map<std::uint64_t, Merge> merges;  // pair_key(left, right) -> rank, merged id
  std::array<TokenId, 256> byte_ids{};              // byte-level: the id of each byte's letter; else <0xXX>
  bool ignore_merges = false;                       // a piece that is a whole vocabulary entry is not merged
  bool byte_fallback = false;
  bool fuse_unk = false;
  TokenId unk = -1;
  AddedTokens added;
  std::string description;
  std::int64_t vocab_size = 0;

  Status encode(std::string_view text, std::vector<TokenId>& out) const;
  Status encode_segment(std::string_view segment, std::vector<TokenId>& out) const;
  std::string normalize(std::string_view text) const;
  Status pre_tokenize(std::string text, std::vector<std::string>& pieces) const;
  Status initial_symbols(std::string_view piece, std::vector<TokenId>& symbols) const;
  Status bpe(std::string_view piece, std::vector<TokenId>& out) const;
  void merge(std::vector<TokenId>& symbols) const;
};

// ---------------------------------------------------------------------------------------------
// Encoding

namespace {

std::string replace_all(std::string_view s, const std::string& from, const std::string& to) {
  if (from.empty()) return std::string(s);
  std::string out;
  std::size_t i = 0;
  for (std::size_t at = s.find(from); at != std::string_view::npos; at = s.find(from, i)) {
    out.append(s.substr(i, at - i)).append(to);
    i = at + from.size();
  }
  return out.append(s.substr(i));
}

// Cuts `s` at `matches` the way the library's Split does with `behavior`; empty parts vanish.
void split_at(std::string_view s, const std::vector<std::pair<std::size_t, std::size_t>>& matches,
              SplitBehavior behavior, std::vector<std::string>& out) {
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>> parts;  // range, is a match
  std::size_t last = 0;
  for (const auto& [b, e] : matches) {
    if (b > last) parts.push_back({{last, b}, false});
    parts.push_back({{b, e}, true});
    last = e;
  }
  if (last < s.size()) parts.push_back({{last, s.size()}, false});
  const std::size_t first = out.size();
  bool previous_was_match = false;
  for (const auto& [range, is_match] : parts) {
    const std::string_view part = s.substr(range.first, range.second - range.first);
    if (is_match && behavior == SplitBehavior::kRemoved) {
      // dropped
    } else if (is_match && behavior == SplitBehavior::kMergedWithPrevious && !previous_was_match &&
               out.size() > first) {
      out.back().append(part);
    } else {
      out.emplace_back(part);
    }
    previous_was_match = is_match;
  }
}

}  // namespace

std::string BpeTokenizer::Impl::normalize(std::string_view text) const {
  std::string s(text);
  for (const NormalizeStep& n : normalizers) s = n.nfc ? nfc(s) : replace_all(s, n.from, n.to);
  return s;
}

Status BpeTokenizer::Impl::pre_tokenize(std::string text, std::vector<std::string>& pieces) const {
  pieces.clear();
  if (!text.empty()) pieces.push_back(std::move(text));
  for (const PreTokenizeStep& step : pre_tokenizers) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (step.kind == PreTokenizeStep::Kind::kByteLevel && step.add_prefix_space && piece[0] != ' ') {
        piece.insert(piece.begin(), ' ');
      }
      if (step.kind == PreTokenizeStep::Kind::kString) {
        std::vector<std::pair<std::size_t, std::size_t>> found;
        for (std::size_t at = piece.find(step.literal); at != std::string::npos && !step.literal.empty();
             at = piece.find(step.literal, at + step.literal.size())) {
          found.emplace_back(at, at + step.literal.size());
        }
        split_at(piece, found, step.behavior, next);
      } else if (step.regex) {
        auto found = find_all(step.regex.get(), piece);
        if (!found.ok()) return found.status();
        split_at(piece, *found, step.behavior, next);
      } else {
        next.push_back(std::move(piece));
      }
    }
    pieces = std::move(next);
  }
  return Status();
}

Status BpeTokenizer::Impl::initial_symbols(std::string_view piece, std::vector<TokenId>& symbols) const {
  symbols.clear();
  if (byte_level) {
    for (char ch : piece) symbols.push_back(byte_ids[static_cast<unsigned char>(ch)]);
    return Status();
  }
  bool previous_unk = false;
  for (std::size_t i = 0; i < piece.size();) {
    const std::size_t n = std::max<std::size_t>(1, utf8_length(piece, i));
    const std::string_view ch = piece.substr(i, n);
    i += n;
    if (const auto it = vocab.find(std::string(ch)); it != vocab.end()) {
      symbols.push_back(it->second);
      previous_unk = false;
    } else if (byte_fallback) {
      for (char b : ch) symbols.push_back(byte_ids[static_cast<unsigned char>(b)]);
      previous_unk = false;
    } else if (unk >= 0) {
      if (!(fuse_unk && previous_unk)) symbols.push_back(unk);
      previous_unk = true;
    } else {
      return Status::error("no token for the character '" + std::string(ch) + "' and no unk_token");
    }
  }
  return Status();
}

void BpeTokenizer::Impl::merge(std::vector<TokenId>& ids) const {
  struct Candidate {
    int rank;
    std::size_t pos;  // of the left symbol
    TokenId id;       // what the pair becomes
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  const std::size_t n = ids.size();
  std::vector<std::size_t> next(n), prev(n);
  std::vector<char> alive(n, 1);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto offer = [&](std::size_t left, std::size_t right) {
    if (left == kNone || right == kNone) return;
    const auto it = merges.find(pair_key(ids[left], ids[right]));
    if (it != merges.end()) queue.push(Candidate{it->second.rank, left, it->second.id});
  };
  for (std::size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : kNone;
    prev[i] = i == 0 ? kNone : i - 1;
  }
  for (std::size_t i = 0; i + 1 < n; ++i) offer(i, i + 1);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    const std::size_t right = next[c.pos];
    if (!alive[c.pos] || right == kNone) continue;
    const auto it = merges.find(pair_key(ids[c.pos], ids[right]));
    if (it == merges.end() || it->second.id != c.id) continue;  // stale: a neighbour changed
    ids[c.pos] = c.id;
    alive[right] = 0;
    next[c.pos] = next[right];
    if (next[right] != kNone) prev[next[right]] = c.pos;
    offer(prev[c.pos], c.pos);
    offer(c.pos, next[c.pos]);
  }
  std::size_t w = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (alive[i]) ids[w++] = ids[i];
  }
  ids.resize(w);
}

Status BpeTokenizer::Impl::bpe(std::string_view piece, std::vector<TokenId>& out) const {
  if (ignore_merges) {
    std::string spelled;
    if (byte_level) {
      for (char ch : piece) spelled += alphabet[static_cast<unsigned char>(ch)];
    }
    const auto it = vocab.find(byte_level ? spelled : std::string(piece));
    if (it != vocab.end()) {
      out.push_back(it->second);
      return Status();
    }
  }
  std::vector<TokenId> symbols;
  if (Status s = initial_symbols(piece, symbols); !s.ok()) return s;
  merge(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  return Status();
}

Status BpeTokenizer::Impl::encode_segment(std::string_view segment, std::vector<TokenId>& out) const {
  std::vector<std::string> pieces;
  if (Status s = pre_tokenize(normalize(segment), pieces); !s.ok()) return s;
  for (const std::string& piece : pieces) {
    if (Status s = bpe(piece, out); !s.ok()) return s;
  }
  return Status();
}

Status BpeTokenizer::Impl::encode(std::string_view text, std::vector<TokenId>& out) const {
  if (const std::size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    return Status::error("invalid UTF-8 at byte " + std::to_string(bad));
  }
  std::size_t start = 0;  // of the text not yet encoded
  for (std::size_t i = 0; i < text.size();) {
    const auto [length, id] = added.longest_at(text, i);
    if (length == 0) {
      ++i;
      continue;
    }
    if (Status s = encode_segment(text.substr(start, i - start), out); !s.ok()) return s;
    out.push_back(id);
    i += length;
    start = i;
  }
  return encode_segment(text.substr(start), out);
}

// ---------------------------------------------------------------------------------------------
// Loading

namespace {

// Reads obj[key] as T; the error names the field.
template <typename T>
Status get(const json& obj, const char* key, T& value, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) return Status::error(where + ": missing field \"" + key + "\"");
  try {
    value = it->get<T>();
  } catch (const json::exception& e) {
    return Status::error(where + "." + key + ": " + e.what());
  }
  return Status();
}

bool is_null_or_empty(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty());
}

bool is_true(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

Status load_normalizer(const json& n, const std::string& where, std::vector<NormalizeStep>& steps) {
  if (n.is_null()) return Status();
  std::string type;
  if (Status s = get(n, "type", type, where); !s.ok()) return s;
  if (type == "Sequence") {
    if (!n.contains("normalizers") || !n["normalizers"].is_array()) {
      return Status::error(where + ".normalizers: missing or not an array");
    }
    for (std::size_t i = 0; i < n["normalizers"].size(); ++i) {
      const std::string w = where + ".normalizers[" + std::to_string(i) + "]";
      if (Status s = load_normalizer(n["normalizers"][i], w, steps); !s.ok()) return s;
    }
    return Status();
  }
  if (type == "NFC") {
    steps.push_back(NormalizeStep{true, "", ""});
    return Status();
  }
  if (type == "Replace" && n.contains("pattern") && n["pattern"].contains("String")) {
    NormalizeStep step;
    if (Status s = get(n["pattern"], "String", step.from, where + ".pattern"); !s.ok()) return s;
    if (Status s = get(n, "content", step.to, where); !s.ok()) return s;
    steps.push_back(std::move(step));
    return Status();
  }
  return Status::error(where + ": unsupported normalizer " + n.dump().substr(0, 120));
}

Status load_split(const json& p, const std::string& where, PreTokenizeStep& step) {
  if (is_true(p, "invert")) return Status::error(where + ".invert: an inverted Split is not supported");
  std::string behavior;
  if (Status s = get(p, "behavior", behavior, where); !s.ok()) return s;
  if (behavior == "Isolated")
    step.behavior = SplitBehavior::kIsolated;
  else if (behavior == "Removed")
    step.behavior = SplitBehavior::kRemoved;
  else if (behavior == "MergedWithPrevious")
    step.behavior = SplitBehavior::kMergedWithPrevious;
  else
    return Status::error(where + ".behavior: unsupported Split behavior '" + behavior + "'");
  if (!p.contains("pattern") || !p["pattern"].is_object()) return Status::error(where + ": missing field \"pattern\"");
  const json& pattern = p["pattern"];
  if (pattern.contains("String")) {
    step.kind = PreTokenizeStep::Kind::kString;
    return get(pattern, "String", step.literal, where + ".pattern");
  }
  std::string regex;
  if (Status s = get(pattern, "Regex", regex, where + ".pattern"); !s.ok()) return s;
  StatusOr<RegexCode> code = compile_regex(regex);
  if (!code.ok()) return code.status().with_context(where + ".pattern.Regex: ");
  step.kind = PreTokenizeStep::Kind::kRegex;
  step.regex = std::move(*code);
  return Status();
}

Status load_pre_tokenizer(const json& p, const std::string& where, BpeTokenizer::Impl& t) {
  if (p.is_null()) return Status();
  std::string type;
  if (Status s = get(p, "type", type, where); !s.ok()) return s;
  if (type == "Sequence") {
    if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array()) {
      return Status::error(where + ".pretokenizers: missing or not an array");
    }
    for (std::size_t i = 0; i < p["pretokenizers"].size(); ++i) {
      const std::string w = where + ".pretokenizers[" + std::to_string(i) + "]";
      if (Status s = load_pre_tokenizer(p["pretokenizers"][i], w, t); !s.ok()) return s;
    }
    return Status();
  }
  PreTokenizeStep step;
  if (type == "Split") {
    if (Status s = load_split(p, where, step); !s.ok()) return s;
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizeStep::Kind::kByteLevel;
    step.add_prefix_space = is_true(p, "add_prefix_space");
    if (!p.contains("use_regex") || is_true(p, "use_regex")) {
      StatusOr<RegexCode> code = compile_regex(kGpt2Pattern);
      if (!code.ok()) return code.status().with_context(where + ": ");
      step.regex = std::move(*code);
    }
    t.byte_level = true;
  } else {
    return Status::error(where + ": unsupported pre-tokenizer type '" + type + "'");
  }
  t.pre_tokenizers.push_back(std::move(step));
  return Status();
}

StatusOr<std::pair<std::string, std::string>> merge_pair(const json& m, const std::string& where) {
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    return std::pair{m[0].get<std::string>(), m[1].get<std::string>()};
  }
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const std::size_t space = s.find(' ');
    if (space != std::string::npos && s.find(' ', space + 1) == std::string::npos) {
      return std::pair{s.substr(0, space), s.substr(space + 1)};
    }
  }
  return Status::error(where + ": a merge must be \"left right\" or [\"left\", \"right\"], got " + m.dump());
}

Status load_merges(const json& merges, const std::string& where, BpeTokenizer::Impl& t) {
  if (!merges.is_array()) return Status::error(where + ": missing or not an array");
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    StatusOr<std::pair<std::string, std::string>> p = merge_pair(merges[i], w);
    if (!p.ok()) return p.status();
    const auto left = t.vocab.find(p->first), right = t.vocab.find(p->second);
    const auto merged = t.vocab.find(p->first + p->second);
    if (left == t.vocab.end() || right == t.vocab.end() || merged == t.vocab.end()) {
      return Status::error(w + ": a part or the result of the merge is not in the vocabulary");
    }
    t.merges.emplace(pair_key(left->second, right->second), Merge{static_cast<int>(i), merged->second});
  }
  return Status();
}

Status load_byte_ids(const std::string& where, BpeTokenizer::Impl& t) {
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    const std::string name = t.byte_level ? t.alphabet[static_cast<std::size_t>(b)] : std::string(hex);
    const auto it = t.vocab.find(name);
    if (it != t.vocab.end())
      t.byte_ids[static_cast<std::size_t>(b)] = it->second;
    else if (t.byte_level || t.byte_fallback)
      return Status::error(where + ": no token for byte " + name);
  }
  return Status();
}

Status load_model(const json& m, const std::string& where, BpeTokenizer::Impl& t) {
  std::string type;
  if (Status s = get(m, "type", type, where); !s.ok()) return s;
  if (type != "BPE") return Status::error(where + ".type: unsupported model type '" + type + "' (only BPE)");
  for (const char* unsupported : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!is_null_or_empty(m, unsupported)) return Status::error(where + "." + unsupported + ": not supported");
  }
  if (!m.contains("vocab") || !m["vocab"].is_object()) return Status::error(where + ".vocab: missing or not an object");
  for (const auto& [token, id] : m["vocab"].items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > INT32_MAX) {
      return Status::error(where + ".vocab[\"" + token + "\"]: the id must be an integer in [0, 2^31)");
    }
    t.vocab.emplace(token, id.get<TokenId>());
    t.vocab_size = std::max(t.vocab_size, id.get<std::int64_t>() + 1);
  }
  t.ignore_merges = is_true(m, "ignore_merges");
  t.byte_fallback = is_true(m, "byte_fallback");
  t.fuse_unk = is_true(m, "fuse_unk");
  if (!is_null_or_empty(m, "unk_token")) {
    const auto it = t.vocab.find(m["unk_token"].is_string() ? m["unk_token"].get<std::string>() : "");
    if (it == t.vocab.end()) return Status::error(where + ".unk_token: not a string in the vocabulary");
    t.unk = it->second;
  }
  if (Status s = load_byte_ids(where, t); !s.ok()) return s;
  return load_merges(m.contains("merges") ? m["merges"] : json(), where + ".merges", t);
}

Status load_added_tokens(const json& added, BpeTokenizer::Impl& t) {
  if (added.is_null()) return Status();
  if (!added.is_array()) return Status::error("added_tokens: not an array");
  for (std::size_t i = 0; i < added.size(); ++i) {
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    std::string content;
    TokenId id = 0;
    if (Status s = get(added[i], "content", content, where); !s.ok()) return s;
    if (Status s = get(added[i], "id", id, where); !s.ok()) return s;
    for (const char* flag : {"lstrip", "rstrip", "single_word", "normalized"}) {
      if (is_true(added[i], flag)) return Status::error(where + "." + flag + ": true is not supported");
    }
    if (content.empty() || id < 0) return Status::error(where + ": empty content or negative id");
    t.added.add(content, id);
    t.vocab_size = std::max<std::int64_t>(t.vocab_size, id + 1);
  }
  return Status();
}

std::string sha256_hex(const std::string& bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), md.data(), &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

}  // namespace

StatusOr<BpeTokenizer> BpeTokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Status::error(path + ": not a JSON object (bad JSON?)");
  auto t = std::make_unique<Impl>();
  if (!doc.contains("model") || !doc["model"].is_object()) return Status::error(path + ": missing field \"model\"");
  Status s = load_normalizer(doc.value("normalizer", json()), "normalizer", t->normalizers);
  if (s.ok()) s = load_pre_tokenizer(doc.value("pre_tokenizer", json()), "pre_tokenizer", *t);
  if (s.ok()) s = load_model(doc["model"], "model", *t);
  if (s.ok()) s = load_added_tokens(doc.value("added_tokens", json()), *t);
  if (!s.ok()) return s.with_context(path + ": ");
  const std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  t->description = "hf-bpe " + base + " sha256:" + sha256_hex(text.str()).substr(0, 16) + ": " +
                   (t->byte_level ? "byte-level BPE" : "BPE with byte fallback") + ", " +
                   std::to_string(t->vocab_size) + " ids; added tokens matched in text, none added";
  return BpeTokenizer(std::move(t));
}

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

Status BpeTokenizer::encode(std::string_view text, std::vector<TokenId>& out) const { return impl_->encode(text, out); }
const std::string& BpeTokenizer::description() const { return impl_->description; }
std::int64_t BpeTokenizer::vocab_size() const { return impl_->vocab_size; }

}  // namespace kv::trace
