#include "replay/fleet_replay.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "fleet/seeded_random.h"
#include "model/request.h"
#include "model/tiers/remote_prefill_connector.h"
#include "model/util/format_number.h"
#include "replay/arrivals.h"
#include "replay/kv_transfer.h"
#include "replay/replay_builder.h"
#include "replay/replayer.h"
#include "traces/replay_source.h"

namespace kv::replay {

namespace {

// An engine's requests: what the router sent it, in arrival order.
class QueueSource final : public RequestSource {
 public:
  void push(RequestSpec r) { queue_.push_back(std::move(r)); }
  StatusOr<bool> next(RequestSpec* out) override {
    if (queue_.empty()) return false;
    *out = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }

 private:
  std::deque<RequestSpec> queue_;
};

// The requests of `inner` whose ids are in a set, in their order.
class IdFilterSource final : public RequestSource {
 public:
  IdFilterSource(std::unique_ptr<RequestSource> inner, std::set<std::string> ids)
      : inner_(std::move(inner)), ids_(std::move(ids)) {}
  StatusOr<bool> next(RequestSpec* out) override {
    while (true) {
      auto got = inner_->next(out);
      if (!got.ok() || !*got || ids_.count(out->id)) return got;
    }
  }

 private:
  std::unique_ptr<RequestSource> inner_;
  std::set<std::string> ids_;
};

}  // namespace

// What reaches the router, stamped with the time it reaches it, in (time, creation) order.
struct FleetReplay::Notices {
  enum class Kind { kEvents, kLoad, kFinished };
  struct Notice {
    int replica = 0;
    Kind kind = Kind::kFinished;
    std::vector<KvEvent> events;
    fleet::LoadReport load;
    std::string request_id;
  };
  explicit Notices(std::uint64_t seed, double loss_probability) : loss_draws(seed), loss(loss_probability) {}

  // A batch of events or a load report: lost with probability `loss`.
  void add_batch(std::int64_t at_ns, Notice n) {
    if (loss > 0 && loss_draws.unit() < loss) {
      ++lost;
      return;
    }
    ++delivered;
    add(at_ns, std::move(n));
  }
  void add(std::int64_t at_ns, Notice n) { queue.emplace(std::make_pair(at_ns, next_seq++), std::move(n)); }

  std::map<std::pair<std::int64_t, std::int64_t>, Notice> queue;
  std::int64_t next_seq = 0, delivered = 0, lost = 0;
  fleet::SeededRandom loss_draws;
  double loss = 0;
};

struct FleetReplay::Engine {
  ReplayRun run;
  QueueSource* queue = nullptr;  // owned by run.source
  std::unique_ptr<Replayer> replayer;
  std::unique_ptr<KvEventSink> sink;
  std::int64_t routed = 0;
  RemotePrefillConnector* remote = nullptr;  // a decode engine of a disaggregated fleet
  std::int64_t block_bytes = 0;              // its KV bytes per block (decode engines)
  // It hashes prompts as the routers do (algorithm, seed, block size): it takes the hashes
  // made to route a request (RequestSpec::prompt_hashes) instead of making them again. A
  // replica given another model (--replica-options) may hash with another block size.
  bool hashes_as_routed = false;
};

// Disaggregation's own events, in (time, creation) order: a prefill engine finished a request
// (the handoff: the decode pool's router places it, its KV crosses the link), and the request
// reaching its decode engine.
struct FleetReplay::Timeline {
  enum class Kind { kHandoff, kDecodeArrival };
  struct Event {
    Kind kind = Kind::kHandoff;
    int replica = 0;  // the prefill engine (handoff), the decode engine (arrival)
    RequestSpec spec;
    std::vector<BlockHash> hashes;  // handoff: the prompt's blocks within the lookup bound
  };
  void add(std::int64_t at_ns, Event e) { events.emplace(std::make_pair(at_ns, next_seq++), std::move(e)); }
  std::optional<std::int64_t> next_ns() const {
    return events.empty() ? std::nullopt : std::optional<std::int64_t>(events.begin()->first.first);
  }
  std::map<std::pair<std::int64_t, std::int64_t>, Event> events;
  std::int64_t next_seq = 0;
  std::unordered_map<RequestId, RequestSpec> awaiting_prefill;  // whole requests, by id (lookup only)
};

namespace {

// An engine's KV events, into the router's notices once the delay has passed.
class NoticeSink final : public KvEventSink {
 public:
  NoticeSink(std::function<void(std::vector<KvEvent>)> deliver) : deliver_(std::move(deliver)) {}
  Status publish(std::int64_t, double, const std::vector<KvEvent>& events) override {
    deliver_(events);
    return {};
  }
  Status close() override { return {}; }

