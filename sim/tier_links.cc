#include "sim/tier_links.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "model/util/parse_number.h"

namespace kv::sim {

namespace {

__extension__ typedef __int128 Int128;

std::int64_t transfer_ns(std::int64_t bytes, std::int64_t bytes_per_s) {
  return static_cast<std::int64_t>((static_cast<Int128>(bytes) * 1'000'000'000 + bytes_per_s - 1) / bytes_per_s);
}

// Published per-direction peaks of a x16 link; the latency is a per-transfer overhead
// (copy launch and DMA set-up), our assumption, not a published figure.
//   pcie4: PCIe 4.0, 16 GT/s per lane, 128b/130b encoding: 31.5 GB/s per direction
//          (PCI-SIG, PCI Express Base Specification 4.0).
//   pcie5: PCIe 5.0, 32 GT/s per lane: 63 GB/s per direction (PCI-SIG, Base Specification 5.0).
//   nvlink-c2c: NVIDIA Grace Hopper's CPU-GPU NVLink-C2C, 900 GB/s total, 450 GB/s per
//          direction (NVIDIA GH200 Grace Hopper Superchip datasheet / architecture whitepaper).
const LinkSpec kLinks[] = {
    {"pcie4", 31'500'000'000, 10'000},
    {"pcie5", 63'000'000'000, 10'000},
    {"nvlink-c2c", 450'000'000'000, 2'000},
};

}  // namespace

StatusOr<LinkSpec> parse_link(std::string_view text) {
  for (const LinkSpec& l : kLinks) {
    if (l.name == text) return l;
  }
  const std::string t(text);
  const std::size_t colon = t.find(':');
  if (colon != std::string::npos) {
    const double gbps = parse_finite_double(t.substr(0, colon)).value_or(0);
    const double us = parse_finite_double(t.substr(colon + 1)).value_or(-1);
    if (gbps > 0 && gbps <= 1e9 && us >= 0 && us <= 1e9) {
      return LinkSpec{t, static_cast<std::int64_t>(std::llround(gbps * 1e9)), std::llround(us * 1000)};
    }
  }
  return Status::error("'" + t + "' is not a link: pcie4, pcie5, nvlink-c2c, or GBPS:LATENCY_US (e.g. 25:10)");
}

std::int64_t TierCostOptions::load_ns(std::int64_t host_blocks, std::int64_t disk_blocks) const {
  std::int64_t ns = 0;
  if (host_blocks > 0) ns += host_link.latency_ns + transfer_ns(host_blocks * bytes_per_block, host_link.bytes_per_s);
  if (disk_blocks > 0) {
    const std::int64_t bw = std::min(disk_bytes_per_s, host_link.bytes_per_s);
    ns += disk_latency_ns + host_link.latency_ns + transfer_ns(disk_blocks * bytes_per_block, bw);
  }
  return ns;
}

std::int64_t TierCostOptions::store_ns(std::int64_t blocks) const {
  if (blocks <= 0) return 0;
  return host_link.latency_ns + transfer_ns(blocks * bytes_per_block, host_link.bytes_per_s);
}

}  // namespace kv::sim
