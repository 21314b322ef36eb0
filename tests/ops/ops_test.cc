// The ops interpreter: the ten vLLM-produced golden scenarios in both free orders, every kind
// of malformed line (exit 2, `line N: reason`), a failed check (exit 1), and the kvsim binary.
#include "ops/ops_interpreter.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/kvsim_runner.h"

namespace kv {

// Reaches past the manager's API to break its state on purpose (KvCacheManager's friend).
class KvCacheManagerTestPeer {
 public:
  static BlockPool& pool(KvCacheManager& m) { return m.pool_; }
};

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path << " (tests run from the repository root)";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The script with `extra` appended to its config line.
std::string with_config(const std::string& script, const std::string& extra) {
  std::istringstream in(script);
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.rfind("config ", 0) == 0) line += " " + extra;
    out += line + "\n";
  }
  return out;
}

struct RunResult {
  int exit_code;
  std::string out;
  std::string err;
};

RunResult run(const std::string& script) {
  std::istringstream in(script);
  std::ostringstream out, err;
  const int rc = OpsInterpreter::run_script(in, out, err);
  return {rc, out.str(), err.str()};
}

const char* const kGolden[] = {
    "01_prefill",
    "02_evict",
    "03_hit_not_evicted",
    "04_duplicates",
    "05_full_hit_cap",
    "06_eagle",
    "07_not_enough_blocks",
    "08_cache_salt",
    "09_hash_reset_on_reuse",
    "10_decode_and_lookahead",
};

class GoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenTest, ClassicOrderMatchesVllm) {
  const std::string base = std::string("tests/golden/") + GetParam();
  const RunResult r = run(read_file(base + ".ops"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, read_file(base + ".classic.expected"));
}

TEST_P(GoldenTest, UnhashedFirstOrderMatchesVllm) {
  const std::string base = std::string("tests/golden/") + GetParam();
  const RunResult r = run(with_config(read_file(base + ".ops"), "free_order=unhashed_first"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, read_file(base + ".unhashed_first.expected"));
}

INSTANTIATE_TEST_SUITE_P(Scenarios, GoldenTest, ::testing::ValuesIn(kGolden),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           return std::string("s") + param_info.param;
                         });

// A malformed line: exit 2, output up to the line before it, exactly one error line.
void expect_bad_line(const std::string& script, const std::string& error, const std::string& out_before = "") {
  const RunResult r = run(script);
  EXPECT_EQ(r.exit_code, 2) << script;
  EXPECT_EQ(r.err, error + "\n") << script;
  EXPECT_EQ(r.out, out_before) << script;
}

constexpr const char* kConfig = "config blocks=11 block_size=4\n";

TEST(OpsErrorTest, UnknownCommand) {
  expect_bad_line(std::string(kConfig) + "frobnicate\n", "line 2: unknown command 'frobnicate'");
  // Named as unknown even with arguments, and even before any config.
  expect_bad_line(std::string(kConfig) + "frobnicate r1\n", "line 2: unknown command 'frobnicate'");
  expect_bad_line("frobnicate\n", "line 1: unknown command 'frobnicate'");
}

TEST(OpsErrorTest, CommandBeforeConfig) {
  expect_bad_line("# no config yet\n\nlookup r\n", "line 3: 'lookup' before the first config line");
  expect_bad_line("queue\n", "line 1: 'queue' before the first config line");
}

TEST(OpsErrorTest, MissingArgument) {
  expect_bad_line(std::string(kConfig) + "lookup\n", "line 2: lookup needs a request id");
  expect_bad_line(std::string(kConfig) + "request\n", "line 2: request needs an id");
  expect_bad_line(std::string(kConfig) + "request r\n", "line 2: request needs tokens=");
  expect_bad_line(std::string(kConfig) + "request r tokens=0:8\nalloc r\n",
                  "line 3: alloc needs an id and a token count (or rest)");
  expect_bad_line(std::string(kConfig) + "request r tokens=0:8\nappend r\n", "line 3: append needs tokens=");
  expect_bad_line("config blocks=11\n", "line 1: config needs block_size=");
}

TEST(OpsErrorTest, UnknownOrExtraArgument) {
  expect_bad_line(std::string(kConfig) + "request r tokens=0:8 color=red\n", "line 2: unknown argument 'color'");
  expect_bad_line(std::string(kConfig) + "request r tokens=0:8\nalloc r rest fast\n",
                  "line 3: unknown argument 'fast'");
  expect_bad_line("config blocks=11 block_size=4 speed=9\n", "line 1: unknown argument 'speed'");
  expect_bad_line(std::string(kConfig) + "request r tokens=0:8\nlookup r now\n", "line 3: unexpected argument 'now'");
  expect_bad_line(std::string(kConfig) + "num_free 3\n", "line 2: unexpected argument '3'");
}

TEST(OpsErrorTest, UnknownRequestId) {
  expect_bad_line(std::string(kConfig) + "request r tokens=0:8\nlookup q\n", "line 3: unknown request 'q'");
  expect_bad_line(std::string(kConfig) + "free q\n", "line 2: unknown request 'q'");
  expect_bad_line(std::string(kConfig) + "alloc q 4\n", "line 2: unknown request 'q'");
}

TEST(OpsErrorTest, BadTokenSpecs) {
  const std::string pre = kConfig;
  expect_bad_line(pre + "request r tokens=1,,2\n", "line 2: empty item in token list '1,,2'");
  expect_bad_line(pre + "request r tokens=\n", "line 2: empty token list");
  expect_bad_line(pre + "request r tokens=9:3\n", "line 2: range '9:3' ends before it starts");
  expect_bad_line(pre + "request r tokens=5*\n", "line 2: repeat count must be a non-negative integer, got ''");
  // Negative and non-integer tokens.
  expect_bad_line(pre + "request r tokens=1,-1\n", "line 2: token must be a non-negative integer, got '-1'");
  expect_bad_line(pre + "request r tokens=1.5\n", "line 2: token must be a non-negative integer, got '1.5'");
  expect_bad_line(pre + "request r tokens=abc\n", "line 2: token must be a non-negative integer, got 'abc'");
  expect_bad_line(pre + "request r tokens=0:8\nappend r tokens=x\n",
                  "line 3: token must be a non-negative integer, got 'x'");
}

TEST(OpsErrorTest, BadMultimodalItems) {
  const std::string pre = kConfig;
  expect_bad_line(pre + "request r tokens=0:8 mm=img\n", "line 2: multimodal item 'img' is not ID@OFFSET+LENGTH");
  expect_bad_line(pre + "request r tokens=0:8 mm=img@x+2\n",
                  "line 2: mm offset must be a non-negative integer, got 'x'");
  expect_bad_line(pre + "request r tokens=0:8 mm=img@1+0\n", "line 2: mm length must be at least 1 in 'img@1+0'");
  expect_bad_line(pre + "request r tokens=0:8 mm=a@4+1,b@2+1\n",
                  "line 2: multimodal items must be in offset order, 'b@2+1' is not");
}

TEST(OpsTest, MultimodalItemsSeparateEqualTokens) {
  // Same tokens, another image in block 1: block 0 is shared, block 1 is not.
  const RunResult r = run(std::string(kConfig) +
                          "request a tokens=0:9 mm=img1@4+2\nalloc a rest\n"
                          "request b tokens=0:9 mm=img2@4+2\nlookup b\n"
                          "request c tokens=0:9 mm=img1@4+2\nlookup c\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "alloc a new=[1,2,3]\nhit b blocks=[1] tokens=4\nhit c blocks=[1,2] tokens=8\n");
}

TEST(OpsErrorTest, AllocOfZeroOrTooManyTokens) {
  const std::string pre = std::string(kConfig) + "request r tokens=0:8\n";
  expect_bad_line(pre + "alloc r 0\n", "line 3: alloc of 0 tokens");
  expect_bad_line(pre + "alloc r -2\n", "line 3: token count must be a non-negative integer, got '-2'");
  expect_bad_line(pre + "alloc r 9\n", "line 3: alloc of 9 tokens exceeds the 8 tokens r has left");
}

TEST(OpsErrorTest, RequestIdReused) {
  expect_bad_line(std::string(kConfig) + "request r tokens=0:8\nrequest r tokens=0:4\n",
                  "line 3: request id 'r' already used");
}

TEST(OpsErrorTest, OutputBeforeTheBadLineIsKept) {
  expect_bad_line(std::string(kConfig) + "num_free\n# comment\n\nbogus\n", "line 5: unknown command 'bogus'",
                  "num_free 10\n");
}

TEST(OpsErrorTest, LookupAfterComputingIsRejected) {
  expect_bad_line(std::string(kConfig) + "request r tokens=0:8\nalloc r 4\nlookup r\n",
                  "line 4: lookup of 'r' after it computed tokens", "alloc r new=[1]\n");
}

TEST(OpsParseTest, TokenSpecForms) {
  auto t = parse_token_spec("7,3*3,10:13");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (std::vector<TokenId>{7, 3, 3, 3, 10, 11, 12}));
  auto big = parse_token_spec("5000000000");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, std::vector<TokenId>{5000000000});
  EXPECT_FALSE(parse_token_spec("1:").ok());
  EXPECT_FALSE(parse_token_spec("+1").ok());
  auto mm = parse_mm_spec("img1@0+3,img2@5+1");
  ASSERT_TRUE(mm.ok());
  ASSERT_EQ(mm->size(), 2u);
  EXPECT_EQ((*mm)[1].identifier, "img2");
  EXPECT_EQ((*mm)[1].offset, 5);
  EXPECT_EQ((*mm)[1].length, 1);
}

