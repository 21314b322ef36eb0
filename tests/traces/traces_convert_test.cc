// Converters: Mooncake block expansion, ShareGPT conversations, Azure and BurstGPT CSV, and
// the errors on bad input (file, line, field).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "tests/traces/traces_test_util.h"
#include "traces/block_tokens.h"
#include "traces/converters.h"
#include "traces/tokenizer.h"
#include "traces/trace_analysis.h"
#include "traces/trace_io.h"

namespace kv::trace {
namespace {

using testing::scratch_path;
using testing::write_bytes;

// Converts `text` (written to a scratch input file); returns the output path or the error.
StatusOr<std::string> convert(SourceFormat f, const std::string& text, const ConvertOptions& c = {},
                              ConvertStats* stats = nullptr) {
  const std::string in = scratch_path("input.txt");
  const std::string out = scratch_path("out.kvtrace");
  write_bytes(in, text);
  std::remove(out.c_str());
  StatusOr<TraceWriter> w = TraceWriter::create(out, convert_header(f, in, c));
  if (!w.ok()) return w.status();
  StatusOr<ConvertStats> s = convert_trace(f, in, c, *w);
  if (!s.ok()) {
    w->abandon();
    return s.status();
  }
  if (Status st = w->close(); !st.ok()) return st;
  if (stats != nullptr) *stats = *s;
  return out;
}

std::vector<TraceRequest> read_all(const std::string& path) {
  std::vector<TraceRequest> out;
  StatusOr<TraceReader> r = TraceReader::open(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  TraceRequest q;
  while (r.ok()) {
    StatusOr<bool> got = r->next(&q);
    EXPECT_TRUE(got.ok()) << got.status().message();
    if (!got.ok() || !*got) break;
    out.push_back(q);
  }
  return out;
}

void expect_error(const StatusOr<std::string>& got, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(got.ok());
  for (const std::string& f : fragments) {
    EXPECT_NE(got.status().message().find(f), std::string::npos) << got.status().message() << "\nwanted: " << f;
  }
}

const char kTinyMooncake[] =
    "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 10, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": 5, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 3]}\n"
    "\n"
    "{\"timestamp\": 7, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";

TEST(ConvertMooncake, PromptsAreExactlyInputLengthAndEqualIdsShareTokens) {
  StatusOr<std::string> out = convert(SourceFormat::kMooncake, kTinyMooncake);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<TraceRequest> r = read_all(*out);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].prompt.size(), 1000u);
  EXPECT_EQ(r[1].prompt.size(), 600u);
  EXPECT_EQ(r[2].prompt.size(), 1024u);
  EXPECT_EQ(r[0].output_length, 10);
  EXPECT_EQ(r[1].arrival_time_us, 5000);
  EXPECT_EQ(r[2].arrival_time_us, 7000);
  std::vector<TokenId> block1;
  expand_block_tokens(1, 512, block1);
  EXPECT_TRUE(std::equal(block1.begin(), block1.end(), r[1].prompt.begin()));
  EXPECT_TRUE(std::equal(r[0].prompt.begin(), r[0].prompt.end(), r[2].prompt.begin()));  // truncated block 2
  EXPECT_NE(r[1].prompt[512], r[0].prompt[512]);
}

TEST(ConvertMooncake, InfiniteCacheHitRateOfTheTinyTraceByHand) {
  StatusOr<std::string> out = convert(SourceFormat::kMooncake, kTinyMooncake);
  ASSERT_TRUE(out.ok());
  AnalysisOptions o;
  o.block_size = 16;
  StatusOr<TraceAnalysis> a = analyze_trace(*out, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  // Request 2 hits block 1's 32 sixteen-token blocks (512 tokens); request 3 hits the 62 full
  // blocks request 1 cached (992 of its first 1000 tokens). 1504 of 2624 prompt tokens.
  EXPECT_EQ(a->prompt_tokens, 2624);
  EXPECT_EQ(a->hit_tokens, 512 + 992);
  EXPECT_DOUBLE_EQ(a->infinite_cache_hit_rate, 1504.0 / 2624.0);
  // At block size 512, request 1's second block is partial and never cached: 512 + 512.
  o.block_size = 512;
  a = analyze_trace(*out, o);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->hit_tokens, 1024);
  EXPECT_EQ(a->distinct_blocks, 2);
  EXPECT_EQ(a->block_accesses, 4);
}

