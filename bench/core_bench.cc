// core_bench: the allocator core's hot path on the Mooncake conversation trace.
//
// Each of the trace's 12,031 requests, in arrival order, becomes a Request whose prompt is its
// hash_ids expanded to 512 tokens each (kv::trace::expand_block_tokens; the last block cut to
// input_length). One request at a time: create the Request (this hashes every full 16-token
// block of the prompt), lookup, allocate the whole prompt, free. The pool holds 3M tokens
// (187,500 blocks of 16), so the cache fills up and evicts. Measured: request creation with
// hashing, lookup, allocate, free and the Request's destruction; not measured: reading the
// JSONL (done once, before any timing) and expanding ids to tokens (done per request, outside
// the timed region, with manual timing in thread CPU time).
//
// Counters: prompt_tokens_per_s, hit_rate (hit tokens / queried tokens), block_bytes
// (sizeof(Block): all the per-block state the pool keeps outside the hash map besides the free
// queue's ring of block offsets), table_bytes_per_held_block (a live request's block-table entry) and
// index_bytes_per_block (the prefix-cache hash map, allocated once for the whole pool).
// A summary follows the benchmark table: each benchmark's median over its repetitions
// (--benchmark_repetitions; the range beside it), and the cost of the second KV-cache group as
// the ratio of the two medians of time per token, one at a time, in lanes and manager alone.
//
// BM_MooncakeConversationHybrid runs the same loop on the KvCacheManager over
// gpt-oss-20b's KV-cache groups (sliding window 128 and full attention, one block table each,
// one shared pool of twice the blocks, so both hold the same tokens per group); the summary
// prints its throughput next to the one-group manager's (sha256_cbor for both).
// BM_MooncakeHashingAlone times the requests' creation alone (hashing, no manager): the floor
// the manager's benchmarks stand on. BM_MooncakeManagerAlone is the other half: every prompt
// hashed before the timing starts, then only the manager's calls timed, with one group and with
// gpt-oss-20b's two.
// Each of the three sha256_cbor benchmarks runs twice: one request at a time (its plain name),
// and with the prompts hashed up to kSha256MaxLanes (16) at a time, their chains together
// ("/16_lanes"; model/util/sha256.h: SHA-NI four at a time or AVX-512 sixteen at a time,
// whichever the CPU runs faster), each request run once it and every earlier one are hashed.
// The manager's work and its order are the same. The summary names the lanes' path.
//
//   scripts/bench-core                                  # release build, then this benchmark
//   build/release/bench/core_bench --trace=PATH --benchmark_repetitions=3
//   build/release/bench/core_bench --requests=500       # a prefix of the trace (profiling)
//   build/release/bench/core_bench --window=32          # lanes hash at most 32 requests ahead
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/catalog/model_shape.h"
#include "model/kv_cache_manager.h"
#include "model/util/parse_number.h"
#include "model/util/sha256.h"
#include "traces/block_tokens.h"

