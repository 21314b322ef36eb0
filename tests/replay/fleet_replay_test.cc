// FleetReplay (replay/fleet_replay.h): one replica is kvsim replay; same inputs, same bytes;
// KV-aware routers beat round-robin on the shared-prefix workload; stale events cost the
// event-driven router its hits; sessions stay on their replica; bad options are refused.
#include "replay/fleet_replay.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "replay/grid_sweep.h"
#include "replay/replay_builder.h"
#include "replay/sweep_run.h"
#include "sim/sim_device.h"
#include "traces/generators.h"
#include "traces/trace_io.h"

namespace kv::replay {
namespace {

namespace fs = std::filesystem;

const char* kShareGpt = "traces/data/sharegpt_sample.kvtrace";

// 16 groups of a 2048-token system prompt, 8 users each with a 256-token question; 1000
// requests at 30/s. Written once per test binary.
const std::string& shared_prefix_trace() {
  static const std::string path = [] {
    const fs::path p = fs::temp_directory_path() / ("kvsim-fleet-test-" + std::to_string(::getpid()) + ".kvtrace");
    trace::SharedPrefixGenOptions o;
    o.groups = 16;
    o.users = 8;
    o.prefix_len = 2048;
    o.question_len = 256;
    o.output_len = 64;
    o.num_requests = 1000;
    o.rate = 30;
    auto writer = trace::TraceWriter::create(p.string(), trace::shared_prefix_gen_header(o), true);
    KV_CHECK(writer.ok(), writer.status().message());
    KV_CHECK(trace::generate_shared_prefix(o, *writer).ok());
    KV_CHECK(writer->close().ok());
    return p.string();
  }();
  return path;
}

ReplayConfig small_pool_config() {
  ReplayConfig c;
  c.device.kv_cache_tokens = 40000;  // a replica holds a few groups' prompts, not all 16
  c.run.replay.keep_decision_text = false;
  return c;
}

FleetSummary run_fleet(ReplayConfig c, const std::string& trace, const FleetOptions& o) {
  c.fleet = o;
  auto fleet = FleetReplay::build(c, trace);
  KV_CHECK(fleet.ok(), fleet.status().message());
  auto s = (*fleet)->run();
  KV_CHECK(s.ok(), s.status().message());
  return std::move(s).value();
}

FleetSummary run_router(const std::string& router, std::int64_t delay_ms = 0) {
  FleetOptions o;
  o.replicas = 8;
  o.router = router;
  o.event_delay_ms = static_cast<double>(delay_ms);
  return run_fleet(small_pool_config(), shared_prefix_trace(), o);
}

// A fleet run that records which requests went to which replica.
struct RoutedRun {
  std::unique_ptr<FleetReplay> fleet;
  FleetSummary summary;
  std::vector<std::set<std::string>> routed;  // per replica: the ids routed to it
};

RoutedRun run_recording_routes(const ReplayConfig& c) {
  RoutedRun out;
  auto fleet = FleetReplay::build(c, shared_prefix_trace());
  KV_CHECK(fleet.ok(), fleet.status().message());
  out.fleet = std::move(fleet).value();
  out.routed.resize(static_cast<std::size_t>(c.fleet.replicas));
  out.fleet->on_route = [&out](const std::string& id, int r) { out.routed[static_cast<std::size_t>(r)].insert(id); };
  auto summary = out.fleet->run();
  KV_CHECK(summary.ok(), summary.status().message());
  out.summary = std::move(summary).value();
  out.fleet->on_route = nullptr;  // it captured `out`, which is returned
  return out;
}

// Replica r's requests replayed by one engine alone, with r's options.
ReplaySummary replica_alone(const ReplayConfig& c, int r, const std::set<std::string>& ids) {
  auto alone = build_replica_alone(c, shared_prefix_trace(), r, ids);
  KV_CHECK(alone.ok(), alone.status().message());
  auto s = alone->make_replayer(c)->run();
  KV_CHECK(s.ok(), s.status().message());
  return std::move(s).value();
}

TEST(FleetReplayTest, OneReplicaIsReplay) {
  ReplayConfig c;
  c.arrivals.request_rate = 20;  // rewritten once by the fleet, as by the replay
  c.run.replay.keep_decision_text = false;
  auto run = build_replay(c, kShareGpt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto replayed = run->make_replayer(c)->run();
  ASSERT_TRUE(replayed.ok()) << replayed.status().message();

  const FleetSummary f = run_fleet(c, kShareGpt, FleetOptions{});
  ASSERT_EQ(f.replicas.size(), 1u);
  EXPECT_EQ(f.replicas[0].summary.digest, replayed->digest);
  EXPECT_EQ(f.replicas[0].routed, replayed->requests_total);
  const ReplaySummary& s = f.fleet;
  EXPECT_EQ(s.requests_finished, replayed->requests_finished);
  EXPECT_EQ(s.cache.hits, replayed->cache.hits);
  EXPECT_EQ(s.sim_time_us, replayed->sim_time_us);
  EXPECT_EQ(s.steps, replayed->steps);
  EXPECT_EQ(s.ttft_us.p90, replayed->ttft_us.p90);
  EXPECT_EQ(s.e2e_us.p99, replayed->e2e_us.p99);
  EXPECT_EQ(s.serving.itl_ms.mean, replayed->serving.itl_ms.mean);
  EXPECT_EQ(s.serving.tpot_ms.median, replayed->serving.tpot_ms.median);
  EXPECT_EQ(s.serving.max_concurrent_requests, replayed->serving.max_concurrent_requests);
  EXPECT_EQ(s.hit_rate, replayed->hit_rate);
}

// Invariant 5: engine r of a fleet decides exactly as a replay of the requests routed to it.
TEST(FleetReplayTest, EachEngineIsTheReplayOfItsRequests) {
  ReplayConfig c = small_pool_config();
  c.arrivals.request_rate = 40;
  c.fleet.replicas = 3;
  c.fleet.router = "llm-d-precise";
  c.fleet.event_delay_ms = 20;
  const RoutedRun run = run_recording_routes(c);
  for (int r = 0; r < 3; ++r) {
    const auto i = static_cast<std::size_t>(r);
    const ReplaySummary s = replica_alone(c, r, run.routed[i]);
    EXPECT_EQ(s.requests_total, static_cast<std::int64_t>(run.routed[i].size()));
    EXPECT_EQ(s.digest, run.summary.replicas[i].summary.digest) << "replica " << r;
    EXPECT_EQ(s.ttft_us.p90, run.summary.replicas[i].summary.ttft_us.p90) << "replica " << r;
  }
}

// The router hashes each prompt once and the engine it picks takes those hashes; a replica
// that hashes with another block size (a Mamba hybrid's 528 tokens) makes its own. Either way
// each engine decides as the replay of its requests, which hashes every prompt itself.
TEST(FleetReplayTest, EnginesTakeTheRoutersHashesOnlyWhenTheyHashAlike) {
  ReplayConfig c = small_pool_config();
  c.arrivals.request_rate = 40;
  c.run.limit = 300;
  c.fleet.replicas = 2;
  c.fleet.router = "llm-d-precise";
  c.fleet.replica_options = "1:model=nemotron-h-8b";
  const RoutedRun run = run_recording_routes(c);
  for (int r = 0; r < 2; ++r) {
    const auto i = static_cast<std::size_t>(r);
    ASSERT_GT(run.routed[i].size(), 0u) << "replica " << r;
    const ReplaySummary s = replica_alone(c, r, run.routed[i]);
    EXPECT_EQ(s.digest, run.summary.replicas[i].summary.digest) << "replica " << r;
    EXPECT_EQ(s.cache.hits, run.summary.replicas[i].summary.cache.hits) << "replica " << r;
  }
  EXPECT_GT(run.summary.replicas[0].summary.cache.hits, 0);  // the shared prefixes hit where hashes were taken
}

TEST(FleetReplayTest, SameInputsSameDecisions) {
  FleetOptions o;
  o.replicas = 4;
  o.router = "dynamo";
  o.event_delay_ms = 50;
  o.event_loss = 0.2;
  const FleetSummary a = run_fleet(small_pool_config(), shared_prefix_trace(), o);
  const FleetSummary b = run_fleet(small_pool_config(), shared_prefix_trace(), o);
  EXPECT_EQ(a.fleet.digest, b.fleet.digest);
  for (std::size_t r = 0; r < a.replicas.size(); ++r)
    EXPECT_EQ(a.replicas[r].summary.digest, b.replicas[r].summary.digest);
  EXPECT_GT(a.events_lost, 0);
  EXPECT_EQ(a.events_lost, b.events_lost);
  // Every request ended somewhere, and the replicas' counts add up to the fleet's.
  std::int64_t routed = 0, finished = 0;
  for (const ReplicaFigures& r : a.replicas) {
    routed += r.routed;
    finished += r.summary.requests_finished;
  }
  EXPECT_EQ(routed, 1000);
  EXPECT_EQ(finished, a.fleet.requests_finished);
  EXPECT_EQ(a.fleet.requests_finished, 1000);
}

// The shared-prefix workload on 8 replicas: routers that know where prefixes are cached hit
// more, and wait less, than one that spreads requests blindly.
TEST(FleetReplayTest, KvAwareRoutersBeatRoundRobinOnSharedPrefixes) {
  const FleetSummary rr = run_router("round-robin");
  for (const char* router : {"dynamo", "llm-d-precise", "llm-d-approx", "sglang"}) {
    const FleetSummary f = run_router(router);
    EXPECT_GT(f.fleet.hit_rate, rr.fleet.hit_rate + 0.05) << router;
    EXPECT_LT(f.fleet.ttft_us.p90, rr.fleet.ttft_us.p90) << router;
  }
}

// llm-d-precise scores prefixes from the replicas' events: as they arrive later its hits fall
// (with events later than the run, every score ties and it picks at random); llm-d-approx
// scores prefixes from its own routing history, which is never late (only its load scorers
// read the delayed reports), so at the same delay it keeps its hits.
TEST(FleetReplayTest, StaleEventsCostThePreciseRouterItsHits) {
  const double fresh = run_router("llm-d-precise", 0).fleet.hit_rate;
  const double late = run_router("llm-d-precise", 5000).fleet.hit_rate;
  const double never = run_router("llm-d-precise", 3600000).fleet.hit_rate;
  EXPECT_GT(fresh, late + 0.02);
  EXPECT_GT(late, never + 0.05);
  const double approx_late = run_router("llm-d-approx", 5000).fleet.hit_rate;
  EXPECT_GT(approx_late, late + 0.02);
  EXPECT_NEAR(approx_late, run_router("llm-d-approx", 0).fleet.hit_rate, 0.01);
}

TEST(FleetReplayTest, SessionsStayOnTheirReplica) {
  FleetOptions o;
  o.replicas = 4;
  o.router = "session";
  ReplayConfig c = small_pool_config();
  c.fleet = o;
  auto fleet = FleetReplay::build(c, shared_prefix_trace());
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  std::map<std::string, std::set<int>> replicas_of_session;
  (*fleet)->on_route = [&](const std::string& id, int replica) {
    replicas_of_session[id.substr(0, id.rfind("-r"))].insert(replica);  // id: g<G>-u<U>-r<i>
  };
  ASSERT_TRUE((*fleet)->run().ok());
  ASSERT_EQ(replicas_of_session.size(), 128u);
  std::set<int> used;
  for (const auto& [session, replicas] : replicas_of_session) {
    EXPECT_EQ(replicas.size(), 1u) << session;
    used.insert(*replicas.begin());
  }
  EXPECT_EQ(used.size(), 4u);
}

// kvsim sweep --vary router=... runs a fleet at each point; its figures are the fleet's.
TEST(FleetReplayTest, SweepPointsAndCapacityProbesRunFleets) {
  ReplayConfig base = small_pool_config();
  base.fleet.replicas = 8;
  auto points = vary_grid_points(base, {"router=round-robin,llm-d-precise"});
  ASSERT_TRUE(points.ok()) << points.status().message();
  auto results = run_grid(*points, shared_prefix_trace(), 1, GridHooks{});
  ASSERT_TRUE(results.ok()) << results.status().message();
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0].digest, run_router("round-robin").fleet.digest);
  EXPECT_EQ((*results)[1].digest, run_router("llm-d-precise").fleet.digest);
  EXPECT_GT((*results)[1].hit_rate, (*results)[0].hit_rate);
  base.fleet.router = "llm-d-precise";
  auto one = run_replay_or_fleet(base, shared_prefix_trace());  // what a capacity probe runs
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->digest, (*results)[1].digest);
}

