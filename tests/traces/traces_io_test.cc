// TraceWriter / TraceReader: round trips, streaming, and every kind of bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "tests/traces/traces_test_util.h"
#include "traces/block_tokens.h"
#include "traces/generators.h"
#include "traces/trace_io.h"

namespace kv::trace {
namespace {

using testing::read_bytes;
using testing::scratch_path;
using testing::write_bytes;

TraceRequest make_request(const std::string& id, std::int64_t t, std::vector<TokenId> prompt) {
  TraceRequest r;
  r.id = id;
  r.arrival_time_us = t;
  r.prompt = std::move(prompt);
  r.output_length = 3;
  return r;
}

// Writes a small trace with every field used; returns its path.
std::string write_small(const std::string& name) {
  const std::string path = scratch_path(name);
  TraceHeader h;
  h.source = "test";
  h.hash_seed = "42";
  h.hash_algo = "xxhash_cbor";
  h.block_size = 16;
  h.tokenizer = "none";
  h.vocab_size = kBlockTokenVocab;  // block references expand to ids below it
  h.notes = "n";
  StatusOr<TraceWriter> w = TraceWriter::create(path, h);
  EXPECT_TRUE(w.ok()) << w.status().message();
  TraceRequest a = make_request("a", 0, {1, 2, 3});
  a.output_tokens = {7, 8, 9};
  a.cache_salt = "salt";
  a.lora_name = "lora";
  a.priority = -2;
  a.session_id = "s1";
  a.retention_priority = 0;  // the lowest, and not the default 35 that an absent field reads as
  a.retention_duration = 5;
  EXPECT_TRUE(w->write(a).ok());
  TraceRequest b = make_request("b", 10, {});
  b.prompt_segments = {PromptSegment::literal({5, 6}), PromptSegment::block(77, 20)};
  EXPECT_TRUE(w->write(b).ok());
  EXPECT_TRUE(w->write(make_request("c", 10, {4})).ok());
  EXPECT_TRUE(w->close().ok());
  return path;
}

TEST(TraceIo, RoundTripKeepsEveryField) {
  const std::string path = write_small("t.kvtrace");
  StatusOr<TraceReader> r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->header().source, "test");
  EXPECT_EQ(r->header().hash_seed, "42");
  EXPECT_EQ(r->header().hash_algo, "xxhash_cbor");
  EXPECT_EQ(r->header().block_size, 16);
  EXPECT_EQ(r->header().vocab_size, kBlockTokenVocab);
  EXPECT_EQ(r->header().notes, "n");
  TraceRequest q;
  ASSERT_TRUE(*r->next(&q));
  EXPECT_EQ(q.id, "a");
  EXPECT_EQ(q.prompt, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_EQ(q.output_tokens, (std::vector<TokenId>{7, 8, 9}));
  EXPECT_EQ(q.output_length, 3);
  EXPECT_EQ(q.cache_salt, "salt");
  EXPECT_EQ(q.lora_name, "lora");
  EXPECT_EQ(q.priority, -2);
  EXPECT_EQ(q.session_id, "s1");
  EXPECT_EQ(q.retention_priority, 0);
  EXPECT_EQ(q.retention_duration, 5);
  q = TraceRequest{};
  ASSERT_TRUE(*r->next(&q));
  EXPECT_EQ(q.retention_priority, 35);
  EXPECT_EQ(q.retention_duration, 0);
  std::vector<TokenId> expected = {5, 6};
  expand_block_tokens(77, 20, expected);
  EXPECT_EQ(q.prompt, expected);  // the compact form is expanded on read
  EXPECT_TRUE(q.prompt_segments.empty());
  EXPECT_EQ(q.arrival_time_us, 10);
  ASSERT_TRUE(*r->next(&q));
  EXPECT_EQ(q.id, "c");
  StatusOr<bool> end = r->next(&q);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
  EXPECT_EQ(r->num_read(), 3);
}

TEST(TraceIo, KeepPromptSegmentsReturnsTheCompactForm) {
  const std::string path = write_small("keep.kvtrace");
  StatusOr<TraceReader> r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  r->keep_prompt_segments();
  TraceRequest q;
  ASSERT_TRUE(*r->next(&q));
  EXPECT_EQ(q.prompt, (std::vector<TokenId>{1, 2, 3}));  // stored as tokens: read as tokens
  EXPECT_TRUE(q.prompt_segments.empty());
  ASSERT_TRUE(*r->next(&q));
  EXPECT_TRUE(q.prompt.empty());
  ASSERT_EQ(q.prompt_segments.size(), 2u);
  EXPECT_EQ(q.prompt_segments[0].tokens, (std::vector<TokenId>{5, 6}));
  EXPECT_EQ(q.prompt_segments[1].block_id, 77u);
  EXPECT_EQ(q.prompt_segments[1].num_tokens, 20);
  EXPECT_EQ(q.prompt_size(), 22);
  std::vector<TokenId> expanded, expected = {5, 6};
  expand_segments(q.prompt_segments, expanded);
  expand_block_tokens(77, 20, expected);
  EXPECT_EQ(expanded, expected);
  ASSERT_TRUE(*r->next(&q));
  EXPECT_EQ(q.prompt, (std::vector<TokenId>{4}));
  EXPECT_TRUE(q.prompt_segments.empty());
}

TEST(TraceIo, StreamsALargeTrace) {
  const std::string path = scratch_path("big.kvtrace");
  PrefixGenOptions o;
  o.num_prompts = 5000;
  o.repeat = 4;
  o.prefix_len = 2000;
  o.suffix_len = 1000;
  o.rate = 50;
  StatusOr<TraceWriter> w = TraceWriter::create(path, prefix_gen_header(o));
  ASSERT_TRUE(w.ok());
  StatusOr<std::int64_t> n = generate_prefix(o, *w);
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE(w->close().ok());
  EXPECT_EQ(*n, 20000);
  // 60M tokens expanded, read one request at a time.
  StatusOr<TraceReader> r = TraceReader::open(path);
  ASSERT_TRUE(r.ok());
  TraceRequest q;
  std::int64_t count = 0, tokens = 0;
  for (;;) {
    StatusOr<bool> got = r->next(&q);
    ASSERT_TRUE(got.ok()) << got.status().message();
    if (!*got) break;
    ++count;
    tokens += static_cast<std::int64_t>(q.prompt.size());
  }
  EXPECT_EQ(count, 20000);
  EXPECT_EQ(tokens, 20000 * 3000);
}

TEST(TraceIo, WriterRefusesToOverwriteUnlessForced) {
  const std::string path = write_small("t.kvtrace");
  const std::string before = read_bytes(path);
  StatusOr<TraceWriter> w = TraceWriter::create(path, TraceHeader());
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("already exists"), std::string::npos);
  EXPECT_EQ(read_bytes(path), before);
  StatusOr<TraceWriter> forced = TraceWriter::create(path, TraceHeader(), /*overwrite=*/true);
  ASSERT_TRUE(forced.ok());
  ASSERT_TRUE(forced->close().ok());
}

TEST(TraceIo, WriterRejectsBadRequests) {
  StatusOr<TraceWriter> w = TraceWriter::create(scratch_path("w.kvtrace"), TraceHeader());
  ASSERT_TRUE(w.ok());
  Status empty = w->write(make_request("e", 0, {}));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.message().find("request 0: field prompt: empty prompt"), std::string::npos) << empty.message();
  ASSERT_TRUE(w->write(make_request("a", 5, {1})).ok());
  Status back = w->write(make_request("b", 4, {1}));
  EXPECT_NE(back.message().find("arrivals go backwards"), std::string::npos) << back.message();
  Status dup = w->write(make_request("a", 6, {1}));
  EXPECT_NE(dup.message().find("duplicate request id 'a'"), std::string::npos) << dup.message();
  Status neg = w->write(make_request("n", -1, {1}));
  EXPECT_NE(neg.message().find("negative arrival time"), std::string::npos) << neg.message();
  TraceRequest high = make_request("p", 7, {1});
  high.retention_priority = 101;
  Status prio = w->write(high);
  EXPECT_NE(prio.message().find("field retention_priority: 101 is not in 0..100"), std::string::npos) << prio.message();
  TraceRequest back_in_time = make_request("q", 7, {1});
  back_in_time.retention_duration = -1;
  Status dur = w->write(back_in_time);
  EXPECT_NE(dur.message().find("field retention_duration: negative"), std::string::npos) << dur.message();
  w->abandon();
}