namespace {

constexpr int kBlockSize = 16;
constexpr std::int64_t kPoolTokens = 3'000'000;
constexpr int kPoolBlocks = static_cast<int>(kPoolTokens / kBlockSize);  // 187,500

std::string g_trace_path = "traces/data/mooncake_conversation_trace.jsonl";
std::size_t g_max_requests = 0;  // 0 = the whole trace
std::size_t g_window = 128;      // --window=N: requests hashed ahead of the oldest not yet run

struct TraceRequest {
  std::int64_t input_length = 0;
  std::vector<std::uint64_t> hash_ids;
};

// Parsed once, on first use; exits with a message naming the file and line on bad input.
const std::vector<TraceRequest>& trace() {
  static const std::vector<TraceRequest> requests = [] {
    std::vector<TraceRequest> out;
    simdjson::padded_string json;
    if (simdjson::padded_string::load(g_trace_path).get(json) != simdjson::SUCCESS) {
      std::fprintf(stderr,
                   "core_bench: cannot read '%s' (run from the repository root or pass "
                   "--trace=PATH)\n",
                   g_trace_path.c_str());
      std::exit(2);
    }
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document_stream docs;
    if (parser.iterate_many(json).get(docs) != simdjson::SUCCESS) {
      std::fprintf(stderr, "core_bench: '%s' is not JSON lines\n", g_trace_path.c_str());
      std::exit(2);
    }
    std::size_t line = 0;
    for (auto doc : docs) {
      ++line;
      TraceRequest r;
      simdjson::ondemand::array ids;
      if (doc["input_length"].get(r.input_length) != simdjson::SUCCESS ||
          doc["hash_ids"].get_array().get(ids) != simdjson::SUCCESS) {
        std::fprintf(stderr, "core_bench: %s: line %zu: needs input_length and hash_ids\n", g_trace_path.c_str(), line);
        std::exit(2);
      }
      for (auto id : ids) {
        std::uint64_t v = 0;
        if (id.get(v) != simdjson::SUCCESS) {
          std::fprintf(stderr, "core_bench: %s: line %zu: bad hash id\n", g_trace_path.c_str(), line);
          std::exit(2);
        }
        r.hash_ids.push_back(v);
      }
      const auto expected = static_cast<std::size_t>((r.input_length + kv::trace::kMooncakeBlockTokens - 1) /
                                                     kv::trace::kMooncakeBlockTokens);
      if (r.input_length <= 0 || r.hash_ids.size() != expected) {
        std::fprintf(stderr, "core_bench: %s: line %zu: %zu hash ids for %lld tokens\n", g_trace_path.c_str(), line,
                     r.hash_ids.size(), static_cast<long long>(r.input_length));
        std::exit(2);
      }
      out.push_back(std::move(r));
      if (g_max_requests != 0 && out.size() == g_max_requests) break;
    }
    return out;
  }();
  return requests;
}

void expand_prompt(const TraceRequest& r, std::vector<kv::TokenId>& prompt) {
  prompt.clear();
  prompt.reserve(static_cast<std::size_t>(r.input_length));
  std::int64_t left = r.input_length;
  for (std::uint64_t id : r.hash_ids) {
    const int n = static_cast<int>(std::min<std::int64_t>(left, kv::trace::kMooncakeBlockTokens));
    kv::trace::expand_block_tokens(id, n, prompt);
    left -= n;
  }
}

std::string lanes_suffix(std::size_t lanes) { return lanes == 1 ? "" : ", " + std::to_string(lanes) + " lanes"; }

struct Summary {
  std::vector<double> tokens_per_s;  // one figure per repetition (--benchmark_repetitions)
  double hit_rate = 0;
  double index_bytes_per_block = 0;
  std::int64_t failed_allocations = 0;
  bool manager = true;  // false: hashing alone, no hit rate or allocations
};
std::map<std::string, Summary> g_summary;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Each benchmark's line in the summary.
std::string one_group_key(kv::HashAlgo algo, std::size_t lanes) {
  return std::string("one group, ") + kv::to_string(algo) + lanes_suffix(lanes);
}
std::string hybrid_key(std::size_t lanes) { return "hybrid gpt-oss-20b groups, sha256_cbor" + lanes_suffix(lanes); }
std::string hashing_key(std::size_t lanes) { return "hashing alone (no manager), sha256_cbor" + lanes_suffix(lanes); }
std::string manager_alone_key(bool hybrid) {
  return hybrid ? "manager alone, gpt-oss-20b groups (hashed before)" : "manager alone, one group (hashed before)";
}
std::map<std::string, std::string> g_key_of_benchmark;  // registered name -> summary line

// The pairs whose ratio the summary prints: the cost of gpt-oss-20b's second KV-cache group.
struct GroupPair {
  const char* what;
  std::string one, two;
};
std::vector<GroupPair> group_pairs() {
  return {{"one at a time", one_group_key(kv::HashAlgo::kSha256Cbor, 1), hybrid_key(1)},
          {"in lanes", one_group_key(kv::HashAlgo::kSha256Cbor, kv::kSha256MaxLanes), hybrid_key(kv::kSha256MaxLanes)},
          {"manager alone", manager_alone_key(false), manager_alone_key(true)}};
}

// The display reporter that --benchmark_format chose, which also hands the summary each
// repetition's prompt_tokens_per_s as reported (not the library's trial runs that fix the
// iteration count). Under --benchmark_report_aggregates_only only the aggregates come, and the
// summary takes their median.
class SummaryReporter final : public benchmark::BenchmarkReporter {
 public:
  SummaryReporter() : display_(benchmark::CreateDefaultDisplayReporter()) {}
  bool ReportContext(const Context& context) override { return display_->ReportContext(context); }
  void Finalize() override { display_->Finalize(); }
  void ReportRuns(const std::vector<Run>& runs) override {
    display_->ReportRuns(runs);
    for (const Run& run : runs) record(run);
  }