// Independent count from the JSONL: leading hash ids seen before, capped at
// (input_length - 1) / 512, only full blocks cached; 54,063,104 hit tokens of 144,793,823.
TEST(ConvertMooncake, BundledConversationTraceInfiniteCacheAt512) {
  AnalysisOptions o;
  o.block_size = 512;
  o.hash_algo = "xxhash_cbor";
  StatusOr<TraceAnalysis> a = analyze_trace("traces/data/mooncake_conversation.kvtrace", o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->requests, 12031);
  EXPECT_EQ(a->prompt_tokens, 144793823);
  EXPECT_EQ(a->hit_tokens, 54063104);
}

TEST(ConvertMooncake, BadLinesNameFileLineAndField) {
  expect_error(convert(SourceFormat::kMooncake, "{\"timestamp\": 0, \"input_length\": 10\n"),
               {"input.txt: line 1:", "bad JSON"});
  expect_error(convert(SourceFormat::kMooncake,
                       std::string(kTinyMooncake) +
                           "{\"timestamp\": 8, \"input_length\": 513, \"output_length\": 1, \"hash_ids\": [1]}\n"),
               {"line 5:", "field hash_ids: 1 ids for input_length 513"});
  expect_error(convert(SourceFormat::kMooncake,
                       "{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 8, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1]}\n"),
               {"line 2:", "field timestamp: arrivals go backwards"});
  expect_error(convert(SourceFormat::kMooncake, "{\"timestamp\": 0, \"input_length\": 5, \"hash_ids\": [1]}\n"),
               {"line 1:", "missing field output_length"});
  expect_error(convert(SourceFormat::kMooncake,
                       "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": \"x\", \"hash_ids\": [1]}\n"),
               {"line 1:", "field output_length"});
  expect_error(convert(SourceFormat::kMooncake,
                       "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n"),
               {"line 1:", "field input_length"});
}

TEST(Tokenizer, WordsPunctuationAndChunks) {
  std::vector<TokenId> a, b, c;
  tokenize_words("Hello, world", a);  // "Hell" "o" "," " wor" "ld"
  EXPECT_EQ(a.size(), 5u);
  tokenize_words("Hello, world", b);
  EXPECT_EQ(a, b);
  tokenize_words("Hello", c);
  EXPECT_TRUE(std::equal(c.begin(), c.end(), a.begin()));
  std::vector<TokenId> d;
  tokenize_words("a  b\n\n", d);  // "a" " " " b" "\n\n"
  EXPECT_EQ(d.size(), 4u);
}

TEST(ConvertSharegpt, TurnsCarryTheConversation) {
  const std::string json = R"([
    {"id": "x1", "conversations": [
      {"from": "human", "value": "What is a KV cache?"},
      {"from": "gpt", "value": "It stores keys and values."},
      {"from": "human", "value": "Why?"},
      {"from": "gpt", "value": "To avoid recomputing them."}]},
    {"id": "x2", "conversations": [
      {"from": "gpt", "value": "Hi!"},
      {"from": "human", "value": "Hello"},
      {"from": "gpt", "value": "Hello again"},
      {"from": "human", "value": "unanswered"}]}
  ])";
  StatusOr<std::string> out = convert(SourceFormat::kShareGpt, json);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<TraceRequest> r = read_all(*out);
  ASSERT_EQ(r.size(), 3u);
  std::map<std::string, std::vector<const TraceRequest*>> by_session;
  for (const TraceRequest& q : r) by_session[q.session_id].push_back(&q);
  ASSERT_EQ(by_session["c0:x1"].size(), 2u);
  const TraceRequest& t0 = *by_session["c0:x1"][0];
  const TraceRequest& t1 = *by_session["c0:x1"][1];
  std::vector<TokenId> expect;
  tokenize_words("What is a KV cache?", expect);
  EXPECT_EQ(t0.prompt, expect);
  std::vector<TokenId> reply;
  tokenize_words("It stores keys and values.", reply);
  EXPECT_EQ(t0.output_tokens, reply);
  expect.insert(expect.end(), reply.begin(), reply.end());
  tokenize_words("Why?", expect);
  EXPECT_EQ(t1.prompt, expect);
  ASSERT_EQ(by_session["c1:x2"].size(), 1u);
  std::vector<TokenId> hello;
  tokenize_words("Hello", hello);
  EXPECT_EQ(by_session["c1:x2"][0]->prompt, hello);
}

