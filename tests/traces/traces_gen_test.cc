// Generators: determinism (same options, same bytes), the documented statistics, and the
// bundled traces regenerating byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "tests/traces/traces_test_util.h"
#include "traces/converters.h"
#include "traces/generators.h"
#include "traces/trace_io.h"

namespace kv::trace {
namespace {

using testing::read_bytes;
using testing::scratch_path;

std::string gen_sharegpt(const ShareGptGenOptions& o, const std::string& name) {
  const std::string path = scratch_path(name);
  StatusOr<TraceWriter> w = TraceWriter::create(path, sharegpt_gen_header(o));
  EXPECT_TRUE(w.ok()) << w.status().message();
  StatusOr<std::int64_t> n = generate_sharegpt(o, *w);
  EXPECT_TRUE(n.ok()) << n.status().message();
  EXPECT_TRUE(w->close().ok());
  return path;
}

std::vector<TraceRequest> read_all(const std::string& path) {
  std::vector<TraceRequest> out;
  StatusOr<TraceReader> r = TraceReader::open(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  TraceRequest q;
  while (true) {
    StatusOr<bool> got = r->next(&q);
    EXPECT_TRUE(got.ok()) << got.status().message();
    if (!got.ok() || !*got) break;
    out.push_back(q);
  }
  return out;
}

TEST(GenSharegpt, SameOptionsSameBytesOtherSeedOtherBytes) {
  ShareGptGenOptions o;
  o.num_requests = 300;
  o.seed = 7;
  const std::string a = read_bytes(gen_sharegpt(o, "a.kvtrace"));
  const std::string b = read_bytes(gen_sharegpt(o, "b.kvtrace"));
  o.seed = 8;
  const std::string c = read_bytes(gen_sharegpt(o, "c.kvtrace"));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(GenSharegpt, TurnsExtendTheConversationAndMatchTheDocumentedMeans) {
  ShareGptGenOptions o;
  o.num_requests = 6000;
  o.seed = 3;
  o.rate = 20;
  const std::vector<TraceRequest> reqs = read_all(gen_sharegpt(o, "s.kvtrace"));
  ASSERT_EQ(reqs.size(), 6000u);
  std::map<std::string, std::vector<TokenId>> context;  // session -> prompt + output so far
  double user_sum = 0, reply_sum = 0;
  std::int64_t prev_arrival = 0;
  for (const TraceRequest& r : reqs) {
    EXPECT_GE(r.arrival_time_us, prev_arrival);
    prev_arrival = r.arrival_time_us;
    EXPECT_EQ(static_cast<std::int64_t>(r.output_tokens.size()), r.output_length);
    EXPECT_LE(static_cast<int>(r.prompt.size() + r.output_tokens.size()), o.max_model_len);
    auto [it, first_turn] = context.try_emplace(r.session_id);
    std::size_t before = it->second.size();
    if (first_turn)
      before = static_cast<std::size_t>(o.system_prompt_tokens);
    else
      ASSERT_TRUE(std::equal(it->second.begin(), it->second.end(), r.prompt.begin())) << r.id;
    ASSERT_GT(r.prompt.size(), before);
    user_sum += static_cast<double>(r.prompt.size() - before);
    reply_sum += static_cast<double>(r.output_length);
    it->second = r.prompt;
    it->second.insert(it->second.end(), r.output_tokens.begin(), r.output_tokens.end());
  }
  const double n = static_cast<double>(reqs.size());
  EXPECT_NEAR(user_sum / n, 160.0, 16.0);
  EXPECT_NEAR(reply_sum / n, 340.0, 34.0);
  // Every session starts with the same system prompt.
  EXPECT_TRUE(std::equal(reqs[0].prompt.begin(), reqs[0].prompt.begin() + 512, reqs[100].prompt.begin()));
  // Poisson arrivals at 20/s.
  const double span_s = static_cast<double>(reqs.back().arrival_time_us) / 1e6;
  EXPECT_NEAR(n / span_s, 20.0, 1.0);
}

TEST(GenPrefix, ShapeOfVllmPrefixBenchmark) {
  PrefixGenOptions o;
  o.num_prompts = 10;
  o.num_prefixes = 2;
  o.prefix_len = 64;
  o.suffix_len = 32;
  o.repeat = 3;
  o.output_len = 5;
  const std::string path = scratch_path("p.kvtrace");
  StatusOr<TraceWriter> w = TraceWriter::create(path, prefix_gen_header(o));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(generate_prefix(o, *w).ok());
  ASSERT_TRUE(w->close().ok());
  const std::vector<TraceRequest> reqs = read_all(path);
  ASSERT_EQ(reqs.size(), 30u);
  std::map<std::vector<TokenId>, int> prompts, prefixes;
  for (const TraceRequest& r : reqs) {
    ASSERT_EQ(r.prompt.size(), 96u);
    EXPECT_EQ(r.output_length, 5);
    EXPECT_EQ(r.arrival_time_us, 0);
    ++prompts[r.prompt];
    ++prefixes[std::vector<TokenId>(r.prompt.begin(), r.prompt.begin() + 64)];
  }
  EXPECT_EQ(prompts.size(), 10u);
  for (const auto& [p, k] : prompts) EXPECT_EQ(k, 3);
  EXPECT_EQ(prefixes.size(), 2u);
  EXPECT_NE(reqs[0].id + reqs[1].id + reqs[2].id, "p0-r0p0-r1p0-r2");  // shuffled
}

std::vector<TraceRequest> gen_shared_prefix(const SharedPrefixGenOptions& o, const std::string& name) {
  const std::string path = scratch_path(name);
  StatusOr<TraceWriter> w = TraceWriter::create(path, shared_prefix_gen_header(o));
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (!w.ok()) return {};
  StatusOr<std::int64_t> n = generate_shared_prefix(o, *w);
  EXPECT_TRUE(n.ok()) << n.status().message();
  EXPECT_TRUE(w->close().ok());
  std::vector<TraceRequest> out = read_all(path);
  if (n.ok()) {
    EXPECT_EQ(static_cast<std::int64_t>(out.size()), *n);
  }
  return out;
}

TEST(GenSharedPrefix, GroupsShareTheirSystemPromptAndUsersTheirQuestion) {
  SharedPrefixGenOptions o;
  o.groups = 3;
  o.users = 2;
  o.prefix_len = 64;
  o.question_len = 32;
  o.output_len = 7;
  o.num_requests = 200;
  o.rate = 10;
  const std::vector<TraceRequest> reqs = gen_shared_prefix(o, "sp.kvtrace");
  ASSERT_EQ(reqs.size(), 200u);
  std::map<std::string, std::vector<TokenId>> prompt_of_session, prefix_of_group;
  std::int64_t last = 0;
  for (const TraceRequest& r : reqs) {
    ASSERT_EQ(r.prompt.size(), 96u);
    EXPECT_EQ(r.output_length, 7);
    EXPECT_GE(r.arrival_time_us, last);
    last = r.arrival_time_us;
    EXPECT_EQ(r.id.rfind(r.session_id + "-r", 0), 0u) << r.id;
    auto [at, fresh] = prompt_of_session.emplace(r.session_id, r.prompt);
    if (!fresh) {
      EXPECT_EQ(at->second, r.prompt) << r.session_id;  // a user repeats the same prompt
    }
    const std::string group = r.session_id.substr(0, r.session_id.find('-'));
    const std::vector<TokenId> prefix(r.prompt.begin(), r.prompt.begin() + 64);
    auto [g, first] = prefix_of_group.emplace(group, prefix);
    if (!first) {
      EXPECT_EQ(g->second, prefix) << group;
    }
  }
  EXPECT_EQ(prompt_of_session.size(), 6u);  // every (group, user) drawn in 200 requests
  EXPECT_EQ(prefix_of_group.size(), 3u);
  EXPECT_NE(prefix_of_group["g0"], prefix_of_group["g1"]);
  EXPECT_NEAR(static_cast<double>(last) / 1e6, 20.0, 20.0 * 5 / std::sqrt(200.0));  // 200 at 10/s
}

// --stages: each stage brings Poisson arrivals at its rate for its seconds, in order.
TEST(GenSharedPrefix, StagesBringTheirRatesInOrder) {
  SharedPrefixGenOptions o;
  o.prefix_len = 16;
  o.question_len = 16;
  auto stages = parse_stages("20:10,100:5,5:20");
  ASSERT_TRUE(stages.ok()) << stages.status().message();
  o.stages = *stages;
  const std::vector<TraceRequest> reqs = gen_shared_prefix(o, "stages.kvtrace");
  double counts[3] = {0, 0, 0};
  for (const TraceRequest& r : reqs) {
    const double t = static_cast<double>(r.arrival_time_us) / 1e6;
    ASSERT_LT(t, 35.0);
    ++counts[t < 10 ? 0 : t < 15 ? 1 : 2];
  }
  const double expected[3] = {200, 500, 100};
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(counts[k], expected[k], 5 * std::sqrt(expected[k])) << "stage " << k;
  EXPECT_EQ(read_bytes(scratch_path("stages.kvtrace")),
            (gen_shared_prefix(o, "stages2.kvtrace"), read_bytes(scratch_path("stages2.kvtrace"))));
}

TEST(GenSharedPrefix, BadStagesNameTheOptionAndTheStage) {
  for (const char* text : {"10:5,x:2", "10:5,0:2", "10:5,3:-1", "10", "", "10:5,"}) {
    auto s = parse_stages(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.status().message().find("--stages: stage"), std::string::npos) << s.status().message();
  }
  SharedPrefixGenOptions o;
  o.groups = 0;
  EXPECT_NE(validate(o).message().find("--groups"), std::string::npos);
}

// traces/data/README.md: the command that regenerates the bundled sample.
TEST(BundledTraces, SharegptSampleRegeneratesByteForByte) {
  ShareGptGenOptions o;
  o.num_requests = 1000;
  o.rate = 10;
  o.concurrent_sessions = 32;
  o.seed = 1;
  const std::string fresh = read_bytes(gen_sharegpt(o, "sample.kvtrace"));
  const std::string committed = read_bytes("traces/data/sharegpt_sample.kvtrace");
  ASSERT_FALSE(committed.empty()) << "run from the repository root";
  EXPECT_TRUE(fresh == committed) << "regenerate with the command in traces/data/README.md";
}

TEST(BundledTraces, MooncakeConversationConvertsByteForByte) {
  const std::string in = "traces/data/mooncake_conversation_trace.jsonl";
  const std::string path = scratch_path("mc.kvtrace");
  ConvertOptions c;
  StatusOr<TraceWriter> w = TraceWriter::create(path, convert_header(SourceFormat::kMooncake, in, c));
  ASSERT_TRUE(w.ok());
  StatusOr<ConvertStats> s = convert_trace(SourceFormat::kMooncake, in, c, *w);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(w->close().ok());
  EXPECT_EQ(s->requests, 12031);
  EXPECT_TRUE(read_bytes(path) == read_bytes("traces/data/mooncake_conversation.kvtrace"));
}

// Found by fuzzing: `kvsim gen` took inf, nan and 1e30 for rates and sizes; some ran forever,
// some overflowed arrival times. validate() names the option; the generators need its ok.
TEST(GenOptions, OutOfRangeOptionsNameTheOption) {
  EXPECT_TRUE(validate(ShareGptGenOptions()).ok());
  EXPECT_TRUE(validate(PrefixGenOptions()).ok());
  const double inf = std::numeric_limits<double>::infinity();
  const std::pair<void (*)(ShareGptGenOptions&, double), std::string> sharegpt[] = {
      {[](ShareGptGenOptions& o, double x) { o.rate = x; }, "--rate"},
      {[](ShareGptGenOptions& o, double x) { o.arrival_cv = x; }, "--arrival-cv"},
      {[](ShareGptGenOptions& o, double x) { o.mean_turns = x; }, "--mean-turns"},
      {[](ShareGptGenOptions& o, double x) { o.mean_user_tokens = x; }, "--mean-user"},
      {[](ShareGptGenOptions& o, double x) { o.mean_reply_tokens = x; }, "--mean-reply"},
      {[](ShareGptGenOptions& o, double x) { o.sigma = x; }, "--sigma"},
  };
  for (const auto& [set, option] : sharegpt) {
    for (double bad : {inf, -inf, std::nan(""), 1e30, -1.0}) {
      ShareGptGenOptions o;
      set(o, bad);
      const Status s = validate(o);
      ASSERT_FALSE(s.ok()) << option << " " << bad;
      EXPECT_EQ(s.message().rfind(option + ":", 0), 0u) << s.message();
    }
  }
  ShareGptGenOptions many;
  many.num_requests = kMaxGeneratedRequests + 1;
  EXPECT_EQ(validate(many).message().rfind("--num-requests:", 0), 0u);
  ShareGptGenOptions long_turn;
  long_turn.max_turn_tokens = (1 << 20) + 1;
  EXPECT_EQ(validate(long_turn).message().rfind("--max-turn:", 0), 0u);
  PrefixGenOptions p;
  p.rate = inf;
  EXPECT_EQ(validate(p).message().rfind("--prefix-rate:", 0), 0u);
  p = PrefixGenOptions();
  p.num_prompts = 100'000'000;
  p.repeat = 2;
  EXPECT_EQ(validate(p).message().rfind("--num-prompts:", 0), 0u);
  p = PrefixGenOptions();
  p.prefix_len = (1 << 20) + 1;
  EXPECT_FALSE(validate(p).ok());
  p = PrefixGenOptions();  // the bounds hold before the sum is taken (it would overflow)
  p.prefix_len = std::numeric_limits<int>::max();
  p.suffix_len = 256;
  EXPECT_EQ(validate(p).message().rfind("--prefix-len and --suffix-len:", 0), 0u);
  SharedPrefixGenOptions sp;  // the same for shared-prefix's two parts
  sp.prefix_len = 1024;
  sp.question_len = std::numeric_limits<int>::max();
  EXPECT_EQ(validate(sp).message().rfind("--prefix-len and --question-len:", 0), 0u);
}

TEST(GenSessions, ArrivalsBeyondTheFormatsLimitAreAnError) {
  StatusOr<TraceWriter> w = TraceWriter::create(scratch_path("slow.kvtrace"), TraceHeader());
  ASSERT_TRUE(w.ok());
  ArrivalOptions a;
  a.rate = 1e-12;  // the first gap is ~10^12 s: past kMaxArrivalTimeUs
  auto one = [](Session* s) -> StatusOr<bool> {
    s->id = "s";
    s->turns = {Turn{PromptSegment::literal({1}), PromptSegment::literal({2})}};
    return true;
  };
  StatusOr<std::int64_t> n = write_sessions(a, one, *w);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("arrival times pass 1000000000000000 us"), std::string::npos)
      << n.status().message();
  w->abandon();
}

}  // namespace
}  // namespace kv::trace