 private:
  static void record(const Run& run) {
    const auto key = g_key_of_benchmark.find(run.run_name.function_name);
    const auto figure = run.counters.find("prompt_tokens_per_s");
    if (run.error_occurred || key == g_key_of_benchmark.end() || figure == run.counters.end()) return;
    Summary& s = g_summary[key->second];
    const bool median_alone = run.aggregate_name == "median" && s.tokens_per_s.empty();
    if (run.run_type == Run::RT_Iteration || median_alone) s.tokens_per_s.push_back(figure->second.value);
  }
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
};

// The timed region is measured in this thread's CPU time: the machines this runs on are shared,
// and wall time would charge other processes' work to the core.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// One request at a time: its prompt expanded (not timed), then `body` run on a Request built
// from it, timed from its construction (which hashes the prompt) to its destruction.
template <typename Body>
double one_at_a_time(const std::vector<TraceRequest>& requests, const kv::BlockHasher& hasher, Body& body) {
  std::vector<kv::TokenId> prompt;
  double seconds = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    expand_prompt(requests[i], prompt);
    kv::RequestId id = std::to_string(i);
    const double start = thread_cpu_seconds();
    {
      kv::Request request(std::move(id), std::move(prompt), {}, &hasher, kBlockSize);
      body(request);
    }
    seconds += thread_cpu_seconds() - start;
    prompt = {};
  }
  return seconds;
}

// The prompts hashed in lanes by one BlockHasher::extend_stream over the pass, as the prompt
// preparer hashes the requests it is given: a lane takes the next request as soon as one frees,
// and each request's Request is built from its hashes and run once it and every earlier one
// are hashed, so `body` sees them in arrival order. Prompt expansion (in next()) is not timed.
template <typename Body>
class LanedPass final : public kv::HashJobQueue {
 public:
  LanedPass(const std::vector<TraceRequest>& requests, const kv::BlockHasher& hasher, Body& body)
      : requests_(requests), hasher_(hasher), body_(body) {}

  double run() {
    const double start = thread_cpu_seconds();
    hasher_.extend_stream(*this);
    if (!window_.empty()) std::abort();  // every job given was done
    return thread_cpu_seconds() - start - untimed_;
  }

  bool next(kv::HashJob& job) override {
    // At most g_window requests hashed ahead of the oldest one not yet run. With 32, a long
    // prompt at the head left most lanes idle; with the lanes' tokens prefetched, the colder
    // prompts of a wider window no longer cost that back (bench/README.md, "A wider window").
    if (next_ == requests_.size() || window_.size() >= g_window) return false;
    const double start = thread_cpu_seconds();
    Slot& slot = window_.emplace_back();
    expand_prompt(requests_[next_], slot.prompt);
    slot.id = std::to_string(next_++);
    untimed_ += thread_cpu_seconds() - start;
    job = kv::HashJob{&slot.hashes, slot.prompt, &no_extras_, kBlockSize, &slot};
    return true;
  }

  void done(const kv::HashJob& job) override {
    static_cast<Slot*>(const_cast<void*>(job.tag))->hashed = true;
    while (!window_.empty() && window_.front().hashed) {
      Slot& slot = window_.front();
      {
        kv::Request request(std::move(slot.id), std::move(slot.prompt), {}, &hasher_, kBlockSize,
                            std::move(slot.hashes));
        body_(request);
      }
      window_.pop_front();
    }
  }

 private:
  struct Slot {
    kv::RequestId id;
    std::vector<kv::TokenId> prompt;
    std::vector<kv::BlockHash> hashes;
    bool hashed = false;
  };
  const std::vector<TraceRequest>& requests_;
  const kv::BlockHasher& hasher_;
  Body& body_;
  const kv::HashExtras no_extras_;
  std::deque<Slot> window_;  // requests given to the hasher and not yet run, oldest first
  std::size_t next_ = 0;
  double untimed_ = 0;
};

// One pass over the trace, one request at a time (lanes == 1) or hashed in lanes. Returns the
// timed seconds (thread CPU time); adds the prompt tokens to *tokens.
template <typename Body>
double timed_pass(const std::vector<TraceRequest>& requests, const kv::BlockHasher& hasher, std::size_t lanes,
                  std::int64_t* tokens, Body&& body) {
  for (const TraceRequest& r : requests) *tokens += r.input_length;
  if (lanes == 1) return one_at_a_time(requests, hasher, body);
  return LanedPass<Body>(requests, hasher, body).run();
}