TEST(ConvertSharegpt, BadJsonAndUnknownRoles) {
  expect_error(convert(SourceFormat::kShareGpt, "[{\"id\": \"a\", \"conversations\": [}]"),
               {"input.txt", "conversation 0"});
  expect_error(convert(SourceFormat::kShareGpt, "{\"id\": 1}"), {"input.txt", "top level must be an array"});
  expect_error(convert(SourceFormat::kShareGpt, "[{\"conversations\": [{\"from\": \"robot\", \"value\": \"x\"}]}]"),
               {"input.txt: conversation 0: field conversations[0].from: unknown role 'robot'"});
  expect_error(convert(SourceFormat::kShareGpt, "[{\"conversations\": [{\"from\": \"human\"}]}]"),
               {"conversation 0: field conversations[0]: missing field \"value\""});
}

TEST(ConvertSharegpt, MessagesSystemAndUnansweredTurns) {
  const std::string json = R"([
    {"id": "m1", "system": "Be brief.", "messages": [
      {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello"},
      {"role": "user", "content": "Bye"}]},
    {"messages": [
      {"role": "system", "content": "Inner."},
      {"role": "user", "content": "Q"},
      {"role": "assistant", "content": "A"}], "system": "Outer."}
  ])";
  ConvertStats stats;
  StatusOr<std::string> out = convert(SourceFormat::kShareGpt, json, {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(stats.requests, 2);
  EXPECT_EQ(stats.unanswered, 1);  // "Bye"
  std::map<std::string, const TraceRequest*> by_session;
  const std::vector<TraceRequest> r = read_all(*out);
  for (const TraceRequest& q : r) by_session[q.session_id] = &q;
  ASSERT_EQ(by_session.size(), 2u);
  std::vector<TokenId> expect;
  tokenize_words("Be brief.", expect);
  tokenize_words("Hi", expect);
  EXPECT_EQ(by_session["c0:m1"]->prompt, expect);
  expect.clear();
  tokenize_words("Outer.", expect);  // the top-level system text comes first, wherever it stands
  tokenize_words("Inner.", expect);
  tokenize_words("Q", expect);
  EXPECT_EQ(by_session["c1"]->prompt, expect);
  expect_error(convert(SourceFormat::kShareGpt, "[{\"system\": 3, \"messages\": []}]"),
               {"conversation 0: field system:"});
  expect_error(convert(SourceFormat::kShareGpt, "[{\"id\": \"x\"}]"),
               {"conversation 0: missing field \"conversations\" (or \"messages\")"});
}

TEST(ConvertTokens, RequestsAsGiven) {
  const std::string jsonl =
      "{\"prompt_token_ids\": [1, 2, 3], \"output_len\": 5, \"timestamp\": 0.5}\n"
      "\n"
      "{\"timestamp\": 1.25, \"prompt_token_ids\": [1, 2, 4, 128255], \"output_len\": 1, \"id\": \"r\", "
      "\"session_id\": \"s\", "
      "\"cache_salt\": \"tenant\", \"lora_name\": \"adapter1\"}\n";
  ConvertOptions c;
  c.vocab_size = 128256;
  StatusOr<std::string> out = convert(SourceFormat::kTokens, jsonl, c);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<TraceRequest> r = read_all(*out);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].id, "tk1");
  EXPECT_EQ(r[0].prompt, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_EQ(r[0].output_length, 5);
  EXPECT_EQ(r[0].arrival_time_us, 500000);
  EXPECT_EQ(r[1].id, "r");
  EXPECT_EQ(r[1].session_id, "s");
  EXPECT_EQ(r[1].cache_salt, "tenant");
  EXPECT_EQ(r[1].lora_name, "adapter1");
  EXPECT_TRUE(r[0].cache_salt.empty() && r[0].lora_name.empty());
  EXPECT_EQ(r[1].prompt, (std::vector<TokenId>{1, 2, 4, 128255}));
  EXPECT_EQ(r[1].arrival_time_us, 1250000);
  StatusOr<TraceReader> reader = TraceReader::open(*out);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->header().vocab_size, 128256);
  EXPECT_NE(reader->header().tokenizer.find("pre-tokenized"), std::string::npos);
  // Without timestamps every request arrives at 0.
  out = convert(SourceFormat::kTokens,
                "{\"prompt_token_ids\": [7], \"output_len\": 1}\n{\"prompt_token_ids\": [7, 8], \"output_len\": 1}\n");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(read_all(*out)[1].arrival_time_us, 0);
}

