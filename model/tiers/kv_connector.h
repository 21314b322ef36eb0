// KvConnector: the scheduler-side seam to KV storage outside GPU memory, as vLLM v1's
// KVConnectorBase_V1 (get_num_new_matched_tokens, update_state_after_alloc,
// build_connector_meta). The scheduler asks it, after the local prefix-cache lookup, how many
// further prompt tokens it can load; those count as computed (no prefill compute, no token
// budget), their blocks are allocated in GPU memory and the connector plans the loads that
// fill them. Implementations: TierConnector (model/tiers/tier_connector.h, host memory and disk).
// Invariants (for any implementation):
//   1. get_num_new_matched_tokens changes nothing observable: the scheduler may ask again
//      (head-of-line admission retries) and only update_state_after_alloc commits a match.
//   2. A match is a whole number of blocks that continues the local hit, and local hit plus
//      match stay within the lookup bound ((num_tokens - 1) / block_size blocks): the last
//      prompt token is always computed.
//   3. Deterministic: the same calls in the same order give the same answers and plans.
// Without a connector the scheduler's decisions are exactly vLLM's (no call is made).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/block_hash.h"
#include "model/block_pool.h"
#include "model/request.h"
#include "model/sched/step_plan.h"
#include "model/types.h"

namespace kv {

// One tier's figures over a run (what the replay summary reports).
struct TierFigures {
  std::string name;  // "host", "disk"
  std::int64_t capacity_blocks = 0;
  std::int64_t capacity_bytes = 0;
  std::int64_t hit_tokens = 0;        // tokens loaded from this tier, over every admission
  std::int64_t first_hit_tokens = 0;  // the same, first admissions only (per request once)
  std::int64_t loaded_blocks = 0, loaded_bytes = 0;
  std::int64_t stored_blocks = 0, stored_bytes = 0;  // copies into this tier
  std::int64_t dropped_blocks = 0;                   // entries this tier's LRU let go
  std::int64_t peak_blocks = 0;
};

class KvConnector {
 public:
  virtual ~KvConnector() = default;

  // vLLM get_num_new_matched_tokens: tokens after the first `num_local_computed` that the
  // connector can load for `request` (0: none). Invariants 1 and 2.
  virtual std::int64_t get_num_new_matched_tokens(const Request& request, std::int64_t num_local_computed) = 0;

  // vLLM update_state_after_alloc: `request` was admitted with `num_external` tokens of the
  // connector's match after `num_local_computed` local ones; `table` is its whole block table.
  virtual void update_state_after_alloc(const Request& request, std::span<const BlockId> table,
                                        std::int64_t num_local_computed, std::int64_t num_external) = 0;

  // GPU blocks the pool just evicted from its prefix cache (their contents are still intact
  // until this step's kernels run).
  virtual void on_blocks_evicted(std::span<const EvictedBlock> evicted) = 0;

  // A request scheduled in this step computes positions [num_computed, num_computed +
  // num_new); `table` is its whole block table.
  virtual void on_request_scheduled(const Request& request, std::span<const BlockId> table, std::int64_t num_computed,
                                    std::int64_t num_new) = 0;

  // vLLM build_connector_meta: moves this step's transfers into the plan.
  virtual void build_connector_meta(StepPlan& plan) = 0;

  virtual std::vector<TierFigures> figures() const = 0;
};

}  // namespace kv