// What one request costs the manager: lookup, allocate the whole prompt, free. Returns the hit
// tokens; counts an allocation that failed.
std::int64_t lookup_allocate_free(kv::KvCacheManager& manager, kv::Request& request, std::int64_t* failed) {
  const kv::CacheHit hit = manager.get_computed_blocks(request);
  const auto fresh = manager.allocate_slots(request, request.num_tokens() - hit.num_tokens, hit);
  if (fresh) {
    manager.free(request);
  } else {
    ++*failed;
  }
  benchmark::DoNotOptimize(fresh);
  return hit.num_tokens;
}

void BM_MooncakeConversation(benchmark::State& state, kv::HashAlgo algo, std::size_t lanes) {
  const std::vector<TraceRequest>& requests = trace();
  const kv::BlockHasher hasher(algo, "0");
  double timed_seconds = 0;
  std::int64_t tokens = 0, failed = 0;
  double hit_rate = 0, index_bytes = 0;

  for (auto _ : state) {
    kv::KvCacheConfig config;
    config.num_blocks = kPoolBlocks;
    config.block_size = kBlockSize;
    kv::KvCacheManager manager(config);
    const double seconds = timed_pass(requests, hasher, lanes, &tokens,
                                      [&](kv::Request& request) { lookup_allocate_free(manager, request, &failed); });
    state.SetIterationTime(seconds);
    timed_seconds += seconds;

    const kv::PrefixCacheStats& stats = manager.stats();
    hit_rate = static_cast<double>(stats.hits) / static_cast<double>(stats.queries);
    index_bytes = static_cast<double>(manager.pool().index_memory_bytes()) / kPoolBlocks;
  }

  state.counters["prompt_tokens_per_s"] = static_cast<double>(tokens) / timed_seconds;
  state.counters["hit_rate"] = hit_rate;
  state.counters["block_bytes"] = static_cast<double>(sizeof(kv::Block));
  state.counters["table_bytes_per_held_block"] = static_cast<double>(sizeof(kv::BlockId));
  state.counters["index_bytes_per_block"] = index_bytes;
  state.counters["failed_allocs"] = static_cast<double>(failed);
  Summary& s = g_summary[one_group_key(algo, lanes)];
  s.hit_rate = hit_rate;
  s.index_bytes_per_block = index_bytes;
  s.failed_allocations = failed;
}

// gpt-oss-20b's KV-cache groups (sliding window 128, full attention) over one pool of twice
// the blocks, so that each group holds the same tokens as the one-group pool. False, with the
// benchmark marked as skipped, if the model's groups cannot be built.
bool hybrid_config(benchmark::State& state, kv::KvCacheConfig* config) {
  auto groups = kv::find_model_shape("gpt-oss-20b")->kv_cache_groups(kBlockSize);
  if (!groups.ok()) {
    state.SkipWithError(groups.status().message().c_str());
    return false;
  }
  config->block_size = kBlockSize;
  config->groups = *groups;
  config->num_blocks = kPoolBlocks * static_cast<int>(groups->size());
  config->free_order = kv::FreeOrder::kClassic;
  return true;
}

// The hybrid core: gpt-oss-20b's groups over one pool; lookup, allocate, free per request.
void BM_MooncakeConversationHybrid(benchmark::State& state, std::size_t lanes) {
  const std::vector<TraceRequest>& requests = trace();
  const kv::BlockHasher hasher(kv::HashAlgo::kSha256Cbor, "0");
  kv::KvCacheConfig config;
  if (!hybrid_config(state, &config)) return;
  double timed_seconds = 0;
  std::int64_t tokens = 0, failed = 0, hits = 0, queries = 0;
  for (auto _ : state) {
    kv::KvCacheManager manager(config);
    hits = queries = 0;
    const double seconds = timed_pass(requests, hasher, lanes, &tokens, [&](kv::Request& request) {
      hits += lookup_allocate_free(manager, request, &failed);
      queries += request.num_tokens();
    });
    state.SetIterationTime(seconds);
    timed_seconds += seconds;
  }
  state.counters["prompt_tokens_per_s"] = static_cast<double>(tokens) / timed_seconds;
  state.counters["hit_rate"] = static_cast<double>(hits) / static_cast<double>(queries);
  state.counters["failed_allocs"] = static_cast<double>(failed);
  Summary& s = g_summary[hybrid_key(lanes)];
  s.hit_rate = static_cast<double>(hits) / static_cast<double>(queries);
  s.failed_allocations = failed;
}