TEST(ConvertTokens, BadLinesNameLineAndField) {
  ConvertOptions c;
  c.vocab_size = 100;
  const std::string ok = "{\"prompt_token_ids\": [1], \"output_len\": 1, \"timestamp\": 2}\n";
  expect_error(
      convert(SourceFormat::kTokens, ok + "{\"prompt_token_ids\": [1, 100], \"output_len\": 1, \"timestamp\": 3}\n", c),
      {"input.txt: line 2: field prompt_token_ids: element 1: id 100 is not below --vocab-size 100"});
  expect_error(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [-1], \"output_len\": 1}\n"),
               {"line 1: field prompt_token_ids: element 0: id -1 is negative"});
  expect_error(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [], \"output_len\": 1}\n"),
               {"line 1: field prompt_token_ids: empty"});
  expect_error(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [1]}\n"), {"line 1: missing field output_len"});
  expect_error(convert(SourceFormat::kTokens, ok + "{\"prompt_token_ids\": [1], \"output_len\": 1}\n"),
               {"line 2: field timestamp: missing, but the first request had one"});
  expect_error(
      convert(SourceFormat::kTokens, ok + "{\"prompt_token_ids\": [1], \"output_len\": 1, \"timestamp\": 1}\n"),
      {"line 2: field timestamp: arrivals go backwards"});
  expect_error(convert(SourceFormat::kTokens, ok + "[1, 2]\n"), {"line 2: bad JSON"});
  expect_error(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [1], \"output_len\": -2}\n"),
               {"line 1: field output_len: negative"});
}

TEST(ConvertAzure, TimestampsAndUniquePrompts) {
  const std::string csv =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46.6805900,374,44\n"
      "2023-11-16 18:15:50.9951690,396,109\n"
      "2023-11-17 00:00:00,10,1\n";
  StatusOr<std::string> out = convert(SourceFormat::kAzure, csv);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<TraceRequest> r = read_all(*out);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].arrival_time_us, 0);
  EXPECT_EQ(r[1].arrival_time_us, 4314579);
  EXPECT_EQ(r[2].arrival_time_us, (5 * 3600 + 44 * 60 + 13) * 1000000LL + 319410);
  EXPECT_EQ(r[0].prompt.size(), 374u);
  EXPECT_EQ(r[1].output_length, 109);
  EXPECT_NE(std::vector<TokenId>(r[0].prompt.begin(), r[0].prompt.begin() + 10),
            std::vector<TokenId>(r[1].prompt.begin(), r[1].prompt.begin() + 10));
}

