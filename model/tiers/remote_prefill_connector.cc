#include "model/tiers/remote_prefill_connector.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv {

RemotePrefillConnector::RemotePrefillConnector(int block_size, std::int64_t bytes_per_block)
    : block_size_(block_size), bytes_per_block_(bytes_per_block) {
  figures_.name = "remote-prefill";
}

void RemotePrefillConnector::expect(const RequestId& id, std::vector<BlockHash> prompt_hashes) {
  registered_blocks_ += static_cast<std::int64_t>(prompt_hashes.size());
  expected_[id] = std::move(prompt_hashes);
}

std::int64_t RemotePrefillConnector::get_num_new_matched_tokens(const Request& request,
                                                                std::int64_t num_local_computed) {
  const auto it = expected_.find(request.id());
  if (it == expected_.end()) return 0;
  const std::int64_t bs = block_size_;
  KV_CHECK(num_local_computed % bs == 0, "local hit of " << num_local_computed << " tokens is not whole blocks");
  const auto bound = std::min<std::int64_t>(std::max<std::int64_t>(request.num_tokens() - 1, 0) / bs,
                                            static_cast<std::int64_t>(it->second.size()));
  return std::max<std::int64_t>(bound - num_local_computed / bs, 0) * bs;
}

void RemotePrefillConnector::update_state_after_alloc(const Request& request, std::span<const BlockId> table,
                                                      std::int64_t num_local_computed, std::int64_t num_external) {
  const auto it = expected_.find(request.id());
  if (it == expected_.end()) return;
  const std::int64_t bs = block_size_;
  for (std::int64_t i = num_local_computed / bs; i < (num_local_computed + num_external) / bs; ++i) {
    const auto k = static_cast<std::size_t>(i);
    KV_CHECK(k < table.size() && k < it->second.size(), "remote load past the table of " << request.id());
    pending_loads_.push_back({table[k], it->second[k], kRemoteTier, request.id(), i});
    ++figures_.loaded_blocks;
    figures_.loaded_bytes += bytes_per_block_;
    figures_.hit_tokens += bs;
    figures_.first_hit_tokens += bs;
  }
  expected_.erase(it);  // invariant 2
}

void RemotePrefillConnector::build_connector_meta(StepPlan& plan) {
  plan.tier_loads.insert(plan.tier_loads.end(), pending_loads_.begin(), pending_loads_.end());
  pending_loads_.clear();
}

}  // namespace kv
