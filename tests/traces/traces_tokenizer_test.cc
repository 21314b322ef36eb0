// BpeTokenizer on small hand-made tokenizer.json files: merge order, added tokens, the Rust
// library's whitespace class, ignore_merges, byte fallback, and the errors of load/encode.
// (Exactness on real tokenizers: tests/cli/tokenizer_exact_test.sh.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/traces/traces_test_util.h"
#include "traces/bpe_tokenizer.h"
#include "traces/converters.h"
#include "traces/text_tokenizer.h"
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

}  // namespace
}  // namespace kv::trace
