// Option values from the outside: sizes with units, and numbers out of range or not finite,
// refused with an error naming the option and its limit (exit status 2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/kvsim_runner.h"

namespace {

namespace fs = std::filesystem;

kv::test::KvsimRun run(const std::string& args) { return kv::test::run_kvsim(KVSIM_BIN, args); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class CliOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override { kv::test::make_scratch_trace(KVSIM_BIN, "kvsim_cli_options", dir_, trace_); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string replay_args() const { return "replay --trace " + trace_ + " --model tiny --num-blocks 64 "; }
  fs::path dir_;
  std::string trace_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(CliOptionsTest, ByteSizesTakeDecimalAndBinaryUnits) {
  const std::string out = (dir_ / "run").string();
  kv::test::KvsimRun r = run(replay_args() + "--host-cache-bytes 64GiB --disk-cache-bytes 1.5T --out " + out);
  ASSERT_EQ(r.status, 0) << r.output();
  const std::string summary = read_file(fs::path(out) / "summary.json");
  EXPECT_TRUE(has(summary, "\"host_cache_bytes\": \"68719476736\"")) << summary;
  EXPECT_TRUE(has(summary, "\"disk_cache_bytes\": \"1500000000000\"")) << summary;
  r = run(replay_args() + "--host-cache-bytes 64G --out " + (dir_ / "run2").string());
  ASSERT_EQ(r.status, 0) << r.output();
  EXPECT_TRUE(has(read_file(dir_ / "run2" / "summary.json"), "\"host_cache_bytes\": \"64000000000\""));
}

TEST_F(CliOptionsTest, BadByteSizesAreRefused) {
  for (const char* bad : {"0x10", "1.5", "64Gi", "-1", "1e9"}) {
    kv::test::KvsimRun r = run(replay_args() + "--host-cache-bytes " + bad + " --out " + (dir_ / "bad").string());
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_TRUE(has(r.err, "--host-cache-bytes: '" + std::string(bad) + "' is not a size")) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

TEST_F(CliOptionsTest, HelpShowsTheSizeForms) {
  kv::test::KvsimRun r = run("replay --help");
  ASSERT_EQ(r.status, 0);
  EXPECT_TRUE(has(r.out, "64GiB (2^30)")) << r.out;
  EXPECT_TRUE(has(r.out, "tokens: 65536, 1e6, 2.5k, 3M")) << r.out;
}

TEST_F(CliOptionsTest, TokenCountsTakeSuffixes) {
  const std::string out = (dir_ / "run").string();
  kv::test::KvsimRun r = run("replay --trace " + trace_ +
                             " --model tiny --kv-cache-tokens 1k --long-prefill-token-threshold 2k --out " + out);
  ASSERT_EQ(r.status, 0) << r.output();
  const std::string summary = read_file(fs::path(out) / "summary.json");
  EXPECT_TRUE(has(summary, "\"num_blocks\": \"64 (--kv-cache-tokens)\"")) << summary;
  EXPECT_TRUE(has(summary, "\"long_prefill_token_threshold\": \"2000\"")) << summary;
  r = run("replay --trace " + trace_ + " --model tiny --kv-cache-tokens 0x10 --out " + (dir_ / "bad").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--kv-cache-tokens: '0x10' is not a size")) << r.err;
}

TEST(CliNumberOptions, FuzzSecondsMustBeFiniteAndBounded) {
  for (const char* bad : {"1e30", "inf", "9223372036854775808", "nan", "0", "-1", "0x10"}) {
    kv::test::KvsimRun r = run(std::string("fuzz --level queue --seconds ") + bad);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.output();
    EXPECT_TRUE(has(r.err, "--seconds: must be a finite number from 0.001 to 1e+06, got '" + std::string(bad) + "'"))
        << r.err;
  }
  for (const char* bad : {"9223372036854775808", "0", "1.5"}) {
    kv::test::KvsimRun r = run(std::string("fuzz --level queue --seconds 0.01 --cases ") + bad);
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_TRUE(has(r.err, "--cases: must be an integer from 1 to 1000000")) << r.err;
  }
}

TEST_F(CliOptionsTest, SweepCapacityRefusesHexAndNonFinite) {
  for (const char* bad : {"0x10", "inf", "nan", "1e30"}) {
    kv::test::KvsimRun r =
        run("sweep --trace " + trace_ + " --out " + (dir_ / "sweep").string() + " --capacity " + bad);
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_TRUE(has(r.err, "kvsim sweep: --capacity: capacity '" + std::string(bad) + "'")) << r.err;
  }
}

TEST(CliNumberOptions, CalibrateNamesTheOption) {
  kv::test::KvsimRun r = run("calibrate --held-out-limit -1");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--held-out-limit: must be an integer from 0 to 9223372036854775807, got '-1'")) << r.err;
  r = run("calibrate --noise-sigma nan");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--noise-sigma: must be a finite number from 0 to 0.99, got 'nan'")) << r.err;
  r = run("calibrate /nonexistent/profile.csv --name x");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "kvsim calibrate: --profile: /nonexistent/profile.csv")) << r.err;
}

TEST_F(CliOptionsTest, CalibrateFitsTheServingTermsToABenchResult) {
  // A replay's own result.json is a vllm bench serve result: fitting to it from the same
  // options reproduces every figure.
  const std::string load = " --request-rate 20 --seed 3";
  kv::test::KvsimRun r = run(replay_args() + load + " --out " + (dir_ / "run").string());
  ASSERT_EQ(r.status, 0) << r.output();
  const std::string fit_json = (dir_ / "fit.json").string();
  r = run("calibrate --serve-result " + (dir_ / "run" / "result.json").string() + " --trace " + trace_ +
          " --model tiny --num-blocks 64" + load + " --out " + fit_json);
  ASSERT_EQ(r.status, 0) << r.output();
  EXPECT_TRUE(has(r.out, "host time per step")) << r.out;
  EXPECT_TRUE(has(r.out, "--frontend 0,0,0,0,")) << r.out;
  EXPECT_TRUE(has(r.out, "mean_ttft_ms")) << r.out;
  EXPECT_TRUE(has(read_file(fit_json), "\"fitted\"")) << read_file(fit_json);
  r = run("calibrate --serve-result " + (dir_ / "run" / "result.json").string() + " --trace " + trace_ +
          " --model tiny --num-blocks 64 --out " + fit_json);
  EXPECT_EQ(r.status, 2);  // the fit's file exists
  EXPECT_TRUE(has(r.err, "kvsim calibrate: --out: ")) << r.err;
}

TEST(CliNumberOptions, CalibrateServeResultErrorsNameTheirOption) {
  kv::test::KvsimRun r = run("calibrate --serve-result /nonexistent/r.json --trace t.kvtrace");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "kvsim calibrate: --serve-result: /nonexistent/r.json: cannot open")) << r.err;
  r = run("calibrate --serve-result r.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "kvsim calibrate: --trace is required")) << r.err;
  r = run("calibrate --serve-result r.json --trace t.kvtrace --block-size 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--block-size")) << r.err;
}

TEST(CliNumberOptions, IntegersOutOfTheirTypeAreRefusedByName) {
  kv::test::KvsimRun r = run("gen prefix --repeat 9223372036854775808 -o /nonexistent/x.kvtrace");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--repeat: must be an integer, got '9223372036854775808'")) << r.err;
  r = run("trace info t.kvtrace --top 1e30");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--top: must be an integer from 0 to 1000000, got '1e30'")) << r.err;
}

TEST_F(CliOptionsTest, GeneratorTokenOptionsTakeTokenCounts) {
  const std::string out = (dir_ / "k.kvtrace").string();
  kv::test::KvsimRun r =
      run("gen prefix --num-prompts 2 --prefix-len 1k --suffix-len 0.5k --repeat 1 --output-len 1e1 -o " + out);
  ASSERT_EQ(r.status, 0) << r.output();
  r = run("trace info " + out);
  EXPECT_TRUE(has(r.out, "--prefix-len 1000 --suffix-len 500 --repeat 1 --output-len 10")) << r.out;
  r = run("gen prefix --prefix-len 0x10 -o " + out + " --force");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--prefix-len: '0x10' is not a token count")) << r.err;
  r = run("gen prefix --prefix-len 1e12 -o " + out + " --force");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "--prefix-len: must be at most 2147483647 tokens, got '1e12'")) << r.err;
}

// An input with no requests is exit 2 unless --allow-empty asks for an empty trace.
TEST_F(CliOptionsTest, ConvertRefusesAnInputWithNoRequestsUnlessAllowed) {
  const std::string empty = (dir_ / "empty.jsonl").string();
  std::ofstream(empty).close();
  const std::string header_only = (dir_ / "azure.csv").string();
  std::ofstream(header_only) << "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (const std::string& from_input : {"--from mooncake " + empty, "--from azure " + header_only}) {
    const std::string out = (dir_ / "out.kvtrace").string();
    kv::test::KvsimRun r = run("convert " + from_input + " -o " + out);
    EXPECT_EQ(r.status, 2) << r.output();
    EXPECT_TRUE(has(r.err, ": the input has no requests; --allow-empty writes an empty trace")) << r.err;
    EXPECT_FALSE(fs::exists(out));
    r = run("convert " + from_input + " -o " + out + " --allow-empty");
    EXPECT_EQ(r.status, 0) << r.output();
    EXPECT_TRUE(has(r.out, "wrote 0 requests")) << r.out;
    fs::remove(out);
  }
}

}  // namespace