// The floor under both: the same requests created and destroyed (every full block hashed, as
// the manager's benchmarks do) with no manager. What the one-group benchmark spends beyond
// this is the pool's and the index's work.
void BM_MooncakeHashingAlone(benchmark::State& state, std::size_t lanes) {
  const std::vector<TraceRequest>& requests = trace();
  const kv::BlockHasher hasher(kv::HashAlgo::kSha256Cbor, "0");
  double timed_seconds = 0;
  std::int64_t tokens = 0;
  for (auto _ : state) {
    const double seconds = timed_pass(requests, hasher, lanes, &tokens, [](kv::Request& request) {
      benchmark::DoNotOptimize(request.block_hashes().data());
    });
    state.SetIterationTime(seconds);
    timed_seconds += seconds;
  }
  state.counters["prompt_tokens_per_s"] = static_cast<double>(tokens) / timed_seconds;
  Summary& s = g_summary[hashing_key(lanes)];
  s.manager = false;
}

// The manager's work alone: every prompt hashed once before the timing starts, then the same
// loop as the benchmarks above (lookup, allocate, free per request), timed around the manager's
// calls only. One group (llama's full attention) or two (gpt-oss-20b's, as the hybrid above);
// the ratio of their times per block is the cost of the second group, with no hashing to hide
// or inflate it.
void BM_MooncakeManagerAlone(benchmark::State& state, bool hybrid) {
  const std::vector<TraceRequest>& requests = trace();
  const kv::BlockHasher hasher(kv::HashAlgo::kSha256Cbor, "0");
  kv::KvCacheConfig config;
  config.block_size = kBlockSize;
  config.num_blocks = kPoolBlocks;
  if (hybrid && !hybrid_config(state, &config)) return;
  std::vector<std::vector<kv::BlockHash>> hashes(requests.size());
  std::vector<kv::TokenId> prompt;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    expand_prompt(requests[i], prompt);
    kv::Request request(std::to_string(i), std::move(prompt), {}, &hasher, kBlockSize);
    hashes[i] = request.block_hashes();
    prompt = {};
  }
  double timed_seconds = 0;
  std::int64_t tokens = 0, failed = 0, hits = 0, queries = 0;
  for (auto _ : state) {
    kv::KvCacheManager manager(config);
    double seconds = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      expand_prompt(requests[i], prompt);
      kv::Request request(std::to_string(i), std::move(prompt), {}, &hasher, kBlockSize, hashes[i]);
      const double start = thread_cpu_seconds();
      hits += lookup_allocate_free(manager, request, &failed);
      seconds += thread_cpu_seconds() - start;
      queries += request.num_tokens();
      tokens += requests[i].input_length;
      prompt = {};
    }
    state.SetIterationTime(seconds);
    timed_seconds += seconds;
  }
  state.counters["prompt_tokens_per_s"] = static_cast<double>(tokens) / timed_seconds;
  state.counters["hit_rate"] = static_cast<double>(hits) / static_cast<double>(queries);
  state.counters["failed_allocs"] = static_cast<double>(failed);
  Summary& s = g_summary[manager_alone_key(hybrid)];
  s.hit_rate = static_cast<double>(hits) / static_cast<double>(queries);
  s.failed_allocations = failed;
}

// Each benchmark one request at a time (its plain name), then with kSha256MaxLanes requests'
// prompts hashed together ("/16_lanes"), side by side in one run.
void register_benchmarks() {
  // Registers `name` (timed manually, at least 2 s a repetition) under its summary line `key`.
  const auto add = [](const std::string& name, std::string key, auto&& fn, auto... args) {
    benchmark::RegisterBenchmark(name.c_str(), fn, args...)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0);
    g_key_of_benchmark[name] = std::move(key);
  };
  for (const std::size_t lanes : {std::size_t{1}, kv::kSha256MaxLanes}) {
    const std::string tail = lanes == 1 ? "" : "/" + std::to_string(lanes) + "_lanes";
    add("BM_MooncakeHashingAlone" + tail, hashing_key(lanes), BM_MooncakeHashingAlone, lanes);
    add("BM_MooncakeConversationHybrid" + tail, hybrid_key(lanes), BM_MooncakeConversationHybrid, lanes);
    add("BM_MooncakeConversation/sha256_cbor" + tail, one_group_key(kv::HashAlgo::kSha256Cbor, lanes),
        BM_MooncakeConversation, kv::HashAlgo::kSha256Cbor, lanes);
  }
  add("BM_MooncakeManagerAlone/one_group", manager_alone_key(false), BM_MooncakeManagerAlone, false);
  add("BM_MooncakeManagerAlone/two_groups", manager_alone_key(true), BM_MooncakeManagerAlone, true);
  add("BM_MooncakeConversation/xxhash_cbor", one_group_key(kv::HashAlgo::kXxhashCbor, 1), BM_MooncakeConversation,
      kv::HashAlgo::kXxhashCbor, std::size_t{1});
}