TEST(ConvertAzure, BadRowsNameLineAndColumn) {
  expect_error(convert(SourceFormat::kAzure,
                       "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6,374,44\n"
                       "2023-11-16 18:15:47.0,abc,5\n"),
               {"input.txt: line 3: column ContextTokens: 'abc' is not an integer"});
  expect_error(convert(SourceFormat::kAzure,
                       "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6,374,44\n"
                       "yesterday,3,5\n"),
               {"input.txt: line 3: column TIMESTAMP: bad timestamp 'yesterday'"});
  expect_error(convert(SourceFormat::kAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6,374\n"),
               {"input.txt", "line 2"});
  expect_error(convert(SourceFormat::kAzure, "TIME,Context\n"), {"input.txt", "TIMESTAMP"});
}

TEST(ConvertBurstgpt, SkipsFailedRequestsAndKeepsSessions) {
  const std::string csv =
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID\n"
      "5,ChatGPT,472,18,490,Conversation log,s1\n"
      "45,ChatGPT,1087,0,1087,Conversation log,s2\n"
      "118.5,GPT-4,417,276,693,Conversation log,s1\n";
  StatusOr<std::string> out = convert(SourceFormat::kBurstGpt, csv);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<TraceRequest> r = read_all(*out);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].arrival_time_us, 113500000);
  EXPECT_EQ(r[1].session_id, "s1");
  EXPECT_EQ(r[1].prompt.size(), 417u);
  ConvertOptions only4;
  only4.model = "GPT-4";
  out = convert(SourceFormat::kBurstGpt, csv, only4);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(read_all(*out).size(), 1u);
  expect_error(convert(SourceFormat::kBurstGpt,
                       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                       "5,ChatGPT,472,18,490,Conversation log\n6,ChatGPT,-3,1,1,x\n"),
               {"input.txt: line 3: column Request tokens: negative"});
  expect_error(convert(SourceFormat::kBurstGpt, "Timestamp,Model\n"), {"missing column 'Request tokens'"});
}

// Found by fuzzing: a Session ID that is not UTF-8 was written, and protobuf then refused to read
// the record back ("corrupt record"). The writer refuses it, naming the line and the field.
TEST(ConvertBurstgpt, SessionIdThatIsNotUtf8IsAnError) {
  expect_error(convert(SourceFormat::kBurstGpt,
                       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID\n"
                       "5,ChatGPT,4,1,5,x,ok\n6,ChatGPT,4,1,5,x,\xff\xfe\n"),
               {"input.txt: line 3: ", "request 1: field session_id: not valid UTF-8"});
}

// Found by fuzzing: timestamp 18446744073709552 ms wrapped in the conversion to microseconds
// (* 1000 = 2^64 + 384: the request arrived at 384 us) and the conversion succeeded.
TEST(ConvertMooncake, HugeTimestampsAreErrorsNotWrapped) {
  expect_error(convert(SourceFormat::kMooncake,
                       "{\"timestamp\": 18446744073709552, \"input_length\": 10, \"output_length\": 1, "
                       "\"hash_ids\": [1]}\n"),
               {"input.txt: line 1: field timestamp: 18446744073709552 ms is beyond 1000000000000"});
  StatusOr<std::string> last_ok =
      convert(SourceFormat::kMooncake,
              "{\"timestamp\": 1000000000000, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n");
  ASSERT_TRUE(last_ok.ok()) << last_ok.status().message();
  EXPECT_EQ(read_all(*last_ok)[0].arrival_time_us, kMaxArrivalTimeUs);
}

// Found by fuzzing: text after a record's JSON object (or after ShareGPT's top-level array) was
// silently ignored.
TEST(ConvertJson, TrailingTextIsAnError) {
  expect_error(convert(SourceFormat::kMooncake,
                       "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]} x\n"),
               {"input.txt: line 1: bad JSON"});
  expect_error(convert(SourceFormat::kMooncake,
                       "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}"
                       "{\"timestamp\": 1}\n"),
               {"line 1: bad JSON: text after"});
  EXPECT_TRUE(convert(SourceFormat::kMooncake,
                      "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}  \r\n")
                  .ok());
  const std::string conv =
      "[{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}, "
      "{\"from\": \"gpt\", \"value\": \"yo\"}]}]";
  expect_error(convert(SourceFormat::kShareGpt, conv + " [1]"),
               {"input.txt: bad JSON: text after the top-level array"});
  expect_error(convert(SourceFormat::kShareGpt, conv + "]"), {"input.txt: bad JSON"});
  EXPECT_TRUE(convert(SourceFormat::kShareGpt, conv + "\n\n").ok());
}

