// BpeTokenizer on small hand-made tokenizer.json files: merge order, added tokens, the Rust
// library's whitespace class, ignore_merges, byte fallback, and the errors of load/encode.
// Both tokenizers at their boundaries: empty text, unassigned and extreme code points, invalid
// UTF-8, unknown characters, and a ShareGPT turn that exactly fills --max-model-len counted in
// BPE tokens. (Exactness on real tokenizers: tests/cli/tokenizer_exact_test.sh.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/traces/traces_test_util.h"
#include "traces/bpe_tokenizer.h"
#include "traces/converters.h"
#include "traces/text_tokenizer.h"
#include "traces/tokenizer.h"
#include "traces/trace_io.h"

namespace kv::trace {
namespace {

using json = nlohmann::json;
using testing::scratch_path;
using testing::write_bytes;

// Llama 3's pre-tokenizer regex.
const char kLlama3Pattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The byte-level letter of byte b (GPT-2's table, written out independently of the library).
std::string letter(int b) {
  int cp = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    int n = 0;
    for (int k = 0; k < b; ++k) n += !((k >= 33 && k <= 126) || (k >= 161 && k <= 172) || (k >= 174 && k <= 255));
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80)
    s += static_cast<char>(cp);
  else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// A byte-level tokenizer: byte b has id b; merges (in rank order) get ids from 256 on.
json byte_level_tokenizer(const std::vector<std::pair<std::string, std::string>>& merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[letter(b)] = b;
  json m = json::array();
  int next = 256;
  for (const auto& [l, r] : merges) {
    if (!vocab.contains(l + r)) vocab[l + r] = next++;
    m.push_back(l + " " + r);
  }
  return json{
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}, {"ignore_merges", false}}},
      {"added_tokens", {{{"id", 300}, {"content", "<|eot|>"}, {"special", true}}}},
  };
}

StatusOr<BpeTokenizer> load(const json& j) {
  const std::string path = scratch_path("tokenizer.json");
  write_bytes(path, j.dump());
  return BpeTokenizer::load(path);
}