// --replica-options: a heterogeneous fleet; each engine is still the replay of its requests,
// with its own options.
TEST(FleetReplayTest, ReplicasRunTheirOwnOptions) {
  ReplayConfig c = small_pool_config();
  c.fleet.replicas = 2;
  c.fleet.replica_options = "1:gpu=l40s,max-num-seqs=8";
  const RoutedRun run = run_recording_routes(c);
  EXPECT_NE(run.fleet->device_name().find("l40s"), std::string::npos) << run.fleet->device_name();
  EXPECT_NE(run.fleet->device_name().find("h100"), std::string::npos) << run.fleet->device_name();
  // Round-robin splits the requests evenly; the slower, narrower replica serves them later.
  const FleetSummary& f = run.summary;
  EXPECT_EQ(f.replicas[0].routed, f.replicas[1].routed);
  EXPECT_GT(f.replicas[1].summary.e2e_us.p90, 2 * f.replicas[0].summary.e2e_us.p90);
  EXPECT_EQ(replica_alone(c, 1, run.routed[1]).digest, f.replicas[1].summary.digest);

  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"1:block-size=32", "replica 1: --block-size is the whole fleet's"},
           {"0:router=random", "replica 0: --router is the whole fleet's"},
           {"2:gpu=l40s", "--replica-options: '2:gpu=l40s'"},
           {"0:gpu", "'gpu' is not OPTION=VALUE"},
           {"0:gpu=nonesuch", "replica 0: "},
           {"0:no-such-option=1", "unknown option --no-such-option"}}) {
    c.fleet.replica_options = text;
    auto bad = FleetReplay::build(c, shared_prefix_trace());
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().message().find(expected), std::string::npos) << bad.status().message();
  }
}