// Found by fuzzing: `config blocks=31909482` built a 32M-block pool (out of memory under the
// fuzzer's 2 GB), and a token list of many 2^24-token items grew without bound. Both are bad
// lines now.
TEST(OpsParseTest, PoolsAndTokenListsAreBounded) {
  RunResult r = run("config blocks=0000000000000031909482 block_size=15\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("line 1: blocks must be an integer from 2 to 4194304"), std::string::npos) << r.err;
  EXPECT_EQ(run("config blocks=4194305 block_size=1\n").exit_code, 2);
  EXPECT_EQ(run("config blocks=4096 block_size=1\n").exit_code, 0);
  auto many = parse_token_spec("1*16777216,2*1");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("repeat count too large"), std::string::npos) << many.status().message();
  EXPECT_FALSE(parse_token_spec("1*16777215,0:2").ok());
  EXPECT_TRUE(parse_token_spec("1*16777215,7").ok());
}

// ---- Several KV-cache groups (layers=, docs/semantics.md §6.5) ----

// A full-attention layer and a sliding-window layer of 4 tokens: two groups sharing the pool.
// The second request hits the full group's three blocks, and in the windowed group only the
// last block (its window of 4 tokens needs one block); the two skipped positions are null.
TEST(OpsHybridTest, TwoGroupsShareOnePoolAndTheWindowSkipsBlocks) {
  const RunResult r =
      run("config blocks=16 block_size=4 layers=full,sliding_window:4\n"
          "groups\n"
          "request a tokens=0:13\n"
          "lookup a\n"
          "alloc a rest\n"
          "request b tokens=0:13\n"
          "lookup b\n"
          "table a group=1\n"
          "alloc b rest\n"
          "table b\n"
          "num_free\n"
          "stats\n"
          "check\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "groups full[0] sliding_window:4[1]\n"
            "hit a blocks=[]/[] tokens=0\n"
            "alloc a new=[1,2,3,4]/[5,6,7,8]\n"
            "hit b blocks=[1,2,3]/[0,0,7] tokens=12\n"
            "table a group=1 [5,6,7,8]\n"
            "alloc b new=[9]/[10]\n"
            "table b [1,2,3,9]/[0,0,7,10]\n"
            "num_free 5\n"
            "stats lookups=2 queries=26 hits=12\n"
            "check ok\n");
}

// vLLM's grouping: layers of one spec split into groups of the smallest bucket's size.
TEST(OpsHybridTest, LayersFormVllmsGroups) {
  const RunResult r =
      run("config blocks=16 block_size=4 layers=full*2,sliding_window:128*4\n"
          "groups\n"
          "config blocks=16 block_size=4\n"
          "groups\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "groups full[0,1] sliding_window:128[2,4] sliding_window:128[3,5]\n"
            "groups full[all]\n");
}

TEST(OpsHybridTest, BadLayersAndGroupsAreNamed) {
  expect_bad_line("config blocks=16 block_size=4 layers=full,window:4\n",
                  "line 1: layers: layer 'window:4' is not full, sliding_window:W, chunked_local:C, mamba, "
                  "cross_attention or rswa:W (W, C from 1 to 16777216)");
  expect_bad_line("config blocks=16 block_size=4 layers=full*0\n",
                  "line 1: layers: layer count in 'full*0' must be from 1 to 1024");
  expect_bad_line("config blocks=16 block_size=4 eagle=on layers=full,chunked_local:8\n",
                  "line 1: eagle is not supported with chunked local attention (vLLM refuses it: "
                  "KV-cache group 1)");
  expect_bad_line(
      "config blocks=16 block_size=4 layers=full,sliding_window:8\n"
      "request a tokens=0:4\ntable a group=2\n",
      "line 3: group must be from 0 to 1, got '2'");
  expect_bad_line(std::string(kConfig) + "table\n", "line 2: table needs a request id");
}

