// Router: picks the replica for each arriving request, from the fleet as the router knows it
// (FleetView: the KV events and load reports it was fed, and its own record of what it routed).
// The fleet feeds events and load reports whenever they reach the router -- late, in batches --
// and calls route() once per arriving request; route() records its own decision (active
// requests and blocks, and whatever index the router keeps of its routing), and on_finished()
// closes it. Implementations override choose() and, if they index their own decisions,
// on_routed(). Routers are made by make_router (fleet/router_factory.h).
//
// Invariants:
//   1. deterministic: the same construction (seed included) and the same sequence of calls give
//      the same choices; randomness comes only from the router's seeded generator;
//   2. route() returns an index in [0, num_replicas()) and counts the request as active there
//      until on_finished(request_id, that index);
//   3. a router sees no replica state that was not fed to it (events, load reports).
//   4. request ids are unique among open requests (routing an open id again is a broken invariant).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/fleet_view.h"
#include "model/block_hash.h"
#include "model/kv_events.h"

namespace kv::fleet {

struct RouteRequest {
  std::string id;
  std::string session_id;               // empty: no session
  int prompt_tokens = 0;                // > 0
  int block_size = 16;                  // tokens per block of block_hashes
  std::vector<BlockHash> block_hashes;  // the prompt's full blocks, in chain order
  std::int64_t now_ns = 0;              // the router's clock at arrival (non-decreasing)
  std::int64_t blocks() const { return (prompt_tokens + block_size - 1) / block_size; }  // ceil
};

class Router {
 public:
  virtual ~Router() = default;
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  virtual std::string_view name() const = 0;
  // What the router reads beyond its own decisions: the fleet hashes each prompt's blocks, turns
  // the engines' KV events on, and sends load reports, only for a router that reads them.
  virtual bool reads_block_hashes() const { return false; }
  virtual bool reads_kv_events() const { return false; }
  virtual bool reads_load_reports() const { return true; }
  int num_replicas() const { return view_.num_replicas(); }
  const FleetView& view() const { return view_; }

  void on_events(int replica, std::span<const KvEvent> events) { view_.apply_events(replica, events); }
  void on_load(int replica, const LoadReport& report) { view_.apply_load(replica, report); }
  int route(const RouteRequest& request);
  // Closes a request route() sent to `replica`; an id that is not open there is ignored.
  void on_finished(const std::string& request_id, int replica) { view_.remove_finished(request_id, replica); }

 protected:
  explicit Router(int num_replicas) : view_(num_replicas) {}
  virtual int choose(const RouteRequest& request) = 0;
  // Called after the decision is recorded in view(): routers that index their own routing.
  virtual void on_routed(const RouteRequest& request, int replica) {
    static_cast<void>(request);
    static_cast<void>(replica);
  }

 private:
  FleetView view_;
};

}  // namespace kv::fleet