// Disaggregated prefill: every request of at least --pd-threshold tokens is prefilled on the
// prefill pool and decoded on the decode pool; the decode side loads only blocks the prefill side
// stored (registered), nothing is freed twice (the pools' invariants after every step), and the
// shadow memory finds that every loaded block holds what the prefill side wrote.
TEST(FleetReplayTest, DisaggregatedBlocksAreConservedAndChecked) {
  ReplayConfig c = small_pool_config();
  c.device.verify = sim::VerifyMode::kFull;
  c.run.replay.check_invariants_every_step = true;
  c.run.limit = 300;
  c.fleet.replicas = 4;
  c.fleet.prefill_replicas = 2;
  c.fleet.router = "llm-d-precise";
  c.fleet.pd_threshold = 1;
  auto fleet = FleetReplay::build(c, shared_prefix_trace());
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  std::map<std::string, std::vector<int>> replicas_of;
  (*fleet)->on_route = [&](const std::string& id, int r) { replicas_of[id].push_back(r); };
  auto f = (*fleet)->run();
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->fleet.violations.empty()) << f->fleet.violations.front();
  EXPECT_EQ(f->fleet.requests_finished, 300);
  EXPECT_EQ(f->pd.requests, 300);
  for (const auto& [id, rs] : replicas_of) {  // routed twice: to a prefill, then to a decode engine
    ASSERT_EQ(rs.size(), 2u) << id;
    EXPECT_LT(rs[0], 2) << id;
    EXPECT_GE(rs[1], 2) << id;
  }
  EXPECT_GT(f->pd.blocks_loaded, 0);
  EXPECT_LE(f->pd.blocks_loaded, f->pd.blocks_registered);
  EXPECT_GT(f->pd.blocks_sent, 0);
  EXPECT_EQ(f->pd.bytes_sent, f->pd.blocks_sent * 16 * 131072);  // Llama-3-8B bf16: 128 KiB a token
  EXPECT_EQ(f->replicas[0].summary.output_tokens + f->replicas[1].summary.output_tokens, 300);  // 1 each
}

