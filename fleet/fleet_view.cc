#include "fleet/fleet_view.h"

#include "model/util/check.h"

namespace kv::fleet {

FleetView::FleetView(int num_replicas) : replicas_(static_cast<std::size_t>(num_replicas)), cache_(num_replicas) {}

const ReplicaView& FleetView::replica(int r) const {
  KV_CHECK(r >= 0 && r < num_replicas(), "replica=" << r << " of " << num_replicas());
  return replicas_[static_cast<std::size_t>(r)];
}

ReplicaView& FleetView::at(int r) { return const_cast<ReplicaView&>(static_cast<const FleetView&>(*this).replica(r)); }

void FleetView::apply_events(int replica, std::span<const KvEvent> events) {
  for (const KvEvent& e : events) cache_.apply(replica, e);
}

void FleetView::apply_load(int replica, const LoadReport& report) {
  KV_CHECK(report.running >= 0 && report.waiting >= 0 && report.kv_usage >= 0.0 && report.kv_usage <= 1.0,
           "replica " << replica << ": running=" << report.running << " waiting=" << report.waiting
                      << " kv_usage=" << report.kv_usage);
  at(replica).load = report;
}

void FleetView::add_routed(const std::string& request_id, int replica, std::int64_t blocks) {
  ReplicaView& view = at(replica);
  auto [it, inserted] = open_.emplace(request_id, Open{replica, blocks});
  KV_CHECK(inserted, "request " << request_id << " routed twice (open on replica " << it->second.replica << ")");
  ++view.active_requests;
  view.active_blocks += blocks;
}

bool FleetView::remove_finished(const std::string& request_id, int replica) {
  auto it = open_.find(request_id);
  if (it == open_.end() || it->second.replica != replica) return false;
  ReplicaView& view = at(replica);
  --view.active_requests;
  view.active_blocks -= it->second.blocks;
  open_.erase(it);
  return true;
}

void FleetView::check_invariants() const {
  std::vector<ReplicaView> expected(replicas_.size());
  for (const auto& [id, open] : open_) {
    ++expected[static_cast<std::size_t>(open.replica)].active_requests;
    expected[static_cast<std::size_t>(open.replica)].active_blocks += open.blocks;
  }
  for (int r = 0; r < num_replicas(); ++r) {
    const ReplicaView& v = replica(r);
    const ReplicaView& e = expected[static_cast<std::size_t>(r)];
    KV_CHECK(v.active_requests == e.active_requests && v.active_blocks == e.active_blocks,
             "replica " << r << ": active " << v.active_requests << "/" << v.active_blocks << " blocks, open "
                        << e.active_requests << "/" << e.active_blocks);
    KV_CHECK(v.load.kv_usage >= 0.0 && v.load.kv_usage <= 1.0, "replica " << r << " kv_usage " << v.load.kv_usage);
  }
  cache_.check_invariants();
}

}  // namespace kv::fleet