void print_summary() {
  if (g_summary.empty()) return;
  const auto& requests = trace();
  std::int64_t tokens = 0;
  for (const auto& r : requests) tokens += r.input_length;
  std::printf(
      "\ncore_bench summary (one thread, timed in thread CPU time): %s, %zu requests, %lld prompt tokens, block size "
      "%d, "
      "pool %d blocks (%lld tokens)\n",
      g_trace_path.c_str(), requests.size(), static_cast<long long>(tokens), kBlockSize, kPoolBlocks,
      static_cast<long long>(kPoolTokens));
  const kv::Sha256LanesPlan& plan = kv::sha256_lanes_plan();
  std::printf("  sha256 in lanes: %s", plan.describe().c_str());
  if (plan.wide_ns_per_message > 0) {
    std::printf(" (measured at start: %.1f ns per two-block message narrow, %.1f wide)", plan.narrow_ns_per_message,
                plan.wide_ns_per_message);
  }
  std::printf("\n");
  for (const auto& [name, s] : g_summary) {
    if (s.tokens_per_s.empty()) continue;  // no run of it was reported
    std::printf("  %-40s %7.1fM prompt tokens/s", name.c_str(), median(s.tokens_per_s) / 1e6);
    if (s.tokens_per_s.size() > 1) {
      const auto [lo, hi] = std::minmax_element(s.tokens_per_s.begin(), s.tokens_per_s.end());
      std::printf(" (median of %zu repetitions, %.1f-%.1fM)", s.tokens_per_s.size(), *lo / 1e6, *hi / 1e6);
    }
    if (s.manager) {
      std::printf("  hit rate %.4f  failed allocations %lld", s.hit_rate, static_cast<long long>(s.failed_allocations));
    }
    std::printf("\n");
  }
  for (const GroupPair& pair : group_pairs()) {
    const auto one = g_summary.find(pair.one), two = g_summary.find(pair.two);
    if (one == g_summary.end() || two == g_summary.end() || one->second.tokens_per_s.empty() ||
        two->second.tokens_per_s.empty())
      continue;
    std::printf("  two groups / one group, time per token, %s: %.3f (ratio of the medians)\n", pair.what,
                median(one->second.tokens_per_s) / median(two->second.tokens_per_s));
  }
  std::printf(
      "  metadata per block: %zu bytes (sizeof(Block), free-queue slot included; "
      "nothing else per block outside the hash map)\n",
      sizeof(kv::Block));
  // Only the one-group benchmarks that hash report the index's size.
  const auto with_index = std::find_if(g_summary.begin(), g_summary.end(),
                                       [](const auto& entry) { return entry.second.index_bytes_per_block > 0; });
  if (with_index == g_summary.end()) return;
  std::printf(
      "  hash map: %.1f bytes per block (fixed, allocated with the pool); a live "
      "request's block table: %zu bytes per held block\n",
      with_index->second.index_bytes_per_block, sizeof(kv::BlockId));
}

// The count after a flag's `prefix` characters; exits naming the flag unless it is a whole
// number of at least `least`.
std::size_t count_flag(const char* arg, std::size_t prefix, std::uint64_t least) {
  const std::optional<std::uint64_t> v = kv::parse_uint64(arg + prefix);
  if (!v || *v < least) {
    std::fprintf(stderr, "core_bench: %s: expected a whole number of at least %llu\n", arg,
                 static_cast<unsigned long long>(least));
    std::exit(2);
  }
  return static_cast<std::size_t>(*v);
}

}  // namespace

int main(int argc, char** argv) {
  // Our own flag first; Google Benchmark rejects flags it does not know.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--trace=", 8) == 0) {
      g_trace_path = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--requests=", 11) == 0) {
      g_max_requests = count_flag(argv[i], 11, 0);
    } else if (std::strncmp(argv[i], "--window=", 9) == 0) {
      g_window = count_flag(argv[i], 9, 1);
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  register_benchmarks();
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  print_summary();
  return 0;
}