// The decode side checks what it loads: a stray store into the first prompt block of the first
// prefilled request, on the prefill engine before the handoff, is found by the decode engine's
// load of that block (the prefill engine finds it too, when it releases the block).
TEST(FleetReplayTest, DisaggregatedCorruptionIsFoundOnTheDecodeSide) {
  ReplayConfig c = small_pool_config();
  c.run.limit = 20;
  c.run.replay.stop_on_violation = false;
  c.fleet.replicas = 2;
  c.fleet.prefill_replicas = 1;
  auto fleet = FleetReplay::build(c, shared_prefix_trace());
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  std::string corrupted;
  (*fleet)->on_request_done = [&](int r, const RequestMetrics& m) {
    if (r != 0 || !corrupted.empty()) return;
    auto& device = dynamic_cast<sim::SimDevice&>(*(*fleet)->engine_run(0).device);
    const std::span<const BlockId> table = device.shadow().table(m.id);
    ASSERT_FALSE(table.empty());
    device.shadow().store_raw(table[0] * 16, 0xbadc0ffee);  // position 0 of its first block
    corrupted = m.id;
  };
  auto f = (*fleet)->run();
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_FALSE(corrupted.empty());
  bool decode_found = false;
  std::string all;
  for (const std::string& v : f->fleet.violations) {
    decode_found = decode_found || (v.rfind("replica 1: ", 0) == 0 && v.find("tier load") != std::string::npos &&
                                    v.find(corrupted) != std::string::npos);
    all += v + "\n";
  }
  EXPECT_TRUE(decode_found) << all;
}