std::vector<TokenId> encode(const BpeTokenizer& t, std::string_view text) {
  std::vector<TokenId> out;
  const Status s = t.encode(text, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

void expect_load_error(const json& j, const std::string& fragment) {
  StatusOr<BpeTokenizer> t = load(j);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(fragment), std::string::npos) << t.status().message();
}

const std::vector<std::pair<std::string, std::string>> kHelloMerges = {
    {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {letter(' '), "h"}};

TEST(BpeTokenizer, MergesLowestRankFirstAndLeftmostAmongEqualRanks) {
  StatusOr<BpeTokenizer> t = load(byte_level_tokenizer(kHelloMerges));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(encode(*t, "hello"), (std::vector<TokenId>{259}));
  // "Ġ h" has the highest rank: "he", "ll", "hell", "hello" win first, and Ġ stays alone.
  EXPECT_EQ(encode(*t, " hello"), (std::vector<TokenId>{' ', 259}));
  EXPECT_EQ(encode(*t, "lll"), (std::vector<TokenId>{257, 'l'}));  // "ll" + "l", not "l" + "ll"
  EXPECT_EQ(encode(*t, "hi"), (std::vector<TokenId>{'h', 'i'}));
  EXPECT_EQ(encode(*t, ""), (std::vector<TokenId>{}));
  EXPECT_EQ(t->vocab_size(), 301);
}

TEST(BpeTokenizer, TextSpellingAnAddedTokenIsThatToken) {
  StatusOr<BpeTokenizer> t = load(byte_level_tokenizer(kHelloMerges));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(encode(*t, "hello<|eot|>hello"), (std::vector<TokenId>{259, 300, 259}));
  EXPECT_EQ(encode(*t, "<|eot|><|eot|>"), (std::vector<TokenId>{300, 300}));
  EXPECT_EQ(encode(*t, "<|eot|").size(), 6u);  // not the token: its bytes
}

TEST(BpeTokenizer, WhitespaceIsTheRustLibrarysClass) {
  // U+0085 is C2 85, U+FEFF is EF BB BF: merges make each one token, and one with "!" after it.
  const std::string nel = letter(0xC2) + letter(0x85), bom = letter(0xEF) + letter(0xBB) + letter(0xBF);
  StatusOr<BpeTokenizer> t = load(byte_level_tokenizer({{letter(0xC2), letter(0x85)},
                                                        {nel, "!"},
                                                        {letter(0xEF), letter(0xBB)},
                                                        {letter(0xEF) + letter(0xBB), letter(0xBF)},
                                                        {bom, "!"},
                                                        {letter(0xE1), letter(0xA0)},
                                                        {letter(0xE1) + letter(0xA0), letter(0x8E)},
                                                        {letter(0xE1) + letter(0xA0) + letter(0x8E), "!"}}));
  ASSERT_TRUE(t.ok()) << t.status().message();
  // U+0085 is whitespace (Oniguruma): "\u0085" and "!" are separate pieces (JavaScript: one).
  EXPECT_EQ(encode(*t, "a\u0085!"), (std::vector<TokenId>{'a', 256, '!'}));
  // U+FEFF is not whitespace: "\uFEFF!" is one piece (JavaScript: two).
  EXPECT_EQ(encode(*t, "x\uFEFF!"), (std::vector<TokenId>{'x', 260}));
  // U+180E (Mongolian vowel separator, E1 A0 8E) is not whitespace either (PCRE2's \s says it is).
  EXPECT_EQ(encode(*t, "\u180E!"), (std::vector<TokenId>{263}));
}

TEST(BpeTokenizer, IgnoreMergesTakesAWholeVocabularyEntry) {
  json j = byte_level_tokenizer(kHelloMerges);
  j["model"]["vocab"][letter(' ') + "world"] = 280;
  StatusOr<BpeTokenizer> merged = load(j);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(encode(*merged, " world").size(), 6u);
  j["model"]["ignore_merges"] = true;
  StatusOr<BpeTokenizer> whole = load(j);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(encode(*whole, " world"), (std::vector<TokenId>{280}));
}

TEST(BpeTokenizer, ByteFallbackSpellsUnknownCharactersAsBytes) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = b;
  }
  vocab["\u2581"] = 256;
  vocab["a"] = 257;
  vocab["b"] = 258;
  vocab["ab"] = 259;
  vocab["\u2581ab"] = 260;
  const json j{
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}},
      {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", json::array({json::array({"a", "b"}), json::array({"\u2581", "ab"})})},
        {"byte_fallback", true},
        {"unk_token", nullptr}}},
      {"added_tokens", json::array()},
  };
  StatusOr<BpeTokenizer> t = load(j);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(encode(*t, " ab c"), (std::vector<TokenId>{260, 256, 'c'}));  // "c" is <0x63>
  EXPECT_NE(t->description().find("byte fallback"), std::string::npos);
}

TEST(BpeTokenizer, UnsupportedFeaturesAreNamed) {
  json j = byte_level_tokenizer(kHelloMerges);
  j["model"]["type"] = "WordPiece";
  expect_load_error(j, "model.type: unsupported model type 'WordPiece'");
  j = byte_level_tokenizer(kHelloMerges);
  j["pre_tokenizer"] = json{{"type", "Metaspace"}, {"replacement", "\u2581"}};
  expect_load_error(j, "pre_tokenizer: unsupported pre-tokenizer type 'Metaspace'");
  j = byte_level_tokenizer(kHelloMerges);
  j["normalizer"] = json{{"type", "NFKC"}};
  expect_load_error(j, "normalizer: unsupported normalizer");
  j = byte_level_tokenizer(kHelloMerges);
  j["added_tokens"][0]["lstrip"] = true;
  expect_load_error(j, "added_tokens[0].lstrip: true is not supported");
  j = byte_level_tokenizer(kHelloMerges);
  j["model"]["merges"].push_back("x q");
  expect_load_error(j, "model.merges[5]: a part or the result of the merge is not in the vocabulary");
  j = byte_level_tokenizer(kHelloMerges);
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  expect_load_error(j, "pre_tokenizer.pretokenizers[0].pattern.Regex: regex does not compile");
}