// Protobuf parses only UTF-8 string fields back, so the writer refuses the others by name.
TEST(TraceIo, StringFieldsMustBeUtf8) {
  StatusOr<TraceWriter> w = TraceWriter::create(scratch_path("utf8.kvtrace"), TraceHeader());
  ASSERT_TRUE(w.ok());
  Status id = w->write(make_request("a\xc3", 0, {1}));
  EXPECT_NE(id.message().find("request 0: field id: not valid UTF-8"), std::string::npos) << id.message();
  TraceRequest salted = make_request("b", 0, {1});
  salted.cache_salt = "\xff";
  Status salt = w->write(salted);
  EXPECT_NE(salt.message().find("field cache_salt: not valid UTF-8"), std::string::npos) << salt.message();
  TraceRequest fine = make_request("c", 0, {1});
  fine.session_id = "s\xc3\xa9";  // "se" with an acute accent: valid
  EXPECT_TRUE(w->write(fine).ok());
  w->abandon();
  TraceHeader h;
  h.notes = "\xe2\x82";  // a truncated three-byte sequence
  StatusOr<TraceWriter> bad = TraceWriter::create(scratch_path("utf8h.kvtrace"), h);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("header: field notes: not valid UTF-8"), std::string::npos)
      << bad.status().message();
}