// A replay is one engine: fleet options there are refused, naming kvsim fleet.
TEST(FleetReplayTest, AReplayRefusesFleetOptions) {
  ReplayConfig c;
  c.fleet.replicas = 2;
  auto run = build_replay(c, kShareGpt);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("kvsim fleet"), std::string::npos) << run.status().message();
}

TEST(FleetReplayTest, BadOptionsAreRefusedByName) {
  auto error = [](FleetOptions o, ReplayConfig c = ReplayConfig{}) {
    c.fleet = o;
    auto f = FleetReplay::build(c, kShareGpt);
    return f.ok() ? std::string("ok") : f.status().message();
  };
  FleetOptions o;
  o.replicas = 0;
  EXPECT_NE(error(o).find("--replicas"), std::string::npos);
  o = FleetOptions{};
  o.event_loss = 1;
  EXPECT_NE(error(o).find("--event-loss"), std::string::npos);
  o = FleetOptions{};
  o.router = "consistent-hash";
  EXPECT_NE(error(o).find("unknown router 'consistent-hash'"), std::string::npos);
  ReplayConfig with_events;
  with_events.events.file = "/tmp/never-written.jsonl";
  EXPECT_NE(error(FleetOptions{}, with_events).find("--kv-events"), std::string::npos);
  EXPECT_NE(error(FleetOptions{}).find("ok"), std::string::npos);
}

}  // namespace
}  // namespace kv::replay