// ---- Mamba, cross attention and R-SWA layers, new_step, drafts (docs/semantics.md §6.5) ----

// Align mode: the first chunk (8 tokens, two blocks) keeps one state, in the block of its end,
// behind a null. Another request hits that state, but not in the step that cached it.
TEST(OpsMambaTest, AlignStateIsHitOnlyAfterNewStep) {
  const RunResult r =
      run("config blocks=16 block_size=4 layers=full,mamba\n"
          "groups\n"
          "request a tokens=0:10\n"
          "lookup a\n"
          "alloc a 8\n"
          "request b tokens=0:10\n"
          "lookup b\n"
          "alloc b rest\n"
          "new_step\n"
          "lookup b\n"
          "alloc b rest\n"
          "table b\n"
          "check\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "groups full[0] mamba[1]\n"
            "hit a blocks=[]/[] tokens=0\n"
            "alloc a new=[1,2]/[0,3]\n"
            "hit b blocks=[1,2]/[0,3] tokens=8\n"
            "alloc b fail\n"
            "hit b blocks=[1,2]/[0,3] tokens=8\n"
            "alloc b new=[4]/[5]\n"
            "table b [1,2,4]/[0,3,5]\n"
            "check ok\n");
}

// Two speculative tokens: the Mamba group holds its state and two speculative blocks; a
// decode step schedules one token and two drafts, one draft is rejected, and the next step's
// state moves forward over the speculative blocks.
TEST(OpsMambaTest, DraftTokensAndSpeculativeBlocks) {
  const RunResult r =
      run("config blocks=32 block_size=4 layers=full,mamba spec_tokens=2\n"
          "request a tokens=0:9\n"
          "alloc a 8 lookahead=2\n"
          "alloc a rest draft=2 lookahead=2\n"
          "table a\n"
          "rollback a 1\n"
          "append a tokens=100,101\n"
          "new_step\n"
          "alloc a rest draft=2 lookahead=2\n"
          "table a\n"
          "check\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "alloc a new=[1,2,3]/[0,4,5,6]\n"
            "alloc a new=[7]/[8]\n"
            "table a [1,2,3,7]/[0,4,5,6,8]\n"
            "alloc a new=[]/[9]\n"
            "table a [1,2,3,7]/[0,0,5,6,8,9]\n"
            "check ok\n");
}

// Caching off: Mamba mode none keeps one block of max_model_len tokens; a cross-attention
// group takes its blocks for the encoder tokens once and never grows.
TEST(OpsMambaTest, ModeNoneAndCrossAttention) {
  const RunResult r =
      run("config blocks=16 block_size=4 caching=off layers=full,mamba\n"
          "request a tokens=0:6\n"
          "alloc a rest\n"
          "config blocks=16 block_size=4 caching=off layers=full,cross_attention\n"
          "groups\n"
          "request a tokens=0:6\n"
          "alloc a rest encoder=10\n"
          "append a tokens=7,8,9\n"
          "alloc a rest\n"
          "table a\n"
          "config blocks=16 block_size=4 layers=mamba*3,full mamba=all\n"
          "groups\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "alloc a new=[1,2]/[3]\n"
            "groups full[0] cross_attention[1]\n"
            "alloc a new=[1,2]/[3,4,5]\n"
            "alloc a new=[6]/[]\n"
            "table a [1,2,6]/[3,4,5]\n"
            "groups mamba[0] mamba[1] mamba[2] full[3]\n");
}

