#include "gpu_backend/reference/mamba_state.h"

#include <algorithm>
#include <cmath>

#include "model/util/check.h"

namespace kv::gpuref {

namespace {

// Invariant 1 and 2 for one sequence of Mamba group g.
StateStep state_step(const ScheduledRequest& r, std::span<const BlockId> table, int block_tokens, MambaCacheMode mode,
                     std::vector<StateCopy>* copies) {
  const std::int64_t n = r.num_computed_tokens;
  const std::int64_t end = n + static_cast<std::int64_t>(r.token_ids.size());
  StateStep s;
  s.write_block = static_cast<std::int32_t>(table[static_cast<std::size_t>((end - 1) / block_tokens)]);
  if (n > 0) s.read_block = static_cast<std::int32_t>(table[static_cast<std::size_t>((n - 1) / block_tokens)]);
  if (mode == MambaCacheMode::kAlign && s.read_block >= 0 && s.read_block != s.write_block) {
    copies->push_back({s.read_block, s.write_block});
    s.read_block = s.write_block;
  }
  return s;
}

}  // namespace

MambaStatePlan plan_mamba_states(const StepPlan& plan, const BlockTables& tables, const KvLayout& layout) {
  MambaStatePlan p;
  p.steps.resize(static_cast<std::size_t>(layout.num_groups()));
  p.copies.resize(static_cast<std::size_t>(layout.num_groups()));
  for (int g = 0; g < layout.num_groups(); ++g) {
    if (!layout.is_state_group(g)) continue;
    const auto gi = static_cast<std::size_t>(g);
    const int block_tokens = layout.group_state_block_sizes[gi];
    for (const ScheduledRequest& r : plan.requests) {
      if (r.token_ids.empty()) continue;
      const int row = tables.row_of(r.id);
      KV_CHECK(row >= 0, "request " << r.id << " has no block table");
      p.steps[gi].push_back(
          state_step(r, tables.row(row, g), block_tokens, layout.group_mamba_modes[gi], &p.copies[gi]));
    }
  }
  return p;
}

void copy_states(const std::vector<StateCopy>& copies, std::int64_t page_floats, int state_floats, float* states) {
  for (const StateCopy& c : copies) {
    std::copy_n(states + c.src * page_floats, state_floats, states + c.dst * page_floats);
  }
}

void mamba_scan(const MambaScanArgs& a, float* states, float* out) {
  const int kv_dim = a.kv_heads * a.head_dim;
  const int q_dim = a.num_heads * a.head_dim;
  const int per_kv = a.num_heads / a.kv_heads;
  std::fill_n(out, static_cast<std::size_t>(a.num_tokens * q_dim), 0.0f);
  std::vector<float> s(static_cast<std::size_t>(kv_dim));
  const std::vector<std::int32_t>& qsl = *a.query_start_loc;
  for (std::size_t seq = 0; seq < a.steps->size(); ++seq) {
    const StateStep& step = (*a.steps)[seq];
    if (step.read_block >= 0) {
      std::copy_n(states + step.read_block * a.page_floats, kv_dim, s.begin());
    } else {
      std::fill(s.begin(), s.end(), 0.0f);
    }
    for (std::int64_t t = qsl[seq]; t < qsl[seq + 1]; ++t) {
      const float* k = a.qkv + t * a.qkv_stride + a.k_offset;
      const float* v = k + kv_dim;
      for (int j = 0; j < kv_dim; ++j) {
        const float gate = 1.0f / (1.0f + std::exp(-k[j]));
        s[static_cast<std::size_t>(j)] = gate * s[static_cast<std::size_t>(j)] + (1.0f - gate) * v[j];
        const int kvh = j / a.head_dim, d = j % a.head_dim;
        for (int r = 0; r < per_kv; ++r) {
          out[t * q_dim + (kvh * per_kv + r) * a.head_dim + d] = round_to(a.round, s[static_cast<std::size_t>(j)]);
        }
      }
    }
    KV_CHECK(step.write_block >= 0, "sequence " << seq << " has no state block to write");
    std::copy(s.begin(), s.end(), states + step.write_block * a.page_floats);
  }
}

}  // namespace kv::gpuref
