#include "replay/kv_transfer.h"

#include <array>
#include <cmath>

#include "model/util/parse_number.h"
#include "sim/fault_injection.h"
#include "sim/sim_device.h"

namespace kv::replay {

namespace {

const std::array<KvTransferLink, 4>& presets() {
  static const std::array<KvTransferLink, 4> links = {{
      {"ib-ndr", 50e9, "InfiniBand NDR, 400 Gb/s per port (line rate; NVIDIA ConnectX-7)"},
      {"roce-200", 25e9, "Ethernet RoCE, 200 Gb/s per port (line rate)"},
      {"nvlink-h100", 380e9,
       "HGX H100 SXM GPU to GPU, 380 GB/s one way (CUDA p2pBandwidthLatencyTest, NVIDIA/nccl issue 1264)"},
      {"pcie4", 26.34e9, "PCIe Gen4 x16 GPU to GPU, 26.34 GB/s (nvbandwidth, NVIDIA/nvbandwidth issue 50)"},
  }};
  return links;
}

// The simulator under a run's device (inside a fault injector too), or null.
sim::SimDevice* sim_of(ReplayRun& run) {
  if (run.faults != nullptr) return &run.faults->inner();
  return dynamic_cast<sim::SimDevice*>(run.device.get());
}

}  // namespace

std::int64_t KvTransferLink::transfer_ns(std::int64_t bytes) const {
  if (bytes <= 0) return 0;
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(bytes) * 1e9 / bytes_per_s));
}

StatusOr<KvTransferLink> find_kv_transfer_link(std::string_view name_or_gbps) {
  for (const KvTransferLink& l : presets()) {
    if (l.name == name_or_gbps) return l;
  }
  const std::optional<double> gbps = parse_finite_double(name_or_gbps);
  if (gbps && *gbps > 0 && *gbps <= 1e5) {
    return KvTransferLink{std::string(name_or_gbps) + " GB/s", *gbps * 1e9, "given"};
  }
  std::string names;
  for (const KvTransferLink& l : presets()) names += (names.empty() ? "" : ", ") + l.name;
  return Status::error("--kv-transfer-link: '" + std::string(name_or_gbps) + "' is neither a preset (" + names +
                       ") nor a bandwidth in GB/s from 0 to 1e5");
}

std::int64_t hand_off_blocks(ReplayRun& prefill, ReplayRun& decode, std::span<const BlockHash> hashes) {
  const BlockPool& from = prefill.scheduler->kv_cache().pool();
  const BlockPool& to = decode.scheduler->kv_cache().pool();
  sim::SimDevice* from_sim = sim_of(prefill);
  sim::SimDevice* to_sim = sim_of(decode);
  std::int64_t lacking = 0;
  for (const BlockHash& h : hashes) {
    if (to.get_cached_block(h) == kNoBlock) ++lacking;
    const BlockId b = from.get_cached_block(h);
    if (from_sim != nullptr && to_sim != nullptr && b != kNoBlock) {
      to_sim->shadow().keep_tier_copy(h, from_sim->shadow().block_fingerprints(b));
    }
  }
  return lacking;
}

}  // namespace kv::replay