void expect_open_error(const std::string& path, const std::string& fragment) {
  StatusOr<TraceReader> r = TraceReader::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
}

// The error of the first failing next(), or "" if the whole file reads cleanly.
std::string read_all_error(const std::string& path) {
  StatusOr<TraceReader> r = TraceReader::open(path);
  if (!r.ok()) return r.status().message();
  TraceRequest q;
  for (;;) {
    StatusOr<bool> got = r->next(&q);
    if (!got.ok()) return got.status().message();
    if (!*got) return "";
  }
}

TEST(TraceIo, MissingFileWrongMagicWrongVersion) {
  expect_open_error(scratch_path("nope.kvtrace"), "cannot open");
  const std::string good = read_bytes(write_small("t.kvtrace"));
  std::string bad = good;
  bad[0] = 'X';
  write_bytes(scratch_path("magic.kvtrace"), bad);
  expect_open_error(scratch_path("magic.kvtrace"), "wrong magic");
  bad = good;
  bad[8] = 2;
  write_bytes(scratch_path("version.kvtrace"), bad);
  expect_open_error(scratch_path("version.kvtrace"), "unsupported trace format version 2");
  write_bytes(scratch_path("short.kvtrace"), good.substr(0, 5));
  expect_open_error(scratch_path("short.kvtrace"), "shorter than the 12-byte preamble");
  write_bytes(scratch_path("nohead.kvtrace"), good.substr(0, 12));
  expect_open_error(scratch_path("nohead.kvtrace"), "header: missing");
}

