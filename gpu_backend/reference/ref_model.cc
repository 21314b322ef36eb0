#include "gpu_backend/reference/ref_model.h"

#include <cmath>

#include "gpu_backend/reference/seeded_init.h"
#include "model/util/check.h"

namespace kv::gpuref {

std::vector<float> seeded_tensor(std::uint64_t seed, std::uint32_t tensor_id, std::int64_t count, float scale,
                                 DType dtype) {
  std::vector<float> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    out[static_cast<std::size_t>(i)] =
        round_to(dtype, seeded_weight(seed, tensor_id, static_cast<std::uint64_t>(i), scale));
  }
  return out;
}

RefModel RefModel::generate(const ModelConfig& c, std::uint64_t seed, DType dtype) {
  RefModel m;
  m.config = c;
  m.dtype = dtype;
  const std::int64_t h = c.hidden;
  m.embedding = seeded_tensor(seed, tensor_id(TensorKind::kEmbedding, 0), c.vocab * h, kEmbeddingScale, dtype);
  for (int l = 0; l < c.num_layers; ++l) {
    RefLayerWeights w;
    w.attn_norm.assign(static_cast<std::size_t>(h), 1.0f);
    w.mlp_norm.assign(static_cast<std::size_t>(h), 1.0f);
    w.qkv = seeded_tensor(seed, tensor_id(TensorKind::kQkv, l), c.qkv_dim() * h, uniform_scale(c.hidden), dtype);
    w.o_proj = seeded_tensor(seed, tensor_id(TensorKind::kOProj, l), h * c.q_dim(), uniform_scale(c.q_dim()), dtype);
    w.gate_up = seeded_tensor(seed, tensor_id(TensorKind::kGateUp, l), 2LL * c.intermediate * h,
                              uniform_scale(c.hidden), dtype);
    w.down =
        seeded_tensor(seed, tensor_id(TensorKind::kDown, l), h * c.intermediate, uniform_scale(c.intermediate), dtype);
    m.layers.push_back(std::move(w));
  }
  m.final_norm.assign(static_cast<std::size_t>(h), 1.0f);
  m.inv_freq = rope_inv_freq(c);
  return m;
}

namespace {

KvLayout layout_of(const RefEngineOptions& o) {
  StatusOr<KvLayout> layout = make_kv_layout(o.kv_cache_groups, o.model.num_layers);
  KV_CHECK(layout.ok(), layout.status().message());
  return *layout;
}

}  // namespace

RefEngine::RefEngine(const RefEngineOptions& options)
    : options_(options),
      model_(RefModel::generate(options.model, options.seed, options.dtype)),
      layout_(layout_of(options)),
      tables_(options.max_rows, options.max_blocks_per_row, options.num_blocks, layout_.group_windows,
              layout_.plan_state_block_sizes()) {
  for (int t = 0; t < layout_.num_tensors; ++t) {
    caches_.emplace_back(options.num_blocks, options.block_size, options.model.num_kv_heads, options.model.head_dim);
  }
}

RefBlockTable RefEngine::dense_table(int group) const {
  RefBlockTable t;
  t.row_stride = tables_.max_blocks_per_row();
  t.table.assign(static_cast<std::size_t>(tables_.max_rows()) * static_cast<std::size_t>(t.row_stride), 0);
  for (int r = 0; r < tables_.max_rows(); ++r) {
    const auto& row = tables_.row(r, group);
    for (std::size_t i = 0; i < row.size(); ++i) {
      t.table[static_cast<std::size_t>(r) * static_cast<std::size_t>(t.row_stride) + i] = row[i];
    }
  }
  return t;
}

