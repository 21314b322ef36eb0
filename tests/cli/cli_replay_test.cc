// `kvsim replay` from the outside: exit status and messages for good and bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/kvsim_runner.h"

namespace {

namespace fs = std::filesystem;

kv::test::KvsimRun run(const std::string& args) { return kv::test::run_kvsim(KVSIM_BIN, args); }

class CliReplayTest : public ::testing::Test {
 protected:
  void SetUp() override { kv::test::make_scratch_trace(KVSIM_BIN, "kvsim_cli_replay", dir_, trace_); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string small_args() const { return "--trace " + trace_ + " --model tiny --num-blocks 64 --verify full "; }
  fs::path dir_;
  std::string trace_;
};

TEST_F(CliReplayTest, WritesARunFolderAndADigest) {
  const std::string out = (dir_ / "run").string();
  kv::test::KvsimRun o = run("replay " + small_args() + "--out " + out);
  ASSERT_EQ(o.status, 0) << o.output();
  EXPECT_NE(o.output().find("requests done / rejected  6 / 0"), std::string::npos) << o.output();
  EXPECT_NE(o.output().find("no violations"), std::string::npos);
  for (const char* f : {"summary.json", "steps.csv", "requests.csv", "decisions.log", "report.md", "kernels.csv"}) {
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  }
  // The same run again into another folder: byte-identical decision log.
  const std::string out2 = (dir_ / "run2").string();
  ASSERT_EQ(run("replay " + small_args() + "--out " + out2).status, 0);
  std::ifstream a(fs::path(out) / "decisions.log"), b(fs::path(out2) / "decisions.log");
  std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
  EXPECT_FALSE(sa.empty());
  EXPECT_EQ(sa, sb);
}

// The number in a kernels.csv row "NAME,launches,total_ns" (-1 when absent).
long long kernel_launches(const fs::path& csv, const std::string& name) {
  std::ifstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ",", 0) == 0) return std::stoll(line.substr(name.size() + 1));
  }
  return -1;
}

// The "num_blocks" of a summary.json's config ("N (gpu memory)").
long long pool_blocks(const fs::path& summary) {
  std::ifstream in(summary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::size_t at = text.find("\"num_blocks\": \"");
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + 15));
}

TEST_F(CliReplayTest, ModelConfigWithFp8AndTensorParallelism) {
  const std::string config = std::string(KVSIM_SOURCE_DIR) + "/tests/data/llama-3.1-8b-config.json";
  const std::string base = "replay --trace " + trace_ + " --model-config " + config + " --gpu h100-sxm --dtype fp8 ";
  const fs::path one = dir_ / "tp1", two = dir_ / "tp2";
  kv::test::KvsimRun a = run(base + "--out " + one.string());
  ASSERT_EQ(a.status, 0) << a.output();
  kv::test::KvsimRun b = run(base + "--tp 2 --out " + two.string());
  ASSERT_EQ(b.status, 0) << b.output();
  EXPECT_NE(b.output().find("on sim:meta-llama/Llama-3.1-8B-Instruct@h100-sxm"), std::string::npos) << b.output();
  // Each rank holds half the KV heads and half the weights: more than twice the blocks.
  EXPECT_GT(pool_blocks(two / "summary.json"), 2 * pool_blocks(one / "summary.json"));
  EXPECT_EQ(kernel_launches(one / "kernels.csv", "all_reduce"), 0);
  EXPECT_GT(kernel_launches(two / "kernels.csv", "all_reduce"), 0);
  kv::test::KvsimRun bad = run(base + "--tp 3 --out " + (dir_ / "tp3").string());
  EXPECT_EQ(bad.status, 2) << bad.output();
  EXPECT_NE(bad.output().find(
                "--tp: model meta-llama/Llama-3.1-8B-Instruct cannot be split over 3 ranks: 32 attention heads"),
            std::string::npos)
      << bad.output();
}

TEST_F(CliReplayTest, RefusesToOverwriteARunFolder) {
  const std::string out = (dir_ / "run").string();
  ASSERT_EQ(run("replay " + small_args() + "--out " + out).status, 0);
  kv::test::KvsimRun o = run("replay " + small_args() + "--out " + out);
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("is not empty (use --force"), std::string::npos) << o.output();
  EXPECT_EQ(run("replay " + small_args() + "--out " + out + " --force").status, 0);
}

