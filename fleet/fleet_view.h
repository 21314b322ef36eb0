// FleetView: the fleet as a router knows it. It is built only from what reaches the router: the
// replicas' KV events (a KvIndexer), their load reports, and the router's own record of the
// requests it routed and has not yet been told are finished. It never reads a replica directly,
// so it is exactly as stale as what it was fed.
//
// Invariants (check_invariants):
//   1. replica(r).active_requests is the number of open routed requests on r, and
//      replica(r).active_blocks the sum of their ceil(prompt_tokens / block_size);
//   2. every load report's kv_usage lies in [0, 1] and its counts are non-negative.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "fleet/kv_indexer.h"
#include "model/block_hash.h"
#include "model/kv_events.h"

namespace kv::fleet {

// A replica's load as it last reported it (vLLM's scheduler stats: num_running_reqs,
// num_waiting_reqs, kv_cache_usage). All zero until the first report.
struct LoadReport {
  int running = 0;
  int waiting = 0;
  double kv_usage = 0.0;  // fraction of the KV cache in use, in [0, 1]
};

struct ReplicaView {
  LoadReport load;                 // the last report fed with on_load
  int active_requests = 0;         // routed here, not yet reported finished
  std::int64_t active_blocks = 0;  // sum of ceil(prompt_tokens / block_size) over those
};

class FleetView {
 public:
  explicit FleetView(int num_replicas);

  int num_replicas() const { return static_cast<int>(replicas_.size()); }
  const ReplicaView& replica(int r) const;
  const KvIndexer& cache() const { return cache_; }

  void apply_events(int replica, std::span<const KvEvent> events);
  void apply_load(int replica, const LoadReport& report);
  void add_routed(const std::string& request_id, int replica, std::int64_t blocks);
  // Closes a routed request; returns false (and changes nothing) for an id that is not open on
  // `replica`.
  bool remove_finished(const std::string& request_id, int replica);

  void check_invariants() const;

 private:
  struct Open {
    int replica = 0;
    std::int64_t blocks = 0;
  };
  ReplicaView& at(int r);

  std::vector<ReplicaView> replicas_;
  KvIndexer cache_;
  std::map<std::string, Open> open_;  // request id -> where it went; ordered, never iterated for decisions
};

}  // namespace kv::fleet
