// The load-only routers: they ignore the prompt's blocks.
//   round-robin     replica k mod N for the k-th request (k from 0).
//   random          uniform over the replicas, from the seeded generator.
//   least-requests  fewest running + waiting requests by the last load reports; ties to the
//                   lowest index.
//   least-kv        lowest reported KV usage fraction; ties to the lowest index.
//   session         affinity: a session goes where its first request went; a new session, or
//                   a request without one, goes where least-requests would send it.
// They choose from FleetView only, so a replica that has not reported since it filled up still
// looks as it last reported.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fleet/router.h"
#include "fleet/seeded_random.h"

namespace kv::fleet {

// The replica with the fewest running + waiting requests in its last report (lowest index on ties).
int least_requests_replica(const FleetView& view);

class RoundRobinRouter final : public Router {
 public:
  explicit RoundRobinRouter(int num_replicas) : Router(num_replicas) {}
  std::string_view name() const override { return "round-robin"; }
  bool reads_load_reports() const override { return false; }

 protected:
  int choose(const RouteRequest& request) override;

 private:
  std::int64_t next_ = 0;  // requests routed so far
};

class RandomRouter final : public Router {
 public:
  RandomRouter(int num_replicas, std::uint64_t seed) : Router(num_replicas), random_(seed) {}
  std::string_view name() const override { return "random"; }
  bool reads_load_reports() const override { return false; }

 protected:
  int choose(const RouteRequest& request) override;

 private:
  SeededRandom random_;
};

class LeastRequestsRouter final : public Router {
 public:
  explicit LeastRequestsRouter(int num_replicas) : Router(num_replicas) {}
  std::string_view name() const override { return "least-requests"; }

 protected:
  int choose(const RouteRequest& request) override;
};

class LeastKvRouter final : public Router {
 public:
  explicit LeastKvRouter(int num_replicas) : Router(num_replicas) {}
  std::string_view name() const override { return "least-kv"; }

 protected:
  int choose(const RouteRequest& request) override;
};

class SessionRouter final : public Router {
 public:
  explicit SessionRouter(int num_replicas) : Router(num_replicas) {}
  std::string_view name() const override { return "session"; }

 protected:
  int choose(const RouteRequest& request) override;
  void on_routed(const RouteRequest& request, int replica) override;

 private:
  std::map<std::string, int> home_;  // session id -> the replica its first request went to
};

}  // namespace kv::fleet