TEST_F(CliReplayTest, TruncatedTraceNamesTheFile) {
  const std::string cut = (dir_ / "cut.kvtrace").string();
  fs::copy_file(trace_, cut);
  fs::resize_file(cut, fs::file_size(cut) - 7);
  kv::test::KvsimRun o = run("replay --trace " + cut + " --model tiny --num-blocks 64 --out " + (dir_ / "r").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find(cut), std::string::npos) << o.output();
}

TEST_F(CliReplayTest, SpeculativeDecodingPrintsItsFiguresAndRefusesBadValues) {
  const std::string spec = "--speculative-method eagle --num-speculative-tokens 3 ";
  kv::test::KvsimRun o =
      run("replay " + small_args() + spec + "--acceptance-rates 0.8,0.6,0.4 --out " + (dir_ / "s").string());
  ASSERT_EQ(o.status, 0) << o.output();
  EXPECT_NE(o.output().find("mean acceptance length"), std::string::npos) << o.output();
  EXPECT_NE(o.output().find("no violations"), std::string::npos) << o.output();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {spec + "--acceptance-rates 1.5,0.6,0.4", "--acceptance-rates"},
      {"--speculative-method eagle --num-speculative-tokens -1", "--num-speculative-tokens"},
      {spec + "--acceptance-rates 0.8,0.6", "--acceptance-rates"},
  };
  for (const auto& [args, option] : bad) {
    kv::test::KvsimRun b = run("replay " + small_args() + args + " --out " + (dir_ / "b").string());
    EXPECT_EQ(b.status, 2) << args << "\n" << b.output();
    EXPECT_NE(b.output().find(option), std::string::npos) << b.output();
  }
}

// --dump-cache on a Mamba model: Qwen3-Next's three Mamba groups (0-2, align mode) and its
// full-attention group (3) each list their cached blocks as "HASH GROUP"; the three Mamba
// groups have one layout, so they cache the same states.
TEST_F(CliReplayTest, DumpCacheOfAMambaModelListsEveryGroup) {
  const fs::path dump = dir_ / "cache.txt";
  kv::test::KvsimRun o =
      run("replay --trace " + std::string(KVSIM_SOURCE_DIR) +
          "/traces/data/sharegpt_sample.kvtrace --model qwen3-next-80b-a3b --num-blocks 400 --limit 60 "
          "--dump-cache " +
          dump.string() + " --out " + (dir_ / "run").string());
  ASSERT_EQ(o.status, 0) << o.output();
  EXPECT_NE(o.output().find("group 0 mamba(align, 1097728 B)"), std::string::npos) << o.output();
  std::ifstream in(dump);
  std::vector<std::vector<std::string>> hashes(4);
  for (std::string line; std::getline(in, line);) {
    ASSERT_EQ(line.size(), 66u) << line;
    ASSERT_EQ(line[64], ' ') << line;
    const int group = line[65] - '0';
    ASSERT_TRUE(group >= 0 && group < 4) << line;
    hashes[static_cast<std::size_t>(group)].push_back(line.substr(0, 64));
  }
  EXPECT_EQ(hashes[0].size(), 52u);
  EXPECT_EQ(hashes[1], hashes[0]);
  EXPECT_EQ(hashes[2], hashes[0]);
  EXPECT_EQ(hashes[3].size(), 67u);
}

TEST_F(CliReplayTest, BadOptionsAreNamed) {
  kv::test::KvsimRun o = run("replay " + small_args() + "--policy lifo --out " + (dir_ / "r").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("--policy: must be one of fcfs, priority, got 'lifo'"), std::string::npos) << o.output();
  o = run("replay " + small_args() + "--no-such-option 1");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("no-such-option"), std::string::npos) << o.output();
  o = run("replay " + small_args() + "--max-num-batched-tokens abc");
  EXPECT_EQ(o.status, 2);
  o = run("replay --trace " + (dir_ / "missing.kvtrace").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("missing.kvtrace"), std::string::npos) << o.output();
  EXPECT_FALSE(fs::exists(dir_ / "r"));  // nothing written on bad input
}