TEST(BpeTokenizer, BadFilesAndBadTextAreErrors) {
  const std::string path = scratch_path("bad.json");
  write_bytes(path, "{\"model\": ");
  StatusOr<BpeTokenizer> bad = BpeTokenizer::load(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
  EXPECT_FALSE(BpeTokenizer::load(scratch_path("missing.json")).ok());
  StatusOr<BpeTokenizer> t = load(byte_level_tokenizer(kHelloMerges));
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::vector<TokenId> out;
  const Status s = t->encode("ok \xC3(", out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "invalid UTF-8 at byte 3");
}

TEST(TextTokenizer, WordHashByNameAndBpeByPath) {
  StatusOr<TextTokenizer> w = TextTokenizer::open("word-hash");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->name(), "word-hash");
  EXPECT_NE(w->description().find("word-hash-v1"), std::string::npos);
  const std::string path = scratch_path("tokenizer.json");
  write_bytes(path, byte_level_tokenizer(kHelloMerges).dump());
  StatusOr<TextTokenizer> b = TextTokenizer::open(path);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->name(), "tokenizer.json");
  EXPECT_EQ(b->description().rfind("hf-bpe tokenizer.json sha256:", 0), 0u) << b->description();
  std::vector<TokenId> ids;
  ASSERT_TRUE(b->encode("hello", ids).ok());
  EXPECT_EQ(ids, (std::vector<TokenId>{259}));
  EXPECT_FALSE(TextTokenizer::open(scratch_path("nope.json")).ok());
}

TEST(TextTokenizer, ShareGptConversionRecordsAndUsesTheTokenizer) {
  const std::string path = scratch_path("tokenizer.json");
  write_bytes(path, byte_level_tokenizer(kHelloMerges).dump());
  StatusOr<TextTokenizer> t = TextTokenizer::open(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const std::string in = scratch_path("chat.json"), out = scratch_path("chat.kvtrace");
  write_bytes(
      in, R"([{"messages": [{"role": "user", "content": "hello<|eot|>"}, {"role": "assistant", "content": "hi"}]}])");
  ConvertOptions c;
  c.tokenizer = &*t;
  const TraceHeader h = convert_header(SourceFormat::kShareGpt, in, c);
  EXPECT_EQ(h.tokenizer, t->description());
  EXPECT_EQ(h.vocab_size, 301);
  EXPECT_NE(h.source.find("--tokenizer tokenizer.json"), std::string::npos) << h.source;
  StatusOr<TraceWriter> w = TraceWriter::create(out, h);
  ASSERT_TRUE(w.ok()) << w.status().message();
  StatusOr<ConvertStats> stats = convert_trace(SourceFormat::kShareGpt, in, c, *w);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  ASSERT_TRUE(w->close().ok());
  StatusOr<TraceReader> r = TraceReader::open(out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->header().tokenizer, t->description());
  TraceRequest q;
  StatusOr<bool> got = r->next(&q);
  ASSERT_TRUE(got.ok() && *got);
  EXPECT_EQ(q.prompt, (std::vector<TokenId>{259, 300}));
  EXPECT_EQ(q.output_tokens, (std::vector<TokenId>{'h', 'i'}));
}

// ---- word-hash: the rules of traces/tokenizer.h, with the piece id computed here
std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64: golden gamma, then its finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::vector<TokenId> pieces(std::initializer_list<std::string_view> list) {
  std::vector<TokenId> ids;
  for (std::string_view p : list) ids.push_back(static_cast<TokenId>(mix(fnv1a64(p)) % 128256));
  return ids;
}

std::vector<TokenId> words(std::string_view text) {
  std::vector<TokenId> out;
  tokenize_words(text, out);
  return out;
}

TEST(WordHashTokenizer, EmptyTextFourByteCutsAndCodePointsWithoutAnAssignment) {
  EXPECT_EQ(words(""), (std::vector<TokenId>{}));
  EXPECT_EQ(words("abcd"), pieces({"abcd"}));
  EXPECT_EQ(words("abcde"), pieces({"abcd", "e"}));
  EXPECT_EQ(words(" abc"), pieces({" abc"}));  // the leading space counts toward the 4 bytes
  EXPECT_EQ(words(" abcd"), pieces({" abc", "d"}));
  EXPECT_EQ(words("  a"), pieces({" ", " a"}));  // only the space right before the word joins it
  EXPECT_EQ(words("     "), pieces({"    ", " "}));
  EXPECT_EQ(words(std::string_view("\0\0!", 3)), pieces({std::string_view("\0\0", 2), "!"}));
  // U+0378 (unassigned, CD B8), U+10FFFF (F4 8F BF BF), U+E0080 (unassigned, F3 A0 82 80):
  // non-ASCII bytes, words cut every 4 bytes whatever the characters' boundaries.
  EXPECT_EQ(words("\u0378"), pieces({"\xCD\xB8"}));
  EXPECT_EQ(words("\U0010FFFF\U000E0080"), pieces({"\xF4\x8F\xBF\xBF", "\xF3\xA0\x82\x80"}));
  EXPECT_EQ(words("\u0378\U0010FFFF"), pieces({"\xCD\xB8\xF4\x8F", "\xBF\xBF"}));
  EXPECT_EQ(words("x\u0378 \u0378"), pieces({"x\xCD\xB8", " \xCD\xB8"}));  // ASCII and non-ASCII: one word
  // Not UTF-8 at all: still bytes, never an error.
  EXPECT_EQ(words("\xC3"), pieces({"\xC3"}));
  EXPECT_EQ(words("a\xFF\xFE."), pieces({"a\xFF\xFE", "."}));
  StatusOr<TextTokenizer> w = TextTokenizer::open("word-hash");
  ASSERT_TRUE(w.ok());
  std::vector<TokenId> ids;
  EXPECT_TRUE(w->encode("\xED\xA0\x80", ids).ok());  // a UTF-16 surrogate's bytes
  EXPECT_EQ(ids, pieces({"\xED\xA0\x80"}));
}

// ---- BPE at the edges of Unicode
TEST(BpeTokenizer, UnassignedAndExtremeCodePointsAreTheirBytesAndInvalidUtf8IsAnError) {
  StatusOr<BpeTokenizer> t = load(byte_level_tokenizer(kHelloMerges));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(encode(*t, "\u0378"), (std::vector<TokenId>{0xCD, 0xB8}));  // unassigned: byte letters
  EXPECT_EQ(encode(*t, "hello\u0378"), (std::vector<TokenId>{259, 0xCD, 0xB8}));
  EXPECT_EQ(encode(*t, "\U0010FFFF"), (std::vector<TokenId>{0xF4, 0x8F, 0xBF, 0xBF}));  // the last code point
  EXPECT_EQ(encode(*t, "\uFFFE"), (std::vector<TokenId>{0xEF, 0xBF, 0xBE}));            // a noncharacter
  EXPECT_EQ(encode(*t, std::string_view("\0", 1)), (std::vector<TokenId>{0}));
  for (const auto& [text, where] :
       std::vector<std::pair<std::string, int>>{{"a\xED\xA0\x80", 1},       // a surrogate (U+D800) spelled in UTF-8
                                                {"ab\xF4\x90\x80\x80", 2},  // past U+10FFFF
                                                {"\xC0\x80", 0},            // an overlong NUL
                                                {"hello\xE2\x82", 5}}) {    // cut short at the end
    std::vector<TokenId> out;
    const Status s = t->encode(text, out);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.message(), "invalid UTF-8 at byte " + std::to_string(where));
  }
}

