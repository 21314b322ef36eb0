// FleetReplay: N engines behind a router on one virtual clock (`kvsim fleet`, docs/fleet.md).
// Each engine is exactly a `kvsim replay` engine (scheduler, KV-cache manager, simulated device,
// every option) fed from its own queue; the router (fleet/router.h) places each arrival of the
// trace and learns about the engines only through what reaches it: their KV events and load
// reports, --event-delay-ms after the step that produced them (each batch lost with probability
// --event-loss), and each request's end at the moment it ends (config.fleet, fleet_options.h).
//
// The clock: an engine acts at its own time (Replayer::next_time_ns). The fleet routes every
// arrival no later than the earliest engine's time before that engine steps (ties: the arrival
// first, then the lowest replica index), and delivers to the router, before each routing, every
// notice stamped at or before the arrival. A step's effects are stamped at its end.
//
// Invariants:
//   1. Deterministic: same trace, options and seed -> same routes, same engines' decisions,
//      same bytes out. Nothing iterates over a hash table; the only randomness is seeded.
//   2. One replica is `kvsim replay`: its engine's decisions digest equals the replay's, and
//      the fleet's figures equal the replay's figures.
//   3. Causal: the router never sees an effect stamped after the arrival it routes.
//   4. Arrivals are rewritten (--request-rate, --rate-scale) once, for the whole fleet, before
//      routing; every engine keeps each request's arrival time.
//   5. Each engine is a replay: engine r makes exactly the decisions of a replay of the
//      requests routed to it, alone, with seed + r (build_replica_alone); routing adds no
//      state to an engine. (Not so for a disaggregated fleet's decode engines, whose KV
//      connector loads what the prefill pool computed.)
//
// Disaggregated (--prefill-replicas P): replicas [0, P) prefill, the rest decode, each pool
// behind its own router. A request of at least --pd-threshold prompt tokens is prefilled (the
// prompt and one token) on the prefill pool; when that ends, the decode pool's router places
// it, the prompt blocks its decode engine lacks cross --kv-transfer-link (replay/kv_transfer.h),
// and it reaches the decode engine when the transfer is done, which loads them through its KV
// connector (model/tiers/remote_prefill_connector.h). The client's figures are the decode
// side's, from the request's arrival at the fleet; a request counts once in the fleet's figures.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleet/router_factory.h"
#include "model/block_hasher.h"
#include "model/util/status.h"
#include "replay/decision_log.h"
#include "replay/replay_builder.h"
#include "replay/replay_config.h"
#include "replay/replay_summary.h"
#include "replay/replayer.h"

namespace kv::trace {
struct TraceHeader;
}

namespace kv::replay {

struct ReplicaFigures {
  std::int64_t routed = 0;  // requests the router sent here
  ReplaySummary summary;    // the engine's own, as `kvsim replay` reports one
};

// Disaggregated prefill and decode over the run (--prefill-replicas).
struct DisaggFigures {
  std::int64_t requests = 0;          // prefilled on the prefill pool, then handed off
  std::int64_t prefill_rejected = 0;  // refused by their prefill engine (the client sees a rejection)
  std::int64_t blocks_sent = 0;       // prompt blocks the decode engine lacked at the handoff
  std::int64_t bytes_sent = 0;
  std::int64_t transfer_ns = 0;        // summed over handoffs
  std::int64_t blocks_loaded = 0;      // loaded by decode engines instead of computed
  std::int64_t blocks_registered = 0;  // handed to decode engines as loadable (what prefill stored)
};

struct FleetSummary {
  ReplaySummary fleet;  // the whole fleet: counts summed, latencies over every request, clock max
  std::vector<ReplicaFigures> replicas;
  double load_imbalance = 0;                           // max / mean of the requests routed per replica
  std::int64_t events_delivered = 0, events_lost = 0;  // batches (events and load reports)
  DisaggFigures pd;
};

// Replica `replica`'s engine run alone over the requests of `trace_path` whose ids are in `ids`,
// arrivals rewritten as the fleet rewrites them (invariant 5; tests and benchmarks).
StatusOr<ReplayRun> build_replica_alone(const ReplayConfig& config, const std::string& trace_path, int replica,
                                        std::set<std::string> ids);

// One run of `config`: a fleet when config.fleet asks for one (its figures as one server), else
// a replay. What `kvsim sweep --vary` and `kvsim capacity` run at each point.
StatusOr<ReplaySummary> run_replay_or_fleet(const ReplayConfig& config, const std::string& trace_path);

class FleetReplay {
 public:
  // Opens `trace_path` (config.run.limit requests, arrivals rewritten as config.arrivals says)
  // and wires config.fleet.replicas engines and its router. Refuses what a fleet cannot carry
  // yet (--kv-events files or sockets: one per engine would be needed).
  static StatusOr<std::unique_ptr<FleetReplay>> build(const ReplayConfig& config, const std::string& trace_path);
  ~FleetReplay();

