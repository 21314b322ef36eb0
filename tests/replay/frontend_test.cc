// The serving front end (replay/frontend.h): the two lanes' exact times, the option's forms and
// errors, and a replay with and without it (no front end: the same decisions, bit for bit).
#include "replay/frontend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "replay/fleet_replay.h"
#include "replay/replay_builder.h"

namespace kv::replay {
namespace {

TEST(Frontend, RequestLaneServesInOrder) {
  const FrontendModel m = parse_frontend("1000,10,0,0").value();
  FrontendLanes lanes;
  EXPECT_EQ(lanes.engine_arrival_ns(m, 0, 100), 2000);     // 1000 + 10 * 100
  EXPECT_EQ(lanes.engine_arrival_ns(m, 500, 100), 4000);   // waits for the first: 2000 + 2000
  EXPECT_EQ(lanes.engine_arrival_ns(m, 10000, 0), 11000);  // the lane was free
}

TEST(Frontend, RequestLatencyDelaysArrivalWithoutHoldingTheLane) {
  const FrontendModel m = parse_frontend("1000,0,0,0,50000").value();
  EXPECT_EQ(m.request_latency_ns, 50000);
  EXPECT_TRUE(m.enabled());
  FrontendLanes lanes;
  EXPECT_EQ(lanes.engine_arrival_ns(m, 0, 10), 51000);     // lane 1000, then the latency
  EXPECT_EQ(lanes.engine_arrival_ns(m, 1500, 10), 52500);  // the lane was free at 1000, not 51000
  EXPECT_EQ(lanes.engine_arrival_ns(m, 1600, 10), 53500);  // queued behind the second in the lane
}

TEST(Frontend, OutputLaneDelaysEveryTokenOfAStep) {
  const FrontendModel m = parse_frontend("0,0,20,100").value();
  FrontendLanes lanes;
  EXPECT_EQ(lanes.client_time_ns(m, 1000, 5), 1200);  // 1000 + 100 + 5 * 20
  EXPECT_EQ(lanes.client_time_ns(m, 1100, 5), 1400);  // behind the previous step: 1200 + 200
  EXPECT_EQ(lanes.client_time_ns(m, 5000, 1), 5120);
}

TEST(Frontend, NoneIsTheEngineClock) {
  const FrontendModel m = parse_frontend("none").value();
  EXPECT_FALSE(m.enabled());
  FrontendLanes lanes;
  EXPECT_EQ(lanes.engine_arrival_ns(m, 7000, 880), 7000);
  EXPECT_EQ(lanes.client_time_ns(m, 9000, 64), 9000);
}

TEST(Frontend, PresetAndErrors) {
  const FrontendModel v1 = parse_frontend("vllm-v1").value();
  EXPECT_EQ(v1.request_ns, 13000);
  EXPECT_EQ(v1.prompt_token_ns, 2070);
  EXPECT_EQ(v1.output_token_ns, 20000);
  EXPECT_EQ(v1.step_ns, 13000);
  EXPECT_EQ(parse_frontend("1,2,3").status().message(),
            "--frontend: must be none, vllm-v1 or REQUEST_NS,PROMPT_TOKEN_NS,OUTPUT_TOKEN_NS,STEP_NS[,LATENCY_NS], got "
            "'1,2,3'");
  EXPECT_FALSE(parse_frontend("1,2,3,4,5,6").ok());
  EXPECT_EQ(parse_frontend("1,2,3,4").value().request_latency_ns, 0);
  EXPECT_EQ(parse_frontend("1,2,x,4").status().message(), "--frontend: 'x' is not an integer");
  EXPECT_EQ(parse_frontend("1,2,3,1000000001").status().message(),
            "--frontend: must be in 0..1000000000 ns, got 1000000001");
}

ReplaySummary replay_with(const std::string& frontend) {
  ReplayConfig c;
  c.run.replay.keep_decision_text = false;
  for (const auto& [name, value] : {std::pair<std::string, std::string>{"model", "llama3-8b"},
                                    {"request-rate", "8"},
                                    {"limit", "40"},
                                    {"frontend", frontend}}) {
    const Status s = set_option(c, name, value);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  auto summary = run_replay_or_fleet(c, "traces/data/sharegpt_sample.kvtrace");
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return *summary;
}

TEST(Frontend, ClientSeesItTheEngineOnlyLater) {
  const ReplaySummary none = replay_with("none");
  EXPECT_EQ(none.digest, replay_with("0,0,0,0").digest);
  // 5 ms per request in one lane: every TTFT grows by 5 ms at least (more when two requests
  // arrive less than 5 ms apart and the second waits for the lane), the engine sees the
  // requests later, so its decisions may differ.
  const ReplaySummary fixed = replay_with("5000000,0,0,0");
  EXPECT_GE(fixed.serving.ttft_ms.median, none.serving.ttft_ms.median + 5.0);
  EXPECT_EQ(fixed.serving.ttft_ms.count, none.serving.ttft_ms.count);
  // 1 ms per step on the way back: the first token too, so TTFT grows by 1 ms at least.
  const ReplaySummary back = replay_with("0,0,0,1000000");
  EXPECT_EQ(back.digest, none.digest);  // the engine's side is untouched
  EXPECT_GE(back.serving.ttft_ms.mean, none.serving.ttft_ms.mean + 1.0 - 1e-9);
  const ReplaySummary v1 = replay_with("vllm-v1");
  EXPECT_GT(v1.serving.ttft_ms.mean, none.serving.ttft_ms.mean);
}

struct ClosedLoopRun {
  ReplaySummary summary;
  std::vector<RequestMetrics> requests;
};

// A closed-loop client: every request wants to be sent at 0, at most `max_concurrency` in flight.
ClosedLoopRun closed_loop(const std::string& frontend, const std::string& max_concurrency) {
  ReplayConfig c;
  c.run.replay.keep_decision_text = false;
  for (const auto& [name, value] : {std::pair<std::string, std::string>{"model", "llama3-8b"},
                                    {"request-rate", "inf"},
                                    {"limit", "24"},
                                    {"max-concurrency", max_concurrency},
                                    {"frontend", frontend}}) {
    const Status s = set_option(c, name, value);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  auto built = build_replay(c, "traces/data/sharegpt_sample.kvtrace");
  EXPECT_TRUE(built.ok()) << built.status().message();
  ClosedLoopRun out;
  auto replayer = built->make_replayer(c);
  replayer->on_request_done = [&](const RequestMetrics& m) { out.requests.push_back(m); };
  auto summary = replayer->run();
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  out.summary = *summary;
  return out;
}

// The most requests the client has in flight at any send: sent at or before it, and their last
// token not yet received.
std::size_t most_in_flight(const std::vector<RequestMetrics>& requests) {
  std::size_t most = 0;
  for (const RequestMetrics& a : requests) {
    std::size_t n = 0;
    for (const RequestMetrics& b : requests) n += b.arrival_us <= a.arrival_us && a.arrival_us < b.finish_us;
    most = std::max(most, n);
  }
  return most;
}

TEST(Frontend, ClosedLoopNeedsOneEngine) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "frontend", "vllm-v1").ok());
  ASSERT_TRUE(set_option(c, "max-concurrency", "4").ok());
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  ASSERT_TRUE(set_option(c, "replicas", "2").ok());
  EXPECT_EQ(c.validate().message(),
            "--frontend: with --max-concurrency needs one engine (the closed-loop client is one engine's)");
}

TEST(Frontend, ClosedLoopLatencyDelaysEverySend) {
  // One request at a time: each is sent when the previous one's last token arrives and reaches
  // the engine its latency later, so the engine makes the same decisions, and each TTFT (timed
  // from the send) and the run grow by the latency per request. Arrivals are whole
  // microseconds: the engine sees each request up to 1 us later than send + latency.
  const ClosedLoopRun none = closed_loop("none", "1");
  const ClosedLoopRun late = closed_loop("0,0,0,0,7000000", "1");
  EXPECT_EQ(late.summary.digest, none.summary.digest);
  ASSERT_EQ(late.requests.size(), 24u);
  EXPECT_NEAR(late.summary.serving.ttft_ms.mean, none.summary.serving.ttft_ms.mean + 7.0, 1e-3);
  EXPECT_NEAR(late.summary.serving.tpot_ms.mean, none.summary.serving.tpot_ms.mean, 1e-3);
  EXPECT_GE(late.summary.sim_time_us, none.summary.sim_time_us + 24 * 7000);
  EXPECT_LE(late.summary.sim_time_us, none.summary.sim_time_us + 24 * 7000 + 24);
  EXPECT_EQ(most_in_flight(late.requests), 1u);
}

TEST(Frontend, ClosedLoopSlotsAreHeldUntilTheClientHasTheLastToken) {
  // 2 ms per step on the way back: a request's slot frees only when its last token reaches the
  // client, so the client never has more than 4 in flight, and does reach 4.
  for (const std::string& frontend : {std::string("0,0,0,2000000"), std::string("vllm-v1"), std::string("none")}) {
    const ClosedLoopRun run = closed_loop(frontend, "4");
    ASSERT_EQ(run.requests.size(), 24u) << frontend;
    EXPECT_EQ(most_in_flight(run.requests), 4u) << frontend;
  }
  // The slow way back holds slots longer than the engine holds the requests: the run is longer.
  EXPECT_GT(closed_loop("0,0,0,2000000", "4").summary.serving.duration_s,
            closed_loop("none", "4").summary.serving.duration_s);
}

}  // namespace
}  // namespace kv::replay