json unknown_tokenizer(bool unk, bool fuse, bool byte_fallback) {
  json vocab{{"a", 0}, {"b", 1}, {"<unk>", 2}, {"ab", 3}};
  for (int b = 0; byte_fallback && b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 10 + b;
  }
  json model{{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a b"})}};
  if (unk) model["unk_token"] = "<unk>";
  if (fuse) model["fuse_unk"] = true;
  if (byte_fallback) model["byte_fallback"] = true;
  return json{{"normalizer", nullptr}, {"pre_tokenizer", nullptr}, {"model", model}, {"added_tokens", json::array()}};
}

TEST(BpeTokenizer, CharactersOutsideTheVocabularyAreUnkFusedUnkBytesOrAnError) {
  StatusOr<BpeTokenizer> unk = load(unknown_tokenizer(true, false, false));
  ASSERT_TRUE(unk.ok()) << unk.status().message();
  EXPECT_EQ(encode(*unk, "a\u0378\u0379b"), (std::vector<TokenId>{0, 2, 2, 1}));
  EXPECT_EQ(encode(*unk, "\u0378ab\u0379"), (std::vector<TokenId>{2, 3, 2}));  // merges skip the unknowns
  EXPECT_EQ(encode(*unk, ""), (std::vector<TokenId>{}));
  StatusOr<BpeTokenizer> fused = load(unknown_tokenizer(true, true, false));
  ASSERT_TRUE(fused.ok()) << fused.status().message();
  EXPECT_EQ(encode(*fused, "a\u0378\u0379b"), (std::vector<TokenId>{0, 2, 1}));
  EXPECT_EQ(encode(*fused, "\u0378a\u0379"), (std::vector<TokenId>{2, 0, 2}));  // only adjacent ones fuse
  StatusOr<BpeTokenizer> bytes = load(unknown_tokenizer(true, false, true));
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(encode(*bytes, "a\u0378"), (std::vector<TokenId>{0, 10 + 0xCD, 10 + 0xB8}));  // bytes before unk
  StatusOr<BpeTokenizer> none = load(unknown_tokenizer(false, false, false));
  ASSERT_TRUE(none.ok()) << none.status().message();
  std::vector<TokenId> out;
  const Status s = none->encode("ab\u0378", out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "no token for the character '\u0378' and no unk_token");
}

// ---- a converter's boundary counted in BPE tokens, not bytes or characters
std::vector<TraceRequest> convert_sharegpt(const std::string& conversations, const TextTokenizer& t, int max_len,
                                           ConvertStats* stats) {
  static int n = 0;  // a fresh pair of files each call
  const std::string in = scratch_path("chat" + std::to_string(++n) + ".json");
  const std::string out = scratch_path("chat" + std::to_string(n) + ".kvtrace");
  write_bytes(in, conversations);
  ConvertOptions c;
  c.tokenizer = &t;
  c.max_model_len = max_len;
  StatusOr<TraceWriter> w = TraceWriter::create(out, convert_header(SourceFormat::kShareGpt, in, c));
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (!w.ok()) return {};
  StatusOr<ConvertStats> s = convert_trace(SourceFormat::kShareGpt, in, c, *w);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) *stats = *s;
  EXPECT_TRUE(w->close().ok());
  std::vector<TraceRequest> requests;
  StatusOr<TraceReader> r = TraceReader::open(out);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return requests;
  for (TraceRequest q;;) {
    StatusOr<bool> got = r->next(&q);
    EXPECT_TRUE(got.ok());
    if (!got.ok() || !*got) break;
    requests.push_back(q);
  }
  return requests;
}

TEST(TokenizerBoundaries, ShareGptTurnThatExactlyFillsMaxModelLenInBpeTokens) {
  const std::string path = scratch_path("tokenizer.json");
  write_bytes(path, byte_level_tokenizer(kHelloMerges).dump());
  StatusOr<TextTokenizer> t = TextTokenizer::open(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  // Turn 1: "hello" + U+0378 is 3 tokens (7 bytes, 6 characters), the answer U+10FFFF 4 tokens
  // (one character). Turn 2: an empty question after it (the prompt is the conversation so
  // far: 7 tokens) and the answer "hello", 1 token: 8 in all.
  const std::string chat = R"([{"id": "c", "conversations": [
      {"from": "human", "value": "hello\u0378"}, {"from": "gpt", "value": "\udbff\udfff"},
      {"from": "human", "value": ""}, {"from": "gpt", "value": "hello"}]}])";
  ConvertStats stats;
  std::vector<TraceRequest> r = convert_sharegpt(chat, *t, 8, &stats);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].prompt, (std::vector<TokenId>{259, 0xCD, 0xB8}));
  EXPECT_EQ(r[0].output_tokens, (std::vector<TokenId>{0xF4, 0x8F, 0xBF, 0xBF}));
  EXPECT_EQ(r[1].prompt, (std::vector<TokenId>{259, 0xCD, 0xB8, 0xF4, 0x8F, 0xBF, 0xBF}));
  EXPECT_EQ(r[1].output_length, 1);
  EXPECT_EQ(stats.skipped, 0);
  r = convert_sharegpt(chat, *t, 7, &stats);  // one token short: the second turn goes
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(static_cast<std::int64_t>(r[0].prompt.size()) + r[0].output_length, 7);
  EXPECT_EQ(stats.skipped, 1);
  // An empty answer is skipped; its question stays in the conversation and opens the next turn.
  const std::string empty_answer = R"([{"conversations": [
      {"from": "gpt", "value": "hello"}, {"from": "human", "value": "\u0378"}, {"from": "gpt", "value": ""},
      {"from": "human", "value": "hello"}, {"from": "gpt", "value": "hello"}]}])";
  r = convert_sharegpt(empty_answer, *t, 4, &stats);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].prompt, (std::vector<TokenId>{0xCD, 0xB8, 259}));
  EXPECT_EQ(r[0].output_length, 1);
  EXPECT_EQ(stats.skipped, 2);  // the answer with nothing before it, the empty answer
}

}  // namespace
}  // namespace kv::trace