// Found by fuzzing: an empty numeric cell was read as 0 (a row of zero tokens, a request at the
// first row's time).
TEST(ConvertCsv, EmptyNumericCellsAreErrors) {
  expect_error(convert(SourceFormat::kAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6,,44\n"),
               {"input.txt: line 2: column ContextTokens: '' is not an integer"});
  expect_error(convert(SourceFormat::kAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6,5,\n"),
               {"input.txt: line 2: column GeneratedTokens: '' is not an integer"});
  const std::string head = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
  expect_error(convert(SourceFormat::kBurstGpt, head + ",ChatGPT,4,1,5,x\n"),
               {"input.txt: line 2: column Timestamp: '' is not a plain decimal number"});
  expect_error(convert(SourceFormat::kBurstGpt, head + "1,ChatGPT,,1,5,x\n"),
               {"input.txt: line 2: column Request tokens: '' is not an integer"});
  expect_error(convert(SourceFormat::kBurstGpt, head + "1,ChatGPT,4,,5,x\n"),
               {"input.txt: line 2: column Response tokens: '' is not an integer"});
  expect_error(convert(SourceFormat::kBurstGpt, head + "1e300,ChatGPT,4,1,5,x\n"),
               {"input.txt: line 2: column Timestamp: '1e300' is not a plain decimal number"});
  expect_error(convert(SourceFormat::kBurstGpt, head + "nan,ChatGPT,4,1,5,x\n"), {"column Timestamp: 'nan'"});
  expect_error(convert(SourceFormat::kBurstGpt, head + "2000000000,ChatGPT,4,1,5,x\n"),
               {"input.txt: line 2: column Timestamp: 2000000000 is outside 0..1000000000 seconds"});
}

// The strict CSV reader (model/util/csv_table.h) under both CSV converters: a reordered header
// is read by name, but a line break inside quotes, a carriage return inside a field, a
// timestamp with two spaces and an exponent are refused, naming the line and the field.
TEST(ConvertCsv, MalformedRowsAreRefusedByTheStrictReader) {
  const std::string azure_head = "GeneratedTokens,TIMESTAMP,ContextTokens\n";
  StatusOr<std::string> reordered = convert(SourceFormat::kAzure, azure_head + "44,2023-11-16 18:15:46.6,374\n");
  ASSERT_TRUE(reordered.ok()) << reordered.status().message();
  EXPECT_EQ(read_all(*reordered)[0].prompt.size(), 374u);
  expect_error(convert(SourceFormat::kAzure, azure_head + "\"4\n4\",2023-11-16 18:15:46.6,374\n"),
               {"input.txt: line 2: field GeneratedTokens: a line break inside a quoted field"});
  expect_error(convert(SourceFormat::kAzure, azure_head + "44,2023-11-16 18:15:46.6,3\r74\n"),
               {"input.txt: line 2: field ContextTokens: a carriage return inside a field"});
  expect_error(convert(SourceFormat::kAzure, azure_head + "44,2023-11-16  18:15:46.6,374\n"),
               {"input.txt: line 2: column TIMESTAMP: bad timestamp '2023-11-16  18:15:46.6'"});
  expect_error(convert(SourceFormat::kAzure, azure_head + "44,1e3,374\n"),
               {"input.txt: line 2: column TIMESTAMP: bad timestamp '1e3'"});
  expect_error(convert(SourceFormat::kAzure, azure_head + "44,2023-11-16 18:15:46.6,374,9\n"),
               {"input.txt: line 2: 4 fields where the header has 3: an extra field after ContextTokens"});

  const std::string burst_head = "Model,Response tokens,Timestamp,Request tokens,Total tokens,Log Type\n";
  StatusOr<std::string> ok = convert(SourceFormat::kBurstGpt, burst_head + "\"Chat,GPT\",18,5.5,472,490,x\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(read_all(*ok)[0].output_length, 18);
  expect_error(convert(SourceFormat::kBurstGpt, burst_head + "\"Chat\nGPT\",18,5,472,490,x\n"),
               {"input.txt: line 2: field Model: a line break inside a quoted field"});
  expect_error(convert(SourceFormat::kBurstGpt, burst_head + "ChatGPT,18,5,472,490,x\ry\n"),
               {"input.txt: line 2: field Log Type: a carriage return inside a field"});
  expect_error(convert(SourceFormat::kBurstGpt, burst_head + "ChatGPT,18,5  ,472,490,x\n"),
               {"input.txt: line 2: column Timestamp: '5  ' is not a plain decimal number"});
  expect_error(convert(SourceFormat::kBurstGpt, burst_head + "ChatGPT,18,1e3,472,490,x\n"),
               {"input.txt: line 2: column Timestamp: '1e3' is not a plain decimal number"});
  expect_error(convert(SourceFormat::kBurstGpt, burst_head + "ChatGPT,18,5,472,490\n"),
               {"input.txt: line 2: 5 fields where the header has 6: field Log Type is missing"});
}

// An input with nothing to replay is an error unless asked for: an empty Mooncake file, a CSV
// header alone, rows that are all skipped.
TEST(ConvertEmpty, NoRequestsIsAnErrorUnlessAllowed) {
  const std::pair<SourceFormat, std::string> inputs[] = {
      {SourceFormat::kMooncake, ""},
      {SourceFormat::kAzure, "TIMESTAMP,ContextTokens,GeneratedTokens\n"},
      {SourceFormat::kBurstGpt, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"},
      {SourceFormat::kTokens, ""}};
  for (const auto& [format, text] : inputs) {
    expect_error(convert(format, text), {"input.txt: the input has no requests; --allow-empty writes an empty trace"});
    ConvertOptions allow;
    allow.allow_empty = true;
    StatusOr<std::string> out = convert(format, text, allow);
    ASSERT_TRUE(out.ok()) << to_string(format) << ": " << out.status().message();
    EXPECT_TRUE(read_all(*out).empty());
  }
  expect_error(convert(SourceFormat::kBurstGpt,
                       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,4,0,4,x\n"),
               {"input.txt: the input has no requests (1 records skipped, none kept)"});
}

TEST(ConvertOptionsCheck, OutOfRangeOptionsNameTheOption) {
  ConvertOptions o;
  EXPECT_TRUE(validate(o).ok());
  const std::pair<void (*)(ConvertOptions&), std::string> cases[] = {
      {[](ConvertOptions& c) { c.rate = std::numeric_limits<double>::infinity(); }, "--rate"},
      {[](ConvertOptions& c) { c.rate = 1e30; }, "--rate"},
      {[](ConvertOptions& c) { c.rate = std::nan(""); }, "--rate"},
      {[](ConvertOptions& c) { c.arrival_cv = -1; }, "--arrival-cv"},
      {[](ConvertOptions& c) { c.concurrent_sessions = 0; }, "--sessions"},
      {[](ConvertOptions& c) { c.max_requests = -1; }, "--max-requests"},
      {[](ConvertOptions& c) { c.max_model_len = -1; }, "--max-model-len"},
  };
  for (const auto& [set, option] : cases) {
    ConvertOptions c;
    set(c);
    const Status s = validate(c);
    ASSERT_FALSE(s.ok()) << option;
    EXPECT_EQ(s.message().rfind(option + ":", 0), 0u) << s.message();
  }
}

// The same findings in the pre-tokenized JSONL converter: a timestamp of 1e300 s overflowed the
// conversion to microseconds, and text after a line's object was ignored.
TEST(ConvertTokens, HugeTimestampsAndTrailingTextAreErrors) {
  expect_error(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [1], \"output_len\": 1, \"timestamp\": 1e300}\n"),
               {"input.txt: line 1: field timestamp: must be a number of seconds from 0 to 1000000000"});
  expect_error(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [1], \"output_len\": 1} {\"x\": 1}\n"),
               {"input.txt: line 1: bad JSON"});
  EXPECT_TRUE(
      convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [1], \"output_len\": 1, \"timestamp\": 1e9}\n").ok());
}

}  // namespace
// Each converter at the exact limits of its format.
TEST(ConvertBoundaries, ATurnThatExactlyFillsMaxModelLenIsKeptOneTokenMoreIsNot) {
  // Word-hash tokens: one per word. Turn 1: 4 + 4 = 8 tokens; turn 2: prompt 10 (the
  // conversation so far) + output 2 = 12.
  const std::string json = R"([{"id": "c", "conversations": [
      {"from": "human", "value": "a b c d"}, {"from": "gpt", "value": "e f g h"},
      {"from": "human", "value": "i j"}, {"from": "gpt", "value": "k l"}]}])";
  for (const auto& [max_len, turns] : std::vector<std::pair<int, std::size_t>>{{12, 2}, {11, 1}, {8, 1}}) {
    ConvertOptions c;
    c.max_model_len = max_len;
    StatusOr<std::string> out = convert(SourceFormat::kShareGpt, json, c);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const std::vector<TraceRequest> r = read_all(*out);
    ASSERT_EQ(r.size(), turns) << "max_model_len " << max_len;
    EXPECT_EQ(static_cast<std::int64_t>(r.back().prompt.size()) + r.back().output_length, turns == 2 ? 12 : 8);
  }
  ConvertOptions c;
  c.max_model_len = 7;  // not even the first turn fits: nothing to write
  expect_error(convert(SourceFormat::kShareGpt, json, c), {"no requests"});
}

