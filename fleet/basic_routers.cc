#include "fleet/basic_routers.h"

namespace kv::fleet {

int least_requests_replica(const FleetView& view) {
  int best = 0;
  int best_load = view.replica(0).load.running + view.replica(0).load.waiting;
  for (int r = 1; r < view.num_replicas(); ++r) {
    const int load = view.replica(r).load.running + view.replica(r).load.waiting;
    if (load < best_load) {
      best = r;
      best_load = load;
    }
  }
  return best;
}

int RoundRobinRouter::choose(const RouteRequest&) { return static_cast<int>(next_++ % num_replicas()); }

int RandomRouter::choose(const RouteRequest&) { return random_.index(num_replicas()); }

int LeastRequestsRouter::choose(const RouteRequest&) { return least_requests_replica(view()); }

int LeastKvRouter::choose(const RouteRequest&) {
  int best = 0;
  for (int r = 1; r < num_replicas(); ++r) {
    if (view().replica(r).load.kv_usage < view().replica(best).load.kv_usage) best = r;
  }
  return best;
}

int SessionRouter::choose(const RouteRequest& request) {
  if (!request.session_id.empty()) {
    auto it = home_.find(request.session_id);
    if (it != home_.end()) return it->second;
  }
  return least_requests_replica(view());
}

void SessionRouter::on_routed(const RouteRequest& request, int replica) {
  if (!request.session_id.empty()) home_.try_emplace(request.session_id, replica);
}

}  // namespace kv::fleet