TEST_F(CliReplayTest, EvictionPoliciesRunOnOneGroupAndOnHybridModels) {
  for (const char* policy : {"lfu", "slru", "leaf-lru", "priority"}) {
    // 11 usable blocks for prompts of 5 to 6 blocks: every policy has to evict.
    kv::test::KvsimRun o =
        run("replay --trace " + trace_ + " --model tiny --num-blocks 12 --verify full --eviction-policy " + policy +
            " --progress off --out " + (dir_ / policy).string());
    EXPECT_EQ(o.status, 0) << policy << ": " << o.output();
    // gpt-oss-20b: sliding-window and full-attention groups over one pool of 15 usable blocks.
    o = run("replay --trace " + trace_ + " --model gpt-oss-20b --num-blocks 16 --verify full --eviction-policy " +
            policy + " --progress off --out " + (dir_ / (std::string("h-") + policy)).string());
    EXPECT_EQ(o.status, 0) << policy << ": " << o.output();
    EXPECT_NE(o.output().find("verification              no violations"), std::string::npos) << o.output();
    EXPECT_EQ(o.output().find("evictions / preemptions   0 /"), std::string::npos) << o.output();
  }
  kv::test::KvsimRun bad = run("replay " + small_args() + "--eviction-policy mru --out " + (dir_ / "r").string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output().find("--eviction-policy: must be one of lru, lfu, slru, leaf-lru, priority, got 'mru'"),
            std::string::npos)
      << bad.output();
  EXPECT_FALSE(fs::exists(dir_ / "r"));
}

TEST_F(CliReplayTest, APoolTooSmallForEveryRequestIsAnError) {
  // 80-token prompts need 5 blocks of 16; a pool of 3 usable blocks can hold none of them.
  kv::test::KvsimRun o =
      run("replay --trace " + trace_ + " --model tiny --num-blocks 4 --out " + (dir_ / "r").string());
  EXPECT_EQ(o.status, 2) << o.output();
  EXPECT_NE(o.output().find("every request"), std::string::npos) << o.output();
  std::ifstream req(dir_ / "r" / "requests.csv");
  std::string all((std::istreambuf_iterator<char>(req)), {});
  EXPECT_NE(all.find("needs 6 KV blocks, the pool has 3"), std::string::npos) << all;
}

TEST_F(CliReplayTest, PromptsLongerThanMaxModelLenAreRejectedPerRequest) {
  kv::test::KvsimRun o = run("replay " + small_args() + "--max-model-len 70 --out " + (dir_ / "r").string());
  EXPECT_EQ(o.status, 2) << o.output();  // all 6 prompts are 80 tokens
  std::ifstream req(dir_ / "r" / "requests.csv");
  std::string all((std::istreambuf_iterator<char>(req)), {});
  EXPECT_NE(all.find("prompt of 80 tokens exceeds max_model_len 70"), std::string::npos) << all;
}