  StatusOr<FleetSummary> run();

  // Observers (may be empty): each routing decision, each engine's steps and ended requests.
  std::function<void(const std::string& request_id, int replica)> on_route;
  std::function<void(int replica, const StepRecord&)> on_step;
  std::function<void(int replica, const RequestMetrics&)> on_request_done;

  // Every setting of the run (the engines' shared description, then the fleet's own).
  const std::vector<std::pair<std::string, std::string>>& description() const { return description_; }
  std::string device_name() const;  // the engines' devices, each named once
  // Engine `replica`'s own settings (its --replica-options applied), as its replay lists them.
  const std::vector<std::pair<std::string, std::string>>& engine_description(int replica) const;
  // A replica of the prefill pool (its requests are not the client's: each goes on to decode).
  bool is_prefill(int replica) const { return replica < config_.fleet.prefill_replicas; }
  // Engine `replica`'s Replayer (to stream its decisions), and the fleet's log: every route,
  // then each engine's digest (its digest is the fleet's).
  Replayer& engine(int replica);
  ReplayRun& engine_run(int replica);  // its scheduler and device (tests, tools)
  const DecisionLog& routes() const { return *routes_; }

 private:
  struct Engine;
  struct Notices;
  struct Timeline;
  FleetReplay() = default;

  Status pull_arrival();
  Status route_arrival();
  Status run_timeline();
  Status deliver_to(int replica, RequestSpec spec);
  void prefilled(int replica, const RequestMetrics& m);
  Status hand_off(int prefill_replica, RequestSpec spec, std::vector<BlockHash> hashes, std::int64_t at_ns);
  fleet::Router& router_of(int replica) const;
  int local_index(int replica) const;
  fleet::RouteRequest route_request(const RequestSpec& spec, std::int64_t at_ns) const;
  std::vector<BlockHash> prompt_hashes(const RequestSpec& spec) const;
  void deliver_until(std::int64_t t_ns);
  int earliest_engine() const;
  void reschedule(int replica);
  StatusOr<FleetSummary> summarize();
  void observe(int replica);
  Status make_routers();
  Status add_engine(int replica, const trace::TraceHeader& header);
  void describe();

  ReplayConfig config_;
  std::unique_ptr<RequestSource> trace_;
  std::unique_ptr<fleet::Router> router_;         // every replica; the prefill pool's when disaggregated
  std::unique_ptr<fleet::Router> decode_router_;  // the decode pool's (disaggregated only)
  std::unique_ptr<Timeline> timeline_;            // handoffs and decode arrivals, by time
  DisaggFigures pd_;
  std::vector<std::unique_ptr<Engine>> engines_;
  std::unique_ptr<Notices> notices_;
  std::set<std::pair<std::int64_t, int>> agenda_;       // (next time, replica) of engines with work
  std::vector<std::optional<std::int64_t>> agenda_at_;  // each engine's key in agenda_
  std::unique_ptr<BlockHasher> hasher_;
  std::unique_ptr<DecisionLog> routes_;  // routes, then each engine's digest: the fleet's digest
  RequestSpec arrival_;                  // the trace's next request, not yet routed
  bool have_arrival_ = false;
  std::int64_t last_arrival_us_ = 0;
  int block_size_ = 16;
  std::vector<std::pair<std::string, std::string>> description_;
};

}  // namespace kv::replay
