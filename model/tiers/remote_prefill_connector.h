// RemotePrefillConnector: the decode side of disaggregated prefill, as vLLM's NixlConnector on
// a decode instance. A request whose prompt a prefill engine computed arrives with its prompt's
// block hashes, registered by expect(); at its first admission the blocks of that prompt the
// local prefix cache misses are loaded (kRemoteTier transfers in the plan: the fleet timed the
// transfer before the request arrived, so the step copies nothing) instead of computed. Every
// other request, and a request admitted again after a preemption, matches nothing.
// Invariants:
//   1. A match continues the local hit over the registered hashes, within the lookup bound
//      (KvConnector invariant 2): the last prompt token is always computed here.
//   2. A registered request is loaded at most once: its registration ends at its admission.
//   3. Every load names a hash that was registered for that request (what the prefill side
//      stored): loaded blocks never exceed registered ones.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "model/tiers/kv_connector.h"

namespace kv {

class RemotePrefillConnector final : public KvConnector {
 public:
  RemotePrefillConnector(int block_size, std::int64_t bytes_per_block);

  // `id`'s prompt blocks, in chain order, were computed remotely and received.
  void expect(const RequestId& id, std::vector<BlockHash> prompt_hashes);
  std::int64_t registered_blocks() const { return registered_blocks_; }

  std::int64_t get_num_new_matched_tokens(const Request& request, std::int64_t num_local_computed) override;
  void update_state_after_alloc(const Request& request, std::span<const BlockId> table, std::int64_t num_local_computed,
                                std::int64_t num_external) override;
  void on_blocks_evicted(std::span<const EvictedBlock>) override {}
  void on_request_scheduled(const Request&, std::span<const BlockId>, std::int64_t, std::int64_t) override {}
  void build_connector_meta(StepPlan& plan) override;
  std::vector<TierFigures> figures() const override { return {figures_}; }

 private:
  int block_size_;
  std::int64_t bytes_per_block_;
  std::unordered_map<RequestId, std::vector<BlockHash>> expected_;  // lookup only, never iterated
  std::vector<TierTransfer> pending_loads_;
  std::int64_t registered_blocks_ = 0;
  TierFigures figures_;
};

}  // namespace kv