// --inject-fault KIND@STEP[:REQUEST]: each of the simulator's four faults, in both verify modes,
// ends the run with exit status 1, the fault as planted (step, request, slot) and the
// verifier's first violation (step, request, position, slot).
std::string line_with(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

TEST_F(CliReplayTest, EveryInjectedFaultIsCaughtInBothVerifyModes) {
  for (const std::string kind : {"overwrite", "drop", "misdirect", "swap"}) {
    for (const std::string mode : {"fast", "full"}) {
      const std::string where = kind + " --verify " + mode;
      kv::test::KvsimRun o = run("replay --trace " + trace_ + " --model tiny --num-blocks 64 --progress off --verify " +
                                 mode + " --inject-fault " + kind + "@2 --out " + (dir_ / (kind + mode)).string());
      EXPECT_EQ(o.status, 1) << where << "\n" << o.output();
      const std::string planted = line_with(o.output(), "injected fault: " + kind + " at step 2: request ");
      EXPECT_NE(planted.find(" slot"), std::string::npos) << where << "\n" << o.output();  // slot N, or slots N and M
      const std::string caught = line_with(o.output(), "KV verification failed: step ");
      EXPECT_NE(caught.find(": request "), std::string::npos) << where << "\n" << o.output();
      EXPECT_NE(caught.find("slot "), std::string::npos) << where << "\n" << o.output();
    }
  }
}

TEST_F(CliReplayTest, InjectedFaultOnANamedRequest) {
  // `gen prefix` names requests pN-rK; the fault waits for the first step >= 3 that runs p0-r1.
  kv::test::KvsimRun o =
      run("replay " + small_args() + "--progress off --inject-fault drop@3:p0-r1 --out " + (dir_ / "r").string());
  EXPECT_EQ(o.status, 1) << o.output();
  const std::string planted = line_with(o.output(), "injected fault: drop at step ");
  EXPECT_NE(planted.find(": request p0-r1, position "), std::string::npos) << o.output();
  EXPECT_NE(planted.find(", slot "), std::string::npos) << o.output();
  const std::string caught = line_with(o.output(), "KV verification failed: step ");
  EXPECT_NE(caught.find(": request p0-r1: position "), std::string::npos) << o.output();
}

TEST_F(CliReplayTest, BadOrUnfiredFaultsAreErrors) {
  kv::test::KvsimRun o = run("replay " + small_args() + "--inject-fault flip@2 --out " + (dir_ / "a").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("--inject-fault: expected KIND@STEP[:REQUEST]"), std::string::npos) << o.output();
  o = run("replay " + small_args() + "--inject-fault drop@x --out " + (dir_ / "b").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("--inject-fault: step 'x'"), std::string::npos) << o.output();
  o = run("replay --trace " + trace_ + " --model tiny --verify off --inject-fault drop@2 --out " +
          (dir_ / "c").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("--inject-fault: needs --verify fast or full"), std::string::npos) << o.output();
  o = run("replay " + small_args() + "--progress off --inject-fault drop@1:nobody --out " + (dir_ / "d").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("--inject-fault drop@1:nobody never fired"), std::string::npos) << o.output();
}

// Found by fuzzing: the other commands took inf, nan, 1e30 and -1 for rates, counts and limits
// (a wrapped --seed, a capacity search or a generator that never ended). Each bad value is one
// line naming the option and exit status 2, before any work: no output file is written.
TEST_F(CliReplayTest, EveryCommandRejectsAbsurdOptionValuesBeforeWorking) {
  const std::string out = (dir_ / "out.kvtrace").string();
  const std::string mooncake = (dir_ / "m.jsonl").string();
  std::ofstream(mooncake) << "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n";
  const std::pair<std::string, std::string> cases[] = {
      {"gen sharegpt --rate inf -o " + out, "--rate:"},
      {"gen sharegpt --rate nan -o " + out, "--rate:"},
      {"gen sharegpt --mean-turns 1e30 -o " + out, "--mean-turns:"},
      {"gen sharegpt --num-requests 1000000000000 -o " + out, "--num-requests:"},
      {"gen sharegpt --seed -1 -o " + out, "--seed:"},
      {"gen prefix --prefix-rate inf -o " + out, "--prefix-rate:"},
      {"gen prefix --num-prompts 100000000 --repeat 100 -o " + out, "--num-prompts:"},
      {"convert --from mooncake " + mooncake + " --rate inf -o " + out, "--rate:"},
      {"convert --from mooncake " + mooncake + " --seed -1 -o " + out, "--seed:"},
      {"convert --from mooncake " + mooncake + " --max-requests -1 -o " + out, "--max-requests:"},
      {"capacity --trace " + trace_ + " --slo ttft-p99=500 --start-rate inf", "--start-rate:"},
      {"capacity --trace " + trace_ + " --slo ttft-p99=500 --max-probes 2000000000", "--max-probes:"},
      {"capacity --trace " + trace_ + " --slo ttft-p99=500 --precision -1", "--precision:"},
      {"capacity --trace " + trace_ + " --slo ttft-p99=500 --burstiness 1e30", "--burstiness:"},
      {"sweep --trace " + trace_ + " --capacity 1e300 --out " + (dir_ / "s").string(), "capacity '1e300'"},
      {"sweep --trace " + trace_ + " --capacity 1e4 --block-size -16 --out " + (dir_ / "s").string(), "--block-size:"},
      {"sweep --trace " + trace_ + " --capacity 1e4 --jobs 100000 --out " + (dir_ / "s").string(), "--jobs:"},
      {"sweep --trace " + trace_ + " --vary request-rate=1,inf,1e30 --out " + (dir_ / "s").string(), "--request-rate:"},
      {"replay " + small_args() + "--rate-scale 1e-30 --out " + (dir_ / "r").string(), "--rate-scale:"},
      {"replay " + small_args() + "--request-rate -1 --out " + (dir_ / "r").string(), "--request-rate:"},
      {"replay " + small_args() + "--kv-cache-tokens nan --out " + (dir_ / "r").string(), "--kv-cache-tokens:"},
  };
  for (const auto& [args, option] : cases) {
    const kv::test::KvsimRun o = run(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.output();
    EXPECT_NE(o.output().find(option), std::string::npos) << args << "\n" << o.output();
    EXPECT_FALSE(fs::exists(out)) << args;
    EXPECT_FALSE(fs::exists(dir_ / "r")) << args;
  }
}

// `kvsim fleet`: the fleet's folder, one folder per replica, the routes as its decision log.
TEST_F(CliReplayTest, FleetWritesTheFleetAndEachReplica) {
  const std::string sp = (dir_ / "sp.kvtrace").string();
  ASSERT_EQ(run("gen shared-prefix -o " + sp +
                " --groups 4 --users 2 --prefix-len 64 --question-len 32 "
                "--output-len 4 --num-requests 40 --rate 50")
                .status,
            0);
  const std::string out = (dir_ / "fleet").string();
  kv::test::KvsimRun o = run("fleet --trace " + sp + " --model tiny --num-blocks 64 --replicas 3 --router dynamo " +
                             "--router-params overlap_score_weight=2 --event-delay-ms 5 --out " + out);
  ASSERT_EQ(o.status, 0) << o.output();
  EXPECT_NE(o.output().find("requests done / rejected  40 / 0"), std::string::npos) << o.output();
  EXPECT_NE(o.output().find("load imbalance"), std::string::npos) << o.output();
  for (const char* f : {"summary.json", "requests.csv", "decisions.log", "replicas.csv", "result.json",
                        "replica-0/summary.json", "replica-2/decisions.log", "replica-1/steps.csv"}) {
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  }
  std::ifstream routes(fs::path(out) / "decisions.log");
  std::string first;
  std::getline(routes, first);
  EXPECT_EQ(first.rfind("route g", 0), 0u) << first;
}

TEST_F(CliReplayTest, FleetRefusesBadOptionsByName) {
  const std::string base = "fleet " + small_args() + "--out " + (dir_ / "f").string() + " ";
  kv::test::KvsimRun o = run(base + "--router-params overlap_score_weight");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("--router-params: each parameter is NAME=VALUE"), std::string::npos) << o.output();
  o = run(base + "--router dynamo --router-params overlap_score_weight=-1");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("overlap_score_weight"), std::string::npos) << o.output();
  o = run(base + "--replicas 0");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("--replicas"), std::string::npos) << o.output();
  o = run(base + "--event-loss 1");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("event-loss"), std::string::npos) << o.output();
  // kvsim replay runs one engine: the fleet's options are not its own.
  o = run("replay " + small_args() + "--out " + (dir_ / "r").string() + " --replicas 2");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.output().find("replicas"), std::string::npos) << o.output();
}

}  // namespace

