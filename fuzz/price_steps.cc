#include "fuzz/price_steps.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_target.h"
#include "sim/cost_model.h"

namespace kv::fuzz {

void price_steps(const ModelShape& model, const sim::GpuSpec& gpu, const sim::ProfileTable* profile) {
  CudaGraphConfig graphs;
  graphs.max_num_batched_tokens = 8192;
  sim::CostModel cost(model, gpu, graphs, profile);
  const std::int64_t window = sim::model_window(model);
  for (std::int64_t tokens : {1, 7, 256, 8192}) {
    sim::StepShape s;
    s.num_tokens = tokens;
    s.num_seqs = std::min<std::int64_t>(tokens, 256);
    s.num_sampled = s.num_seqs;
    s.kv_tokens_read = tokens * 64;
    s.attended_pairs = tokens * 64;
    s.num_block_ids = tokens / 16 + 1;
    s.uniform_decode = tokens == s.num_seqs;
    s.window = window;
    s.window_kv_tokens_read = window > 0 ? std::min(s.kv_tokens_read, tokens * window) : 0;
    s.window_attended_pairs = window > 0 ? std::min(s.attended_pairs, tokens * window) : 0;
    const sim::StepCost c = cost.cost(s);
    FUZZ_CHECK(c.cycles >= 0 && c.duration_ns >= 0, std::to_string(c.duration_ns));
  }
}

}  // namespace kv::fuzz