TEST(TraceIo, TruncationAtEveryOffsetIsAnErrorOrACleanPrefix) {
  const std::string good = read_bytes(write_small("t.kvtrace"));
  // Frame boundaries are the only offsets where a shorter file is still well formed.
  int clean = 0, errors = 0;
  for (std::size_t cut = 12; cut < good.size(); ++cut) {
    const std::string path = scratch_path("cut" + std::to_string(cut) + ".kvtrace");
    write_bytes(path, good.substr(0, cut));
    const std::string err = read_all_error(path);
    if (err.empty()) {
      ++clean;
    } else {
      ++errors;
      EXPECT_NE(err.find(path), std::string::npos) << err;
      EXPECT_TRUE(err.find("truncated") != std::string::npos || err.find("header") != std::string::npos) << err;
    }
  }
  EXPECT_EQ(clean, 3);  // after the header, after request a, after request b
  EXPECT_GT(errors, 100);
  const std::string path = scratch_path("mid.kvtrace");
  write_bytes(path, good.substr(0, good.size() - 2));
  EXPECT_NE(read_all_error(path).find("request 2: truncated frame"), std::string::npos) << read_all_error(path);
}

TEST(TraceIo, EveryCorruptedByteIsDetected) {
  const std::string good = read_bytes(write_small("t.kvtrace"));
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    const std::string path = scratch_path("flip.kvtrace");
    write_bytes(path, bad);
    EXPECT_NE(read_all_error(path), "") << "byte " << i;
  }
}

// Hand-made frames, to give the reader what no TraceWriter would write.
std::string frame(const std::string& message) {
  std::string f;
  std::uint32_t n = static_cast<std::uint32_t>(message.size());
  while (n >= 0x80) {
    f.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  f.push_back(static_cast<char>(n));
  f += message;
  const std::uint32_t crc = crc32c(message.data(), message.size());
  for (int i = 0; i < 4; ++i) f.push_back(static_cast<char>(crc >> (8 * i)));
  return f;
}

// A Request message: id (field 1), arrival_time_us (field 2, small), prompt (field 3, packed small ids).
std::string request_message(const std::string& id, int arrival, const std::vector<int>& prompt) {
  std::string m = "\x0a" + std::string(1, static_cast<char>(id.size())) + id;
  m += "\x10" + std::string(1, static_cast<char>(arrival));
  if (!prompt.empty()) {
    m += "\x1a" + std::string(1, static_cast<char>(prompt.size()));
    for (int t : prompt) m.push_back(static_cast<char>(t));
  }
  return m;
}

std::string header_bytes() {
  StatusOr<TraceWriter> w = TraceWriter::create(scratch_path("h.kvtrace"), TraceHeader());
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE(w->close().ok());
  return read_bytes(scratch_path("h.kvtrace"));
}

TEST(TraceIo, ReaderRejectsBadRecords) {
  const std::string head = header_bytes();
  struct Case {
    std::string body;
    std::string error;
  } cases[] = {
      {frame(request_message("a", 0, {})), "request 0: field prompt: empty prompt"},
      {frame(request_message("a", 5, {1})) + frame(request_message("b", 4, {1})),
       "request 1: field arrival_time_us: arrivals go backwards (4 after 5"},
      {frame(request_message("a", 0, {1})) + frame(request_message("a", 1, {1})),
       "request 1: field id: duplicate request id 'a'"},
      {frame("\xff\xff\xff"), "request 0: corrupt record (unparsable message)"},
      {frame(request_message("a", 0, {1})).substr(0, 3), "request 0: truncated frame"},
      {"\xff\xff\xff\xff\x0f", "request 0: corrupt frame: length"},
  };
  for (const Case& c : cases) {
    const std::string path = scratch_path("bad.kvtrace");
    write_bytes(path, head + c.body);
    const std::string err = read_all_error(path);
    EXPECT_NE(err.find(c.error), std::string::npos) << "got: " << err << "\nwanted: " << c.error;
    EXPECT_NE(err.find(path), std::string::npos) << err;
  }
  // Negative arrival: field 2 as a 10-byte varint of -1.
  std::string m =
      "\x0a\x01"
      "a"
      "\x10" +
      std::string(9, '\xff') + "\x01" + "\x1a\x01\x05";
  const std::string path = scratch_path("neg.kvtrace");
  write_bytes(path, head + frame(m));
  EXPECT_NE(read_all_error(path).find("field arrival_time_us: negative arrival time -1"), std::string::npos)
      << read_all_error(path);
}

// A varint of any 64-bit value (protobuf wire format).
std::string varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

// The preamble and a hand-made Header frame: format_version 1, then `fields` (encoded).
std::string header_with(const std::string& fields) {
  std::string preamble = "KVTRACE\n";
  preamble += std::string("\x01\x00\x00\x00", 4);
  return preamble + frame("\x08\x01" + fields);
}

// Found by fuzzing: a header naming an unknown hash algorithm was read as sha256_cbor.
TEST(TraceIo, UnknownHashAlgoIsAnError) {
  const std::string path = scratch_path("algo.kvtrace");
  write_bytes(path, header_with("\x22\x03md5") + frame(request_message("a", 0, {1})));
  expect_open_error(path, "header: field hash_algo: unknown 'md5'");
  TraceHeader h;
  h.hash_algo = "md5";
  StatusOr<TraceWriter> w = TraceWriter::create(scratch_path("w.kvtrace"), h);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("field hash_algo: unknown 'md5'"), std::string::npos) << w.status().message();
  h.hash_algo = "xxhash_cbor";
  EXPECT_TRUE(TraceWriter::create(scratch_path("ok.kvtrace"), h).ok());
}

