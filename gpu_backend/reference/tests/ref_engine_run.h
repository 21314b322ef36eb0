// What the hybrid and Mamba reference tests share: a RefEngine sized for the scenarios of
// gpu_backend/reference/hybrid_scenario.h, and the hidden state of every computed position.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "gpu_backend/reference/hybrid_scenario.h"
#include "gpu_backend/reference/ref_model.h"

namespace kv::gpuref::scenario {

// (request, position) -> the final hidden state of that position.
using HiddenLog = std::map<std::pair<RequestId, std::int64_t>, std::vector<float>>;

inline RefEngineOptions engine_options(const std::vector<KvCacheGroupSpec>& groups, int block_size) {
  RefEngineOptions o;
  o.dtype = DType::kBf16;
  o.block_size = block_size;
  o.num_blocks = kHybridNumBlocks;
  o.max_rows = kHybridMaxSeqs;
  o.max_blocks_per_row = kHybridMaxModelLen / block_size;
  o.kv_cache_groups = groups;
  return o;
}

// Files each scheduled token's hidden state under its request and position.
inline void record_hidden(const StepPlan& plan, const RefStepOutput& out, int hidden, HiddenLog& log) {
  const auto h = static_cast<std::size_t>(hidden);
  std::size_t t = 0;
  for (const ScheduledRequest& r : plan.requests) {
    for (std::size_t j = 0; j < r.token_ids.size(); ++j, ++t) {
      log[{r.id, r.num_computed_tokens + static_cast<std::int64_t>(j)}] =
          std::vector<float>(out.final_hidden.begin() + static_cast<std::ptrdiff_t>(t * h),
                             out.final_hidden.begin() + static_cast<std::ptrdiff_t>((t + 1) * h));
    }
  }
}

}  // namespace kv::gpuref::scenario