StatusOr<RefStepOutput> RefEngine::execute(const StepPlan& plan) {
  if (plan.block_size != options_.block_size) {
    return Status::error("step " + std::to_string(plan.step) + ": plan block_size " + std::to_string(plan.block_size) +
                         " differs from the engine's " + std::to_string(options_.block_size));
  }
  Status st = tables_.apply(plan, nullptr);
  if (!st.ok()) return st;
  StatusOr<FlatBatch> batch = build_flat_batch(plan, tables_, options_.model.vocab);
  if (!batch.ok()) return batch.status();
  RefStepOutput out;
  out.batch = std::move(batch.value());
  for (int g = 0; g < layout_.num_groups(); ++g) {
    if (layout_.is_state_group(g)) {  // a Mamba group has no per-token slots
      out.slots.emplace_back(out.batch.token_ids.size(), -1);
      continue;
    }
    out.slots.push_back(
        slot_mapping(out.batch.rows, out.batch.positions, dense_table(g), options_.block_size, !layout_.plain()));
  }
  states_ = plan_mamba_states(plan, tables_, layout_);
  for (int l = 0; l < options_.model.num_layers; ++l) {  // align moves, before the step
    if (!layout_.is_mamba_layer(l)) continue;
    RefKvCache& cache = caches_[static_cast<std::size_t>(layout_.layer_tensor[static_cast<std::size_t>(l)])];
    copy_states(states_.copies[static_cast<std::size_t>(layout_.layer_group[static_cast<std::size_t>(l)])],
                state_page_floats(), options_.model.kv_dim(), cache.k.data());
  }
  out.final_hidden = forward(out.batch, out.slots);
  return out;
}

std::vector<float> RefEngine::forward(const FlatBatch& batch, const std::vector<std::vector<std::int64_t>>& slots) {
  const ModelConfig& c = options_.model;
  const DType dt = options_.dtype;
  const std::int64_t n = batch.num_tokens();
  const auto sz = [](std::int64_t a, std::int64_t b) { return static_cast<std::size_t>(a * b); };
  std::vector<float> resid(sz(n, c.hidden));
  std::vector<float> x(sz(n, c.hidden));
  std::vector<float> qkv(sz(n, c.qkv_dim()));
  std::vector<float> attn(sz(n, c.q_dim()));
  std::vector<float> gu(sz(n, 2LL * c.intermediate));
  std::vector<float> act(sz(n, c.intermediate));
  std::vector<RefBlockTable> tables;
  for (int g = 0; g < layout_.num_groups(); ++g) tables.push_back(dense_table(g));
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  embedding(batch.token_ids, model_.embedding.data(), c.hidden, resid.data());
  for (int l = 0; l < c.num_layers; ++l) {
    const RefLayerWeights& w = model_.layers[static_cast<std::size_t>(l)];
    const auto g = static_cast<std::size_t>(layout_.layer_group[static_cast<std::size_t>(l)]);
    RefKvCache& cache = caches_[static_cast<std::size_t>(layout_.layer_tensor[static_cast<std::size_t>(l)])];
    rmsnorm(resid.data(), n, c.hidden, w.attn_norm.data(), c.rms_eps, dt, x.data());
    linear(x.data(), n, c.hidden, w.qkv.data(), c.qkv_dim(), qkv.data(), dt, false);
    if (layout_.is_mamba_layer(l)) {
      MambaScanArgs scan;
      scan.qkv = qkv.data();
      scan.qkv_stride = c.qkv_dim();
      scan.k_offset = c.q_dim();
      scan.query_start_loc = &batch.query_start_loc;
      scan.steps = &states_.steps[g];
      scan.num_tokens = n;
      scan.num_heads = c.num_heads;
      scan.kv_heads = c.num_kv_heads;
      scan.head_dim = c.head_dim;
      scan.page_floats = state_page_floats();
      scan.round = dt;
      mamba_scan(scan, cache.k.data(), attn.data());
    } else {
      const AttentionMask mask{layout_.layer_window(l), !layout_.plain()};
      rotary(qkv.data(), c.qkv_dim(), batch.positions, c.num_heads, c.num_kv_heads, c.head_dim, model_.inv_freq, dt);
      cache_write(qkv.data() + c.q_dim(), qkv.data() + c.q_dim() + c.kv_dim(), c.qkv_dim(), slots[g], &cache);
      paged_attention(qkv.data(), c.qkv_dim(), batch.rows, batch.positions, tables[g], cache, c.num_heads, scale, dt,
                      attn.data(), mask);
    }
    linear(attn.data(), n, c.q_dim(), w.o_proj.data(), c.hidden, resid.data(), dt, true);
    rmsnorm(resid.data(), n, c.hidden, w.mlp_norm.data(), c.rms_eps, dt, x.data());
    linear(x.data(), n, c.hidden, w.gate_up.data(), 2 * c.intermediate, gu.data(), dt, false);
    silu_mul(gu.data(), n, c.intermediate, dt, act.data());
    linear(act.data(), n, c.intermediate, w.down.data(), c.hidden, resid.data(), dt, true);
  }
  rmsnorm(resid.data(), n, c.hidden, model_.final_norm.data(), c.rms_eps, dt, x.data());
  return x;
}

}  // namespace kv::gpuref