// Found by fuzzing: token ids at or above the header's vocab_size were accepted.
TEST(TraceIo, TokenIdsMustBeBelowTheVocabSize) {
  const std::string path = scratch_path("vocab.kvtrace");
  write_bytes(path, header_with("\x38" + varint(100)) + frame(request_message("a", 0, {5, 99})) +
                        frame(request_message("b", 1, {5, 100})));
  EXPECT_NE(read_all_error(path).find("request 1: field prompt: token id 100 is not below the header's vocab_size 100"),
            std::string::npos)
      << read_all_error(path);
  TraceHeader h;
  h.vocab_size = 100;
  StatusOr<TraceWriter> w = TraceWriter::create(scratch_path("w.kvtrace"), h);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->write(make_request("a", 0, {99})).ok());
  Status big = w->write(make_request("b", 0, {100}));
  EXPECT_NE(big.message().find("token id 100 is not below"), std::string::npos) << big.message();
  TraceRequest out = make_request("c", 0, {1});
  out.output_tokens = {1, 2, 300};
  Status big_out = w->write(out);
  EXPECT_NE(big_out.message().find("field output_tokens: token id 300"), std::string::npos) << big_out.message();
  TraceRequest block = make_request("d", 0, {});
  block.prompt_segments = {PromptSegment::block(7, 64)};  // expands to ids up to 128255
  EXPECT_NE(w->write(block).message().find("field prompt_segments: token id"), std::string::npos);
  w->abandon();
}

// Found by fuzzing: an arrival of 2^62 us passed the reader, and the replayer's nanosecond clock
// (arrival * 1000) overflowed to a time near 0.
TEST(TraceIo, ArrivalTimesBeyondTheLimitAreErrors) {
  const std::string path = scratch_path("late.kvtrace");
  std::string m =
      "\x0a\x01"
      "a"
      "\x10" +
      varint(std::uint64_t{1} << 62) + "\x1a\x01\x05";
  write_bytes(path, header_bytes() + frame(m));
  EXPECT_NE(read_all_error(path).find("field arrival_time_us: 4611686018427387904 is beyond 1000000000000000"),
            std::string::npos)
      << read_all_error(path);
  StatusOr<TraceWriter> w = TraceWriter::create(scratch_path("w.kvtrace"), TraceHeader());
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->write(make_request("a", kMaxArrivalTimeUs, {1})).ok());
  EXPECT_FALSE(w->write(make_request("b", kMaxArrivalTimeUs + 1, {1})).ok());
  w->abandon();
}