// The overload warning is for an open-loop arrival process. An offline batch (every request at
// t = 0) has a later TTFT for each later place in a queue that only drains: no warning.
TEST_F(CliReplayTest, AnOfflineBatchIsNotReportedOverloaded) {
  const std::string batch = (dir_ / "batch.kvtrace").string();
  kv::test::KvsimRun g =
      run("gen prefix --num-prompts 100 --prefix-len 512 --suffix-len 512 --repeat 2 --output-len 64 --seed 3 "
          "--prefix-rate 0 -o " +
          batch);
  ASSERT_EQ(g.status, 0) << g.output();
  const std::string args = "replay --trace " + batch + " --model llama3-8b --kv-cache-tokens 20000 --out ";
  kv::test::KvsimRun offline = run(args + (dir_ / "offline").string());
  ASSERT_EQ(offline.status, 0) << offline.output();
  EXPECT_EQ(offline.err.find("overloaded"), std::string::npos) << offline.err;
  kv::test::KvsimRun open = run(args + (dir_ / "open").string() + " --request-rate 1000");
  ASSERT_EQ(open.status, 0) << open.output();
  EXPECT_NE(open.err.find("overloaded: median TTFT of the last fifth"), std::string::npos) << open.err;
  EXPECT_NE(open.err.find("the queue grew for the whole run"), std::string::npos) << open.err;
}