TEST(OpsMambaTest, BadMambaLinesAreNamed) {
  expect_bad_line("config blocks=16 block_size=4 layers=full,mamba mamba=fast\n",
                  "line 1: mamba must be none, align or all, got 'fast'");
  expect_bad_line("config blocks=16 block_size=4 layers=full,mamba mamba=none\n",
                  "line 1: mamba=none with caching on: vLLM uses none without prefix caching, align or all "
                  "with it");
  expect_bad_line("config blocks=16 block_size=4 caching=off layers=full,mamba mamba=all\n",
                  "line 1: mamba=all with caching off: vLLM uses none without prefix caching, align or all "
                  "with it");
  expect_bad_line("config blocks=16 block_size=4 mamba=all\n", "line 1: mamba= needs layers=");
  expect_bad_line("config blocks=16 block_size=4 layers=mamba spec_tokens=2000\n",
                  "line 1: spec_tokens must be an integer from 0 to 1024, got '2000'");
  expect_bad_line("config blocks=16 block_size=4 layers=full,cross_attention\n",
                  "line 1: KV-cache group 1: cross attention needs prefix caching off (vLLM raises on its lookup)");
  expect_bad_line("config blocks=16 block_size=4 layers=full,mamba\nrequest a tokens=0:8\nalloc a 4 draft=x\n",
                  "line 3: draft must be an integer from 0 to 16777216, got 'x'");
  expect_bad_line("config blocks=16 block_size=4 layers=full,mamba\nrequest a tokens=0:8\nalloc a 4\nrollback a 5\n",
                  "line 4: rollback of 5 tokens, a has computed 4", "alloc a new=[1]/[2]\n");
  expect_bad_line("config blocks=16 block_size=4 layers=full,mamba\nnew_step now\n",
                  "line 2: unexpected argument 'now'");
}

TEST(OpsCheckTest, BrokenStateIsACheckFailureNotABadLine) {
  std::ostringstream out;
  OpsInterpreter ops(out);
  EXPECT_EQ(ops.execute("config blocks=11 block_size=4", 1), OpsInterpreter::Outcome::kOk);
  EXPECT_EQ(ops.execute("request r tokens=0:8", 2), OpsInterpreter::Outcome::kOk);
  EXPECT_EQ(ops.execute("alloc r rest", 3), OpsInterpreter::Outcome::kOk);
  EXPECT_EQ(ops.execute("check", 4), OpsInterpreter::Outcome::kOk);
  // No script line can break the core, so reach past the interpreter: an extra reference.
  KvCacheManagerTestPeer::pool(*const_cast<KvCacheManager*>(ops.manager())).touch(std::vector<BlockId>{2});
  EXPECT_EQ(ops.execute("check", 5), OpsInterpreter::Outcome::kCheckFailed);
  EXPECT_EQ(ops.error(), "line 5: check failed: block 2 has ref_cnt 2 but 1 tables hold it");
  EXPECT_EQ(out.str(),
            "alloc r new=[1,2]\ncheck ok\n"
            "check failed: block 2 has ref_cnt 2 but 1 tables hold it\n");
  // A bad line is a different outcome.
  EXPECT_EQ(ops.execute("nonsense", 6), OpsInterpreter::Outcome::kError);
  EXPECT_EQ(ops.error(), "line 6: unknown command 'nonsense'");
}

// ---- The kvsim binary ----

#ifndef KVSIM_BINARY
#error "KVSIM_BINARY must name the built kvsim executable"
#endif

test::KvsimRun run_binary(const std::string& args) { return test::run_kvsim(KVSIM_BINARY, args); }

TEST(KvsimBinaryTest, RunsAGoldenScript) {
  const test::KvsimRun r = run_binary("ops tests/golden/10_decode_and_lookahead.ops");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, read_file("tests/golden/10_decode_and_lookahead.classic.expected"));
  EXPECT_EQ(r.err, "");
}

TEST(KvsimBinaryTest, ReadsStandardInput) {
  const test::KvsimRun r = run_binary("ops - < tests/golden/03_hit_not_evicted.ops");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, read_file("tests/golden/03_hit_not_evicted.classic.expected"));
}

TEST(KvsimBinaryTest, MissingScriptIsBadInputNamingTheFile) {
  const test::KvsimRun r = run_binary("ops tests/golden/no_such_script.ops");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("tests/golden/no_such_script.ops"), std::string::npos) << r.err;
}

TEST(KvsimBinaryTest, BadLineExitsTwoWithTheLineNumber) {
  const std::string script = ::testing::TempDir() + "kvsim_ops_test_bad.ops";
  std::ofstream(script) << "config blocks=4 block_size=4\nqueue\nfly\n";
  const test::KvsimRun r = run_binary("ops - < '" + script + "'");
  std::remove(script.c_str());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "queue [1,2,3]\n");
  EXPECT_EQ(r.err, "line 3: unknown command 'fly'\n");
}

}  // namespace
}  // namespace kv