 private:
  std::function<void(std::vector<KvEvent>)> deliver_;
};

// What disaggregated prefill needs of every engine (the blocks a prefill engine computed stay in
// its prefix cache for the handoff; one full-attention group, as vLLM runs connectors).
Status check_disaggregation(const ReplayConfig& c) {
  if (!c.fleet.disaggregated()) return {};
  const std::string why = "--prefill-replicas needs ";
  if (!c.scheduler.cache.enable_caching) return Status::error(why + "--prefix-caching on");
  if (c.tiers_enabled()) return Status::error(why + "no second tier (--host-cache-bytes)");
  if (c.effective_model().is_hybrid()) return Status::error(why + "a model with one KV-cache group (full attention)");
  if (c.device.kind != DeviceKind::kSim) return Status::error(why + "--device sim");
  return {};
}

// Options a replica may not set for itself: what the fleet does once for all (arrivals, the
// trace, the router), and what the router's prompt hashes must share with every engine.
const std::set<std::string>& fleet_wide_options() {
  static const std::set<std::string> names = {"seed",       "limit",      "request-rate", "burstiness",
                                              "rate-scale", "block-size", "hash"};
  return names;
}

// The configuration of one engine: the fleet's, without what the fleet does once for all, with
// its --replica-options.
StatusOr<ReplayConfig> engine_config(const ReplayConfig& config, int replica) {
  auto overrides = parse_replica_options(config.fleet.replica_options, config.fleet.replicas);
  if (!overrides.ok()) return overrides.status();
  ReplayConfig c = config;
  c.arrivals = ArrivalOptions{};  // rewritten once, before routing
  c.run.limit = 0;
  c.run.seed = config.run.seed + replica;
  c.fleet = FleetOptions{};  // one engine
  const std::string where = "--replica-options: replica " + std::to_string(replica) + ": ";
  for (const auto& [option, value] : (*overrides)[static_cast<std::size_t>(replica)]) {
    if (fleet_option_names().count(option) || fleet_wide_options().count(option)) {
      return Status::error(where + "--" + option + " is the whole fleet's, not one replica's");
    }
    if (Status s = set_option(c, option, value); !s.ok()) return s.with_context(where);
  }
  if (Status s = c.validate(); !s.ok()) return s.with_context(where);
  return c;
}

}  // namespace

namespace {

// The trace as the fleet reads it: config.run.limit requests, arrivals rewritten once.
StatusOr<std::unique_ptr<RequestSource>> open_fleet_trace(const ReplayConfig& config, const std::string& trace_path,
                                                          trace::TraceHeader* header) {
  trace::ReplaySourceOptions so;
  so.seed = config.run.seed;
  so.limit = config.run.limit;
  auto trace = trace::TraceRequestSource::open(trace_path, so);
  if (!trace.ok()) return trace.status();
  *header = (*trace)->header();
  std::unique_ptr<RequestSource> source = std::move(trace).value();
  ArrivalOptions arrivals = config.arrivals;
  arrivals.seed = config.run.seed;
  if (arrivals.rewrites()) source = std::make_unique<ArrivalSource>(std::move(source), arrivals);
  return source;
}

}  // namespace

StatusOr<ReplayRun> build_replica_alone(const ReplayConfig& config, const std::string& trace_path, int replica,
                                        std::set<std::string> ids) {
  trace::TraceHeader header;
  auto source = open_fleet_trace(config, trace_path, &header);
  if (!source.ok()) return source.status();
  auto subset = std::make_unique<IdFilterSource>(std::move(source).value(), std::move(ids));
  auto ec = engine_config(config, replica);
  if (!ec.ok()) return ec.status();
  return build_replay(*ec, std::move(subset), header.hash_seed, header.source);
}

StatusOr<std::unique_ptr<FleetReplay>> FleetReplay::build(const ReplayConfig& config, const std::string& trace_path) {
  if (Status s = config.validate(); !s.ok()) return s;
  if (config.events.writes()) {
    return Status::error("--kv-events and --kv-events-zmq are not available in a fleet (one stream per engine)");
  }
  if (Status s = check_disaggregation(config); !s.ok()) return s;
  std::unique_ptr<FleetReplay> f(new FleetReplay());
  f->config_ = config;
  f->routes_ = std::make_unique<DecisionLog>(/*keep_text=*/true);
  f->timeline_ = std::make_unique<Timeline>();
  f->notices_ = std::make_unique<Notices>(static_cast<std::uint64_t>(config.run.seed) ^ 0x9e3779b97f4a7c15ULL,
                                          config.fleet.event_loss);
  trace::TraceHeader header;
  auto trace = open_fleet_trace(config, trace_path, &header);
  if (!trace.ok()) return trace.status();
  f->trace_ = std::move(trace).value();
  if (Status s = f->make_routers(); !s.ok()) return s;
  for (int r = 0; r < config.fleet.replicas; ++r) {
    if (Status s = f->add_engine(r, header); !s.ok()) return s;
  }
  const SchedulerConfig& sc = f->engines_[0]->run.scheduler->config();
  f->hasher_ = std::make_unique<BlockHasher>(sc.hash_algo, sc.hash_seed);
  f->block_size_ = sc.cache.block_size;
  for (auto& e : f->engines_) {
    const SchedulerConfig& c = e->run.scheduler->config();
    e->hashes_as_routed =
        c.hash_algo == sc.hash_algo && c.hash_seed == sc.hash_seed && c.cache.block_size == sc.cache.block_size;
  }
  f->describe();
  return f;
}

// The router of the whole fleet, or of each pool when disaggregated (same kind, own seeds).
Status FleetReplay::make_routers() {
  const FleetOptions& o = config_.fleet;
  const auto seed = static_cast<std::uint64_t>(config_.run.seed);
  auto router =
      fleet::make_router(o.router, o.router_params, o.disaggregated() ? o.prefill_replicas : o.replicas, seed);
  if (!router.ok()) return router.status();
  router_ = std::move(router).value();
  if (!o.disaggregated()) return {};
  auto decode = fleet::make_router(o.router, o.router_params, o.replicas - o.prefill_replicas, seed + 1);
  if (!decode.ok()) return decode.status();
  decode_router_ = std::move(decode).value();
  return {};
}

// Engine `replica`: a replay engine over its own queue, observed by the fleet; a decode engine
// of a disaggregated fleet loads what its prefill engine computed.
Status FleetReplay::add_engine(int replica, const trace::TraceHeader& header) {
  auto engine_cfg = engine_config(config_, replica);
  if (!engine_cfg.ok()) return engine_cfg.status();
  ReplayConfig& ec = *engine_cfg;
  ec.events.observed = router_->reads_kv_events();  // the managers queue events for the router
  auto queue = std::make_unique<QueueSource>();
  QueueSource* q = queue.get();
  auto run = build_replay(ec, std::move(queue), header.hash_seed, header.source);
  if (!run.ok()) return run.status();
  auto engine = std::make_unique<Engine>();
  engine->run = std::move(run).value();
  engine->queue = q;
  engine->replayer = engine->run.make_replayer(ec);
  engine->replayer->keep_source_open();
  if (config_.fleet.disaggregated() && !is_prefill(replica)) {
    engine->block_bytes = ec.device.model.kv_bytes_per_token() * ec.block_size();
    auto remote = std::make_unique<RemotePrefillConnector>(ec.block_size(), engine->block_bytes);
    engine->remote = remote.get();
    engine->run.scheduler->set_connector(std::move(remote));
  }
  engines_.push_back(std::move(engine));
  observe(replica);
  return {};
}

// The fleet's settings: the first engine's, then the fleet's own.
void FleetReplay::describe() {
  const FleetOptions& o = config_.fleet;
  description_ = engines_[0]->run.description;
  description_.emplace_back("replicas", std::to_string(o.replicas));
  description_.emplace_back("router", o.router);
  description_.emplace_back("router_params", router_params_text(o.router_params));
  description_.emplace_back("event_delay_ms", shortest_number(o.event_delay_ms));
  description_.emplace_back("event_loss", shortest_number(o.event_loss));
  description_.emplace_back("replica_options", o.replica_options);
  description_.emplace_back("prefill_replicas", std::to_string(o.prefill_replicas));
  if (o.disaggregated()) {
    description_.emplace_back("kv_transfer_link", o.kv_transfer_link);
    description_.emplace_back("pd_threshold", std::to_string(o.pd_threshold));
  }
}

FleetReplay::~FleetReplay() = default;

Replayer& FleetReplay::engine(int replica) { return *engines_.at(static_cast<std::size_t>(replica))->replayer; }
ReplayRun& FleetReplay::engine_run(int replica) { return engines_.at(static_cast<std::size_t>(replica))->run; }

std::string FleetReplay::device_name() const {
  std::string names;
  for (const auto& e : engines_) {
    const std::string n = e->run.device->name();
    if (names.find(n) == std::string::npos) names += (names.empty() ? "" : " + ") + n;
  }
  return names;
}

const std::vector<std::pair<std::string, std::string>>& FleetReplay::engine_description(int replica) const {
  return engines_.at(static_cast<std::size_t>(replica))->run.description;
}

// Wires engine `replica`'s observers: its steps, ends and events become the router's notices.
void FleetReplay::observe(int replica) {
  Engine& e = *engines_[static_cast<std::size_t>(replica)];
  const Replayer* replayer = e.replayer.get();
  const std::int64_t delay = config_.fleet.event_delay_ns();
  e.sink = std::make_unique<NoticeSink>([this, replica, replayer, delay](std::vector<KvEvent> events) {
    Notices::Notice n{replica, Notices::Kind::kEvents, std::move(events), {}, {}};
    notices_->add_batch(replayer->now_ns() + delay, std::move(n));
  });
  if (router_->reads_kv_events()) e.replayer->set_event_sink(e.sink.get());
  const bool loads = router_->reads_load_reports();
  e.replayer->on_step = [this, replica, replayer, delay, loads](const StepRecord& rec) {
    if (loads) {
      Notices::Notice n{replica, Notices::Kind::kLoad, {}, {rec.running, rec.waiting, rec.kv_usage}, {}};
      notices_->add_batch(replayer->now_ns() + delay, std::move(n));
    }
    if (on_step) on_step(replica, rec);
  };
  e.replayer->on_request_done = [this, replica, replayer](const RequestMetrics& m) {
    notices_->add(replayer->now_ns(), {replica, Notices::Kind::kFinished, {}, {}, m.id});
    if (is_prefill(replica)) prefilled(replica, m);
    if (on_request_done) on_request_done(replica, m);
  };
}

void FleetReplay::deliver_until(std::int64_t t_ns) {
  auto& q = notices_->queue;
  while (!q.empty() && q.begin()->first.first <= t_ns) {
    Notices::Notice& n = q.begin()->second;
    switch (n.kind) {
      case Notices::Kind::kEvents:
        router_of(n.replica).on_events(local_index(n.replica), n.events);
        break;
      case Notices::Kind::kLoad:
        router_of(n.replica).on_load(local_index(n.replica), n.load);
        break;
      case Notices::Kind::kFinished:
        router_of(n.replica).on_finished(n.request_id, local_index(n.replica));
        break;
    }
    q.erase(q.begin());
  }
}

// Engine `replica` changed (it stepped, or got a request): its place in the agenda follows.
void FleetReplay::reschedule(int replica) {
  std::optional<std::int64_t>& at = agenda_at_[static_cast<std::size_t>(replica)];
  if (at) agenda_.erase({*at, replica});
  at = engines_[static_cast<std::size_t>(replica)]->replayer->next_time_ns();
  if (at) agenda_.insert({*at, replica});
}

// The engine that acts first (lowest index on a tie), or -1 when none has anything to do.
int FleetReplay::earliest_engine() const { return agenda_.empty() ? -1 : agenda_.begin()->second; }

Status FleetReplay::pull_arrival() {
  auto got = trace_->next(&arrival_);
  if (!got.ok()) return got.status();
  have_arrival_ = *got;
  if (!have_arrival_) return {};
  if (arrival_.arrival_time_us < last_arrival_us_) {
    return Status::error("request " + arrival_.id + ": arrival time " + std::to_string(arrival_.arrival_time_us) +
                         " us is before the previous request's " + std::to_string(last_arrival_us_));
  }
  last_arrival_us_ = arrival_.arrival_time_us;
  return {};
}

std::vector<BlockHash> FleetReplay::prompt_hashes(const RequestSpec& spec) const {
  if (!spec.prompt_hashes.empty()) return spec.prompt_hashes;  // hashed when it was routed
  const Request probe = spec.deferred_prompt.deferred()
                            ? Request(spec.id, spec.deferred_prompt, spec.extras, hasher_.get(), block_size_)
                            : Request(spec.id, spec.prompt, spec.extras, hasher_.get(), block_size_);
  return probe.block_hashes();
}

StatusOr<ReplaySummary> run_replay_or_fleet(const ReplayConfig& config, const std::string& trace_path) {
  if (config.fleet.single_engine()) {
    auto run = build_replay(config, trace_path);
    if (!run.ok()) return run.status();
    return run->make_replayer(config)->run();
  }
  auto fleet = FleetReplay::build(config, trace_path);
  if (!fleet.ok()) return fleet.status();
  auto s = (*fleet)->run();
  if (!s.ok()) return s.status();
  return std::move(s->fleet);
}

fleet::RouteRequest FleetReplay::route_request(const RequestSpec& spec, std::int64_t at_ns) const {
  fleet::RouteRequest rr;
  rr.id = spec.id;
  rr.session_id = spec.session_id;
  // An empty prompt is rejected by its engine; the router still needs a positive length.
  rr.prompt_tokens = static_cast<int>(std::clamp<std::int64_t>(spec.num_prompt_tokens(), 1, INT32_MAX));
  rr.block_size = block_size_;
  if (router_->reads_block_hashes()) rr.block_hashes = prompt_hashes(spec);
  rr.now_ns = at_ns;
  return rr;
}

fleet::Router& FleetReplay::router_of(int replica) const {
  return decode_router_ && !is_prefill(replica) ? *decode_router_ : *router_;
}

int FleetReplay::local_index(int replica) const {
  return decode_router_ && !is_prefill(replica) ? replica - config_.fleet.prefill_replicas : replica;
}

// Hands `spec` to engine `replica` (its arrival time is when the engine may see it).
Status FleetReplay::deliver_to(int replica, RequestSpec spec) {
  Engine& e = *engines_[static_cast<std::size_t>(replica)];
  ++e.routed;
  if (!e.hashes_as_routed) spec.prompt_hashes.clear();
  e.queue->push(std::move(spec));
  if (Status s = e.replayer->source_grew(); !s.ok()) return s;
  reschedule(replica);
  return {};
}

// Routes the trace's next request: the router first learns what reached it by then. In a
// disaggregated fleet a long enough prompt goes to the prefill pool for its first token.
Status FleetReplay::route_arrival() {
  const std::int64_t at_ns = arrival_.arrival_time_us * 1000;
  deliver_until(at_ns);
  const bool prefill = decode_router_ && arrival_.num_prompt_tokens() >= config_.fleet.pd_threshold;
  fleet::Router& router = prefill || !decode_router_ ? *router_ : *decode_router_;
  fleet::RouteRequest rr = route_request(arrival_, at_ns);
  const int local = router.route(rr);
  const int replica = &router == decode_router_.get() ? local + config_.fleet.prefill_replicas : local;
  routes_->record_route(arrival_.id, replica);
  if (on_route) on_route(arrival_.id, replica);
  RequestSpec spec = std::move(arrival_);
  spec.prompt_hashes = std::move(rr.block_hashes);  // hashed once: the engine goes on from them
  if (prefill) {
    RequestSpec first = spec;  // the prefill engine computes the prompt and one token
    first.outputs = spec.outputs.empty() ? OutputTokens{} : OutputTokens(std::vector<TokenId>{spec.outputs[0]});
    timeline_->awaiting_prefill.emplace(spec.id, std::move(spec));
    spec = std::move(first);
  }
  if (Status s = deliver_to(replica, std::move(spec)); !s.ok()) return s;
  return pull_arrival();
}

// A prefill engine ended `m`: a finished one is handed off now; a refused one ends there.
void FleetReplay::prefilled(int replica, const RequestMetrics& m) {
  auto it = timeline_->awaiting_prefill.find(m.id);
  if (it == timeline_->awaiting_prefill.end()) return;
  RequestSpec spec = std::move(it->second);
  timeline_->awaiting_prefill.erase(it);
  if (m.status == "rejected") {
    ++pd_.prefill_rejected;
    return;
  }
  std::vector<BlockHash> hashes = prompt_hashes(spec);
  const auto bound = static_cast<std::size_t>(std::max<std::int64_t>(spec.num_prompt_tokens() - 1, 0) / block_size_);
  if (hashes.size() > bound) hashes.resize(bound);
  const std::int64_t now = engines_[static_cast<std::size_t>(replica)]->replayer->now_ns();
  timeline_->add(now, {Timeline::Kind::kHandoff, replica, std::move(spec), std::move(hashes)});
}

// The decode pool's router places a prefilled request; its KV crosses the link; it reaches the
// decode engine when the transfer is done.
Status FleetReplay::hand_off(int prefill_replica, RequestSpec spec, std::vector<BlockHash> hashes, std::int64_t at_ns) {
  deliver_until(at_ns);
  const int replica = decode_router_->route(route_request(spec, at_ns)) + config_.fleet.prefill_replicas;
  routes_->record_route(spec.id, replica);
  if (on_route) on_route(spec.id, replica);
  Engine& decode = *engines_[static_cast<std::size_t>(replica)];
  const std::int64_t lacking =
      hand_off_blocks(engines_[static_cast<std::size_t>(prefill_replica)]->run, decode.run, hashes);
  const std::int64_t bytes = lacking * decode.block_bytes;
  auto link = find_kv_transfer_link(config_.fleet.kv_transfer_link);
  KV_CHECK(link.ok(), link.status().message());  // validate() checked it
  const std::int64_t ns = link->transfer_ns(bytes);
  ++pd_.requests;
  pd_.blocks_sent += lacking;
  pd_.bytes_sent += bytes;
  pd_.transfer_ns += ns;
  decode.remote->expect(spec.id, std::move(hashes));
  spec.sent_at_us = spec.arrival_time_us;            // the client's
  spec.arrival_time_us = (at_ns + ns + 999) / 1000;  // the decode engine's
  timeline_->add(spec.arrival_time_us * 1000, {Timeline::Kind::kDecodeArrival, replica, std::move(spec), {}});
  return {};
}

Status FleetReplay::run_timeline() {
  auto first = timeline_->events.begin();
  const std::int64_t at_ns = first->first.first;
  Timeline::Event e = std::move(first->second);
  timeline_->events.erase(first);
  if (e.kind == Timeline::Kind::kHandoff) return hand_off(e.replica, std::move(e.spec), std::move(e.hashes), at_ns);
  return deliver_to(e.replica, std::move(e.spec));
}

StatusOr<FleetSummary> FleetReplay::run() {
  agenda_at_.assign(engines_.size(), std::nullopt);
  for (std::size_t r = 0; r < engines_.size(); ++r) {
    if (Status s = engines_[r]->replayer->begin(); !s.ok()) return s;
    reschedule(static_cast<int>(r));
  }
  if (Status s = pull_arrival(); !s.ok()) return s;
  while (true) {
    // The next thing to happen: an arrival, then a timeline event, then an engine's step.
    constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
    const int r = earliest_engine();
    Replayer* next = r >= 0 ? engines_[static_cast<std::size_t>(r)]->replayer.get() : nullptr;
    const std::int64_t t_engine = r >= 0 ? agenda_.begin()->first : kNever;
    const std::int64_t t_timeline = timeline_->next_ns().value_or(kNever);
    const std::int64_t t_arrival = have_arrival_ ? arrival_.arrival_time_us * 1000 : kNever;
    if (have_arrival_ && t_arrival <= t_timeline && t_arrival <= t_engine) {
      if (Status s = route_arrival(); !s.ok()) return s;
      continue;
    }
    if (t_timeline != kNever && t_timeline <= t_engine) {
      if (Status s = run_timeline(); !s.ok()) return s;
      continue;
    }
    if (next == nullptr) break;
    if (Status s = next->advance(); !s.ok()) return s.with_context("replica " + std::to_string(r) + ": ");
    reschedule(r);
  }
  for (std::size_t r = 0; r < engines_.size(); ++r) {
    if (Status s = engines_[r]->replayer->stall_status(); !s.ok()) {
      return s.with_context("replica " + std::to_string(r) + ": ");
    }
  }
  return summarize();
}

namespace {

// Adds one engine's work into the fleet's: steps, the cache's counters, what was computed.
void add_work(ReplaySummary& f, const ReplaySummary& s, int replica) {
  f.steps += s.steps;
  f.preemptions += s.preemptions;
  f.recomputed_tokens += s.recomputed_tokens;
  f.evictions += s.evictions;
  f.encoder_tokens_per_request = s.encoder_tokens_per_request;
  f.encoder_tokens += s.encoder_tokens;
  f.cache.lookups += s.cache.lookups;
  f.cache.queries += s.cache.queries;
  f.cache.hits += s.cache.hits;
  f.cache.preempted_lookups += s.cache.preempted_lookups;
  f.cache.preempted_queries += s.cache.preempted_queries;
  f.cache.preempted_hits += s.cache.preempted_hits;
  f.sim_time_us = std::max(f.sim_time_us, s.sim_time_us);
  f.measured_total_ns = s.measured_total_ns < 0 ? f.measured_total_ns
                                                : std::max<std::int64_t>(f.measured_total_ns, 0) + s.measured_total_ns;
  f.prompt_tokens_computed += s.prompt_tokens_computed;
  f.tier_load_ns += s.tier_load_ns;
  f.tier_stall_ns += s.tier_stall_ns;
  for (const std::string& v : s.violations) f.violations.push_back("replica " + std::to_string(replica) + ": " + v);
  f.spec.num_speculative_tokens = s.spec.num_speculative_tokens;
  f.spec.num_drafts += s.spec.num_drafts;
  f.spec.num_draft_tokens += s.spec.num_draft_tokens;
  f.spec.num_accepted_tokens += s.spec.num_accepted_tokens;
  f.spec.accepted_per_position.resize(s.spec.accepted_per_position.size(), 0);
  for (std::size_t i = 0; i < s.spec.accepted_per_position.size(); ++i)
    f.spec.accepted_per_position[i] += s.spec.accepted_per_position[i];
}

// Adds one engine's requests, as the client sees them, into the fleet's.
void add_requests(ReplaySummary& f, const ReplaySummary& s) {
  f.requests_total += s.requests_total;
  f.requests_finished += s.requests_finished;
  f.requests_rejected += s.requests_rejected;
  f.prompt_tokens += s.prompt_tokens;
  f.output_tokens += s.output_tokens;
  f.admitted_prompt_tokens += s.admitted_prompt_tokens;
  f.admitted_hit_tokens += s.admitted_hit_tokens;
  f.admitted_tier_tokens += s.admitted_tier_tokens;
}

}  // namespace

StatusOr<FleetSummary> FleetReplay::summarize() {
  FleetSummary out;
  ReplaySummary& f = out.fleet;
  f.measured_total_ns = -1;
  LatencyRecord latency;
  std::int64_t max_routed = 0, all_routed = 0;
  for (std::size_t r = 0; r < engines_.size(); ++r) {
    Engine& e = *engines_[r];
    auto s = e.replayer->end();
    if (!s.ok()) return s.status().with_context("replica " + std::to_string(r) + ": ");
    add_work(f, *s, static_cast<int>(r));
    if (!is_prefill(static_cast<int>(r))) {  // a prefill engine's requests go on to decode
      add_requests(f, *s);
      latency.merge(e.replayer->latency_record());
    }
    if (e.remote != nullptr) {
      pd_.blocks_loaded += s->tiers.empty() ? 0 : s->tiers[0].loaded_blocks;
      pd_.blocks_registered += e.remote->registered_blocks();
    }
    routes_->record_replica_digest(static_cast<int>(r), s->digest);
    out.replicas.push_back({e.routed, std::move(*s)});
    max_routed = std::max(max_routed, e.routed);
    all_routed += e.routed;
  }
  f.requests_total += pd_.prefill_rejected;  // they never reached a decode engine
  f.requests_rejected += pd_.prefill_rejected;
  f.hit_rate = rate_or_zero(f.cache.hits, f.cache.queries);
  f.request_hit_rate = rate_or_zero(f.admitted_hit_tokens, f.admitted_prompt_tokens);
  out.pd = pd_;
  const ReplayOptions& o = config_.run.replay;
  latency.summarize(f, {o.metric_percentiles, o.goodput, o.overload_ttft_ms});
  f.digest = routes_->digest_hex();
  const double mean = static_cast<double>(all_routed) / static_cast<double>(engines_.size());
  out.load_imbalance = mean > 0 ? static_cast<double>(max_routed) / mean : 0;
  out.events_delivered = notices_->delivered;
  out.events_lost = notices_->lost;
  return out;
}

}  // namespace kv::replay