// Found by fuzzing: a few hundred bytes of block references expanded to billions of tokens.
TEST(TraceIo, PromptsBeyondTheLimitAreErrorsBeforeTheyAreExpanded) {
  std::string m =
      "\x0a\x01"
      "a"
      "\x10" +
      varint(0);                                             // id "a", arrival 0
  const std::string ref = "\x08\x01\x10" + varint(1 << 20);  // BlockRef{block_id 1, num_tokens 2^20}
  const std::string segment = "\x12" + varint(ref.size()) + ref;
  for (int i = 0; i < 17; ++i) m += "\x22" + varint(segment.size()) + segment;  // 17 * 2^20 > 2^24
  const std::string path = scratch_path("huge.kvtrace");
  write_bytes(path, header_bytes() + frame(m));
  EXPECT_NE(read_all_error(path).find("field prompt: more than 16777216 tokens"), std::string::npos)
      << read_all_error(path);
  TraceHeader h;
  StatusOr<TraceWriter> w = TraceWriter::create(scratch_path("w.kvtrace"), h);
  ASSERT_TRUE(w.ok());
  TraceRequest r = make_request("a", 0, {});
  for (int i = 0; i < 17; ++i) r.prompt_segments.push_back(PromptSegment::block(i, 1 << 20));
  EXPECT_NE(w->write(r).message().find("more than 16777216"), std::string::npos);
  TraceRequest out = make_request("b", 0, {1});
  out.output_length = kMaxOutputTokens + 1;
  EXPECT_NE(w->write(out).message().find("field output_length"), std::string::npos);
  w->abandon();
}

TEST(TraceIo, ErrorsAreSticky) {
  const std::string path = scratch_path("bad.kvtrace");
  write_bytes(path, header_bytes() + frame("\xff\xff\xff") + frame(request_message("a", 0, {1})));
  StatusOr<TraceReader> r = TraceReader::open(path);
  ASSERT_TRUE(r.ok());
  TraceRequest q;
  EXPECT_FALSE(r->next(&q).ok());
  EXPECT_FALSE(r->next(&q).ok());
}

TEST(BlockTokens, DeterministicAndPrefixClosed) {
  std::vector<TokenId> a, b, c;
  expand_block_tokens(12345, 512, a);
  expand_block_tokens(12345, 100, b);
  expand_block_tokens(12346, 512, c);
  ASSERT_EQ(a.size(), 512u);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin()));
  EXPECT_NE(a, c);
  for (TokenId t : a) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, kBlockTokenVocab);
  }
  EXPECT_EQ(a[7], block_token(12345, 7));
}

// Every path writes block_token()'s tokens: expand_block_tokens (AVX-512 where the CPU has it)
// and the scalar loop, for every length from 0 to 40 (the vector loop's tail) and 512, over
// ids from a generator and the extremes of the 64-bit range.
TEST(BlockTokens, EveryPathWritesBlockToken) {
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> ids = {0, 1, ~std::uint64_t{0}, std::uint64_t{1} << 63};
  for (int i = 0; i < 200; ++i) ids.push_back(rng());
  for (const std::uint64_t id : ids) {
    for (const int n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 40, 512}) {
      std::vector<TokenId> expanded = {-1};  // appended after what is there
      expand_block_tokens(id, n, expanded);
      std::vector<TokenId> scalar(static_cast<std::size_t>(n));
      block_tokens_scalar(splitmix64(id), 0, n, scalar.data());
      ASSERT_EQ(expanded.size(), static_cast<std::size_t>(n) + 1);
      for (int i = 0; i < n; ++i) {
        const TokenId want = block_token(id, static_cast<std::uint64_t>(i));
        ASSERT_EQ(expanded[static_cast<std::size_t>(i) + 1], want) << "id " << id << ", token " << i << " of " << n;
        ASSERT_EQ(scalar[static_cast<std::size_t>(i)], want) << "id " << id << ", token " << i << " of " << n;
      }
    }
  }
  std::printf("BlockTokens: expand_block_tokens on %s\n",
              block_tokens_avx512_available() ? "AVX-512, eight at a time" : "the scalar path");
}

}  // namespace
}  // namespace kv::trace