TEST(ConvertBoundaries, MooncakeInputLengthAgainstItsHashIds) {
  const auto line = [](int input, int output, const std::string& ids) {
    return "{\"timestamp\": 0, \"input_length\": " + std::to_string(input) +
           ", \"output_length\": " + std::to_string(output) + ", \"hash_ids\": [" + ids + "]}\n";
  };
  for (const int input : {1024, 513, 1}) {  // 2 ids cover 513..1024 tokens, 1 id 1..512
    StatusOr<std::string> out = convert(SourceFormat::kMooncake, line(input, 1, input > 512 ? "1, 2" : "1"));
    ASSERT_TRUE(out.ok()) << input << ": " << out.status().message();
    EXPECT_EQ(read_all(*out)[0].prompt.size(), static_cast<std::size_t>(input));
  }
  expect_error(convert(SourceFormat::kMooncake, line(512, 1, "1, 2")), {"2 ids for input_length 512"});
  expect_error(convert(SourceFormat::kMooncake, line(1025, 1, "1, 2")), {"2 ids for input_length 1025"});
  expect_error(convert(SourceFormat::kMooncake, line(10, 0, "1")), {"line 1", "field output_length", ">= 1"});
}

TEST(ConvertBoundaries, TokenIdsAndOutputLengthsAtTheirLimits) {
  ConvertOptions c;
  c.vocab_size = 10;
  EXPECT_TRUE(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [0, 9], \"output_len\": 1}\n", c).ok());
  expect_error(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [0, 10], \"output_len\": 1}\n", c),
               {"element 1: id 10 is not below --vocab-size 10"});
  expect_error(convert(SourceFormat::kTokens, "{\"prompt_token_ids\": [1], \"output_len\": 0}\n"),
               {"line 1: field output_len: must be >= 1"});
}

TEST(ConvertBoundaries, AzureRowsWithNoContextOrNoOutputAreSkippedFailures) {
  ConvertStats stats;
  StatusOr<std::string> out = convert(SourceFormat::kAzure,
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46.0,0,10\n"
                                      "2023-11-16 18:15:47.0,5,0\n"
                                      "2023-11-16 18:15:48.0,1,1\n",
                                      {}, &stats);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(read_all(*out).size(), 1u);
  EXPECT_EQ(stats.skipped, 2);
}

}  // namespace kv::trace
