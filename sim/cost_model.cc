#include "sim/cost_model.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv::sim {

namespace {

__extension__ typedef __int128 Int128;

// num / den rounded up (num >= 0, den > 0), saturating at 10^15: one kernel of one layer, or a
// conversion, never exceeds it, so the per-layer products and the DAG's sums stay far inside
// int64_t whatever a profile or a preset file says (no real step comes near it).
std::int64_t ceil_div(Int128 num, Int128 den) {
  constexpr Int128 kSaturation = 1'000'000'000'000'000;
  const Int128 q = (num + den - 1) / den;
  return static_cast<std::int64_t>(q < kSaturation ? q : kSaturation);
}

constexpr const char* kNodeNames[kNumStepNodes] = {
    "host_schedule", "h2d_block_table", "h2d_inputs", "slot_mapping", "graph_launch",        "input_norm",   "qkv_proj",
    "rotary",        "cache_write",     "attention",  "o_proj",       "post_attention_norm", "gate_up_proj", "silu_mul",
    "down_proj",     "final_norm",      "lm_head",    "d2h_sampled",  "all_reduce"};

int id(StepNode n) { return static_cast<int>(n); }

// A GEMM [m, k] x [k, n] with `in_bits` activations and `weight_bits` weights at `peak`: 2mkn
// FLOPs; reads both operands once, writes a 16-bit output.
KernelWork gemm(std::int64_t m, std::int64_t k, std::int64_t n, int in_bits, int weight_bits, std::int64_t peak) {
  const std::int64_t bits = m * k * in_bits + k * n * weight_bits + m * n * 16;
  return {2 * m * k * n, (bits + 7) / 8, peak, KernelClass::kGemm, weight_bits == 8};
}

// Sum over n' = 1..n of min(n', w): the keys a causal window-w layer reads for the first n
// positions.
std::int64_t window_pairs_upto(std::int64_t n, std::int64_t w) {
  if (n <= w) return n * (n + 1) / 2;
  return w * (w + 1) / 2 + (n - w) * w;
}

}  // namespace

std::int64_t model_window(const ModelShape& model) {
  if (model.num_layers_of(AttentionType::kSlidingWindow) > 0) return model.sliding_window;
  if (model.num_layers_of(AttentionType::kChunkedLocalAttention) > 0) return model.attention_chunk;
  return 0;
}

StepShape summarize(const StepPlan& plan, std::int64_t window) {
  StepShape s;
  s.window = window;
  bool uniform = !plan.requests.empty();
  for (const ScheduledRequest& r : plan.requests) {
    std::int64_t q = static_cast<std::int64_t>(r.token_ids.size());
    std::int64_t c = r.num_computed_tokens;
    s.num_tokens += q;
    s.num_seqs += 1;
    s.num_sampled += r.samples ? 1 : 0;
    s.kv_tokens_read += c + q;
    s.attended_pairs += q * c + q * (q + 1) / 2;
    s.num_block_ids += static_cast<std::int64_t>(r.block_ids.size());
    for (const auto& ids : r.group_block_ids) s.num_block_ids += static_cast<std::int64_t>(ids.size());
    if (window > 0) {
      s.window_kv_tokens_read += std::min(c + q, q + window - 1);
      s.window_attended_pairs += window_pairs_upto(c + q, window) - window_pairs_upto(c, window);
    }
    uniform = uniform && q == 1;
    s.encoder_tokens += r.num_encoder_tokens;
    s.encoder_pairs += r.num_encoder_tokens * r.num_encoder_tokens;
  }
  for (const TierTransfer& t : plan.tier_loads) {
    if (t.tier != kRemoteTier) (t.tier == 0 ? s.tier_host_loads : s.tier_disk_loads) += 1;  // remote: timed before
  }
  s.tier_stores_before = static_cast<std::int64_t>(plan.tier_stores_before.size());
  s.uniform_decode = uniform;
  s.cascade = plan.num_common_prefix_blocks > 0;
  return s;
}

CostModel::CostModel(const ModelShape& model, const GpuSpec& gpu, const CudaGraphConfig& graphs,
                     const ProfileTable* profile, bool async_scheduling, const TierCostOptions& tier,
                     int num_speculative_tokens)
    : model_(model),
      mamba_state_bytes_(model.mamba_state_bytes_with(num_speculative_tokens)),
      gpu_(gpu),
      dispatcher_(graphs),
      profile_(profile),
      async_scheduling_(async_scheduling),
      tier_(tier) {
  KV_CHECK(gpu_.clock_mhz > 0 && gpu_.peak_flops > 0 && gpu_.hbm_bytes_per_s > 0 && gpu_.compute_efficiency_pct > 0 &&
               gpu_.bandwidth_efficiency_pct > 0 && gpu_.h2d_bytes_per_s > 0,
           "bad gpu spec " << gpu_.name);
  KV_CHECK(model_.layers > 0 && model_.hidden > 0 && model_.heads > 0 && model_.kv_heads > 0,
           "bad model spec " << model_.name);
  for (int n = 0; n < kNumStepNodes; ++n) dag_.add_node(kNodeNames[n]);
  auto edge = [&](StepNode a, StepNode b) { dag_.add_edge(id(a), id(b)); };
  // Host prepares inputs, then two copies in parallel, then the slot-mapping kernel; the
  // host launches the graph meanwhile; the forward starts when both are done.
  edge(StepNode::kHostSchedule, StepNode::kH2dBlockTable);
  edge(StepNode::kHostSchedule, StepNode::kH2dInputs);
  edge(StepNode::kHostSchedule, StepNode::kGraphLaunch);
  edge(StepNode::kH2dBlockTable, StepNode::kSlotMapping);
  edge(StepNode::kH2dInputs, StepNode::kSlotMapping);
  edge(StepNode::kSlotMapping, StepNode::kInputNorm);
  edge(StepNode::kGraphLaunch, StepNode::kInputNorm);
  edge(StepNode::kSlotMapping, StepNode::kCacheWrite);   // cache write consumes slot mapping
  edge(StepNode::kH2dBlockTable, StepNode::kAttention);  // attention reads the block table
  for (int n = id(StepNode::kInputNorm); n < id(StepNode::kD2hSampled); ++n) {
    dag_.add_edge(n, n + 1);  // stream order
  }
  // The layers' all-reduces are one node in stream order (invariant 3): after the MLP, before
  // the final norm.
  edge(StepNode::kDownProj, StepNode::kAllReduce);
  edge(StepNode::kAllReduce, StepNode::kFinalNorm);
  if (tier_.enabled) add_tier_nodes();
  if (model_.cross_attention) {  // invariant 11: the encoder runs before the decoder's first layer
    KV_CHECK(model_.encoder_layers > 0 && model_.encoder_tokens > 0,
             "model " << model_.name << " has no encoder shape");
    encoder_node_ = dag_.add_node("encoder");
    dag_.add_edge(id(StepNode::kSlotMapping), encoder_node_);
    dag_.add_edge(id(StepNode::kGraphLaunch), encoder_node_);
    dag_.add_edge(encoder_node_, id(StepNode::kInputNorm));
  }
}

// Invariant 11: every encoder layer over the step's encoder tokens (16-bit activations and
// attention math, the model's weight format), then each decoder layer's cross K/V projection
// of the encoder outputs and its cache write.
std::int64_t CostModel::encoder_node_cycles(const StepShape& shape, std::int64_t launch) const {
  if (shape.encoder_tokens <= 0) return 0;
  const int w_bits = dtype_bits(model_.dtype);
  const int in_bits = gpu_.has_tensor_cores_for(model_.dtype) ? w_bits : 16;
  const std::int64_t peak = gpu_.peak_flops_for(model_.dtype);
  const std::int64_t t = shape.encoder_tokens;
  const std::int64_t h = model_.hidden;
  const std::int64_t q_width = std::int64_t{model_.heads} * model_.head_dim;
  const std::int64_t kv_width = std::int64_t{model_.kv_heads} * model_.head_dim;
  const std::int64_t mlp = model_.intermediate;  // the 3-matrix width (ModelShape invariant 2)
  const std::int64_t layer = roofline_cycles(gemm(t, h, q_width + 2 * kv_width, in_bits, w_bits, peak)) +
                             roofline_cycles(gemm(t, q_width, h, in_bits, w_bits, peak)) +
                             roofline_cycles(gemm(t, h, 2 * mlp, in_bits, w_bits, peak)) +
                             roofline_cycles(gemm(t, mlp, h, in_bits, w_bits, peak)) +
                             roofline_cycles({4 * shape.encoder_pairs * q_width, 2 * t * (q_width + 2 * kv_width) * 2,
                                              gpu_.peak_flops, KernelClass::kAttention}) +
                             5 * launch;
  const std::int64_t cross_kv = roofline_cycles(gemm(t, h, 2 * kv_width, in_bits, w_bits, peak)) +
                                roofline_cycles({0, t * dtype_bytes_of(model_.kv_dtype, 2 * kv_width), gpu_.peak_flops,
                                                 KernelClass::kElementwise}) +
                                2 * launch;
  return model_.encoder_layers * layer + model_.layers * cross_kv;
}

// Invariant 11: per decoder layer, the cross-attention Q and output GEMMs over the step's
// tokens and each query reading its request's encoder_tokens keys from the KV cache.
std::int64_t CostModel::cross_attention_cycles(const StepShape& shape, std::int64_t launch) const {
  if (!model_.cross_attention || shape.num_tokens <= 0) return 0;
  const int w_bits = dtype_bits(model_.dtype);
  const int in_bits = gpu_.has_tensor_cores_for(model_.dtype) ? w_bits : 16;
  const std::int64_t peak = gpu_.peak_flops_for(model_.dtype);
  const std::int64_t t = shape.num_tokens;
  const std::int64_t q_width = std::int64_t{model_.heads} * model_.head_dim;
  const std::int64_t kv_width = std::int64_t{model_.kv_heads} * model_.head_dim;
  const std::int64_t e = model_.encoder_tokens;
  const KernelWork read{4 * t * e * q_width,
                        shape.num_seqs * e * dtype_bytes_of(model_.kv_dtype, 2 * kv_width) + 2 * t * q_width * 2,
                        gpu_.peak_flops, KernelClass::kAttention};
  return model_.layers *
         (roofline_cycles(gemm(t, model_.hidden, q_width, in_bits, w_bits, peak)) +
          roofline_cycles(gemm(t, q_width, model_.hidden, in_bits, w_bits, peak)) + roofline_cycles(read) + 3 * launch);
}

std::int64_t CostModel::host_ns(const StepShape& shape) const {
  return gpu_.host_step_ns + gpu_.host_per_request_ns * shape.num_seqs + gpu_.host_per_block_ns * shape.num_block_ids +
         gpu_.host_per_token_ns * shape.num_tokens;
}

std::int64_t CostModel::all_reduce_ns(std::int64_t bytes) const {
  const std::int64_t n = model_.tp;
  if (n <= 1 || bytes <= 0) return 0;
  const std::int64_t chunk_ns =
      ceil_div(static_cast<Int128>(bytes) * 1'000'000'000, static_cast<Int128>(n) * gpu_.interconnect_bytes_per_s);
  return 2 * (n - 1) * (gpu_.interconnect_latency_ns + chunk_ns);
}

// Invariant 9: the copy stream's loads and saves beside the forward.
void CostModel::add_tier_nodes() {
  KV_CHECK(tier_.host_link.bytes_per_s > 0 && tier_.bytes_per_block > 0, "bad tier link " << tier_.host_link.name);
  tier_load_node_ = dag_.add_node("tier_load");
  tier_store_node_ = dag_.add_node("tier_store");
  tier_save_node_ = dag_.add_node("tier_save");
  const bool stall = tier_.load == TierLoadMode::kStall;
  dag_.add_edge(id(StepNode::kHostSchedule), tier_load_node_);
  dag_.add_edge(id(StepNode::kHostSchedule), tier_store_node_);
  dag_.add_edge(tier_load_node_, id(stall ? StepNode::kInputNorm : StepNode::kFinalNorm));
  dag_.add_edge(tier_store_node_, id(stall ? StepNode::kInputNorm : StepNode::kCacheWrite));
  dag_.add_edge(id(StepNode::kHostSchedule), tier_save_node_);
  dag_.add_edge(tier_save_node_, id(StepNode::kD2hSampled));
}

std::int64_t CostModel::ns_to_cycles(std::int64_t ns) const {
  return ceil_div(static_cast<Int128>(ns) * gpu_.clock_mhz, 1000);
}

std::int64_t CostModel::cycles_to_ns(std::int64_t cycles) const {
  return ceil_div(static_cast<Int128>(cycles) * 1000, gpu_.clock_mhz);
}

KernelWork CostModel::work(Kernel k, const KernelQuery& q, std::int64_t attended_pairs) const {
  KernelWork w = unclassed_work(k, q, attended_pairs);
  w.cls = kernel_class(k);
  return w;
}

KernelWork CostModel::unclassed_work(Kernel k, const KernelQuery& q, std::int64_t attended_pairs) const {
  const std::int64_t t = q.num_tokens;
  const std::int64_t b = 2;  // 16-bit activations
  const std::int64_t h = model_.hidden;
  const std::int64_t q_width = std::int64_t{model_.heads} * model_.head_dim;
  const std::int64_t kv_width = std::int64_t{model_.kv_heads} * model_.head_dim;
  const std::int64_t inter = model_.intermediate;
  const std::int64_t bf16 = gpu_.peak_flops;
  // Invariant 6: the projections' formats.
  const int w_bits = dtype_bits(model_.dtype);
  const int in_bits = gpu_.has_tensor_cores_for(model_.dtype) ? w_bits : 16;
  const std::int64_t peak = gpu_.peak_flops_for(model_.dtype);
  const std::int64_t kv_bits = dtype_bits(model_.kv_dtype);
  switch (k) {
    case Kernel::kSlotMapping:  // positions + block-table lookups in, int64 slots out
      return {2 * t, t * (8 + 4 + 8) + 8 * q.num_seqs, bf16};
    case Kernel::kRmsnorm:  // fused residual add: read x and residual, write both
      return {4 * t * h, (4 * t * h + h) * b, bf16};
    case Kernel::kQkvProj:
      return gemm(t, h, q_width + 2 * kv_width, in_bits, w_bits, peak);
    case Kernel::kRotary:
      return {3 * t * (q_width + kv_width), 2 * t * (q_width + kv_width) * b + 8 * t, bf16};
    case Kernel::kCacheWrite:  // read 16-bit K and V, write them into their slots in kv_dtype
      return {0, (t * kv_width * (2 * 16 + 2 * kv_bits) + 7) / 8 + 8 * t, bf16};
    case Kernel::kAttention:  // QK^T and PV over every causal pair; K/V read once per sequence
      return {4 * std::int64_t{model_.heads} * model_.head_dim * attended_pairs,
              (2 * q.context_tokens * kv_width * kv_bits + 7) / 8 + 2 * t * q_width * b + 4 * q.num_seqs, bf16};
    case Kernel::kOProj:
      return gemm(t, q_width, h, in_bits, w_bits, peak);
    case Kernel::kGateUpProj:
      return gemm(t, h, 2 * inter, in_bits, w_bits, peak);
    case Kernel::kSiluMul:
      return {4 * t * inter, 3 * t * inter * b, bf16};
    case Kernel::kDownProj:
      return gemm(t, inter, h, in_bits, w_bits, peak);
    case Kernel::kLmHead: {  // 16-bit weights, fp32 logits
      KernelWork w = gemm(t, h, model_.vocab, 16, 16, bf16);
      w.bytes += t * model_.vocab * (4 - b);
      return w;
    }
  }
  return {};
}

std::int64_t CostModel::roofline_cycles(const KernelWork& w) const {
  // cycles = work * clock_hz / (peak * efficiency); clock in MHz, efficiency in percent.
  const RooflineTerms terms = gpu_.terms_for(w.cls, w.fp8_weights);
  Int128 clock_x100 = static_cast<Int128>(gpu_.clock_mhz) * 1'000'000 * 100;
  std::int64_t compute =
      ceil_div(static_cast<Int128>(w.flops) * clock_x100,
               static_cast<Int128>(w.peak_flops > 0 ? w.peak_flops : gpu_.peak_flops) * terms.compute_efficiency_pct);
  std::int64_t memory = ceil_div(static_cast<Int128>(w.bytes) * clock_x100,
                                 static_cast<Int128>(gpu_.hbm_bytes_per_s) * terms.bandwidth_efficiency_pct);
  return ns_to_cycles(terms.latency_ns) + std::max(compute, memory);
}

std::int64_t CostModel::kernel_cycles(Kernel k, const KernelQuery& q, std::int64_t attended_pairs) const {
  if (q.num_tokens <= 0) return 0;
  if (profile_ != nullptr && profile_->has(k)) return ns_to_cycles(profile_->lookup_ns(k, q));
  return roofline_cycles(work(k, q, attended_pairs));
}

// Invariant 5: full layers attend to the whole context, windowed ones to their window. `pad`
// rows (FULL graphs) attend to one key each.
std::int64_t CostModel::attention_node_cycles(const StepShape& shape, std::int64_t pad, std::int64_t launch) const {
  const KernelQuery context{shape.num_tokens + pad, shape.num_seqs, shape.kv_tokens_read + pad};
  const std::int64_t mamba = model_.num_layers_of(AttentionType::kMamba);
  const std::int64_t windowed =
      shape.window > 0 ? model_.layers - mamba - model_.num_layers_of(AttentionType::kFullAttention) : 0;
  std::int64_t cycles = (model_.layers - mamba - windowed) *
                        (kernel_cycles(Kernel::kAttention, context, shape.attended_pairs + pad) + launch);
  if (windowed > 0) {
    const KernelQuery window{shape.num_tokens + pad, shape.num_seqs, shape.window_kv_tokens_read + pad};
    cycles += windowed * (kernel_cycles(Kernel::kAttention, window, shape.window_attended_pairs + pad) + launch);
  }
  return cycles;
}

std::int64_t CostModel::mamba_node_cycles(const KernelQuery& dense, std::int64_t launch) const {
  const std::int64_t mamba = model_.num_layers_of(AttentionType::kMamba);
  if (mamba == 0 || dense.num_tokens <= 0) return 0;
  const int w_bits = dtype_bits(model_.dtype);
  const int in_bits = gpu_.has_tensor_cores_for(model_.dtype) ? w_bits : 16;
  const std::int64_t peak = gpu_.peak_flops_for(model_.dtype);
  const std::int64_t t = dense.num_tokens;
  const KernelWork in_proj = gemm(t, model_.hidden, model_.mamba_in_proj, in_bits, w_bits, peak);
  const KernelWork out_proj = gemm(t, model_.mamba_inner, model_.hidden, in_bits, w_bits, peak);
  const KernelWork state{4 * t * (mamba_state_bytes_ / 2),
                         2 * dense.num_seqs * mamba_state_bytes_ + 2 * t * model_.mamba_inner * 2, gpu_.peak_flops,
                         KernelClass::kElementwise};
  return mamba * (roofline_cycles(in_proj) + roofline_cycles(out_proj) + roofline_cycles(state) + 3 * launch);
}

StepCost CostModel::cost(const StepShape& shape) {
  StepCost out;
  std::array<std::int64_t, kNumStepNodes>& w = out.node_cycles;
  const std::int64_t layers = model_.layers;
  const std::int64_t launch = ns_to_cycles(gpu_.launch_overhead_ns);
  const std::int64_t graph_launch = ns_to_cycles(gpu_.graph_launch_ns);

  w[id(StepNode::kHostSchedule)] = ns_to_cycles(host_ns(shape));
  if (shape.num_tokens > 0) {
    auto copy_ns = [&](std::int64_t bytes) {
      return gpu_.copy_latency_ns + ceil_div(static_cast<Int128>(bytes) * 1'000'000'000, gpu_.h2d_bytes_per_s);
    };
    w[id(StepNode::kH2dBlockTable)] = ns_to_cycles(copy_ns(4 * shape.num_block_ids));
    w[id(StepNode::kH2dInputs)] = ns_to_cycles(copy_ns(16 * shape.num_tokens + 8 * (shape.num_seqs + 1)));
    w[id(StepNode::kD2hSampled)] = ns_to_cycles(copy_ns(8 * shape.num_seqs));

    out.dispatch = dispatcher_.dispatch(shape.num_tokens, shape.uniform_decode, shape.cascade);
    const CudaGraphMode mode = out.dispatch.runtime_mode;
    const std::int64_t pad = out.dispatch.batch.num_tokens - shape.num_tokens;  // 0 if eager
    // Tokens the dense kernels and attention run on; padding costs compute.
    KernelQuery dense{shape.num_tokens + pad, shape.num_seqs, 0};
    const std::int64_t attention_pad = mode == CudaGraphMode::kFull ? pad : 0;  // one key per padded row
    const std::int64_t pairs = shape.attended_pairs + attention_pad;
    KernelQuery slots{dense.num_tokens, shape.num_seqs, 0};
    w[id(StepNode::kSlotMapping)] = kernel_cycles(Kernel::kSlotMapping, slots, 0) + launch;

    // Launch overheads per kernel of one layer, and the graph launches.
    std::int64_t dense_launch = mode == CudaGraphMode::kNone ? launch : 0;
    std::int64_t attention_launch = 0;
    if (mode == CudaGraphMode::kNone) {
      attention_launch = launch;
    } else if (mode == CudaGraphMode::kPiecewise) {
      attention_launch = launch + graph_launch;  // eager attention, then the next piece
      w[id(StepNode::kGraphLaunch)] = graph_launch;
    } else {
      w[id(StepNode::kGraphLaunch)] = graph_launch;
    }
    auto per_layer = [&](StepNode node, Kernel k, const KernelQuery& q, std::int64_t extra) {
      w[id(node)] = layers * (kernel_cycles(k, q, pairs) + extra);
    };
    per_layer(StepNode::kInputNorm, Kernel::kRmsnorm, dense, dense_launch);
    // Invariant 10: Mamba layers have no projections, rotary or cache write of attention.
    const std::int64_t attention_layers = layers - model_.num_layers_of(AttentionType::kMamba);
    auto per_attention_layer = [&](StepNode node, Kernel k) {
      w[id(node)] = attention_layers * (kernel_cycles(k, dense, pairs) + dense_launch);
    };
    per_attention_layer(StepNode::kQkvProj, Kernel::kQkvProj);
    per_attention_layer(StepNode::kRotary, Kernel::kRotary);
    per_attention_layer(StepNode::kCacheWrite, Kernel::kCacheWrite);
    w[id(StepNode::kAttention)] = attention_node_cycles(shape, attention_pad, attention_launch) +
                                  mamba_node_cycles(dense, attention_launch) +
                                  cross_attention_cycles(shape, attention_launch);
    if (encoder_node_ >= 0) out.encoder_cycles = encoder_node_cycles(shape, launch);
    per_attention_layer(StepNode::kOProj, Kernel::kOProj);
    per_layer(StepNode::kPostAttentionNorm, Kernel::kRmsnorm, dense, dense_launch);
    per_layer(StepNode::kGateUpProj, Kernel::kGateUpProj, dense, dense_launch);
    per_layer(StepNode::kSiluMul, Kernel::kSiluMul, dense, dense_launch);
    per_layer(StepNode::kDownProj, Kernel::kDownProj, dense, dense_launch);
    // The final norm is part of the forward (all tokens); logits are computed for one row
    // per scheduled request, as vLLM does (rows of unfinished prefills are discarded).
    w[id(StepNode::kFinalNorm)] = kernel_cycles(Kernel::kRmsnorm, dense, 0) + dense_launch;
    KernelQuery logits{shape.num_seqs, shape.num_seqs, 0};
    w[id(StepNode::kLmHead)] = kernel_cycles(Kernel::kLmHead, logits, 0) + launch;
    out.kernels = 1 + 10 * layers + 2;
    if (model_.tp > 1) {  // invariant 8
      const std::int64_t gather = all_reduce_ns(shape.num_seqs * model_.vocab * 4 * model_.tp) / 2;
      w[id(StepNode::kAllReduce)] =
          ns_to_cycles(2 * layers * all_reduce_ns(dense.num_tokens * model_.hidden * 2) + gather);
      out.kernels += 2 * layers + 1;
    }
  }
  for (int n = 0; n < kNumStepNodes; ++n) dag_.set_cycles(n, w[n]);
  if (encoder_node_ >= 0) dag_.set_cycles(encoder_node_, out.encoder_cycles);
  out.cycles = critical_path(w[id(StepNode::kHostSchedule)]);
  if (tier_.enabled) cost_tier(shape, out, w[id(StepNode::kHostSchedule)]);
  out.duration_ns = cycles_to_ns(out.cycles);
  return out;
}

// The step's critical path for the DAG's current weights. Invariant 7: with asynchronous
// scheduling the host's share (`host_cycles`, the host_schedule node) overlaps the device path.
std::int64_t CostModel::critical_path(std::int64_t host_cycles) {
  if (!async_scheduling_) return dag_.critical_path_cycles();
  dag_.set_cycles(id(StepNode::kHostSchedule), 0);
  const std::int64_t device = dag_.critical_path_cycles();
  dag_.set_cycles(id(StepNode::kHostSchedule), host_cycles);
  return std::max(device, host_cycles);
}

// The tier nodes' weights, the critical path with them, and what they add to it.
void CostModel::cost_tier(const StepShape& shape, StepCost& out, std::int64_t host_cycles) {
  out.tier_load_cycles = ns_to_cycles(tier_.load_ns(shape.tier_host_loads, shape.tier_disk_loads));
  const std::int64_t store = ns_to_cycles(tier_.store_ns(shape.tier_stores_before));
  const std::int64_t save = ns_to_cycles(tier_.store_ns(shape.tier_saves_carried));
  out.tier_store_cycles = store + save;
  if (out.tier_load_cycles == 0 && out.tier_store_cycles == 0) return;
  dag_.set_cycles(tier_load_node_, out.tier_load_cycles);
  dag_.set_cycles(tier_store_node_, store);
  dag_.set_cycles(tier_save_node_, save);
  const std::int64_t with = critical_path(host_cycles);
  out.tier_stall_cycles = with - out.cycles;
  out.cycles = with;
  dag_.set_cycles(tier_load_node_, 0);
  dag_.set_cycles(tier_store_node_, 0);
  dag_.set_cycles(tier_save_node_, 0);
}

namespace {

// The drafter's ModelShape (DrafterCost's comment), or nullopt for a free drafter.
std::optional<ModelShape> drafter_model(const SpeculativeConfig& speculative, const ModelShape& target) {
  switch (speculative.method) {
    case SpecMethod::kEagle:
    case SpecMethod::kEagle3:
    case SpecMethod::kMtp:
    case SpecMethod::kDspark:
    case SpecMethod::kDflash: {
      ModelShape head = target;
      head.name = target.name + "-draft-head";
      head.layers = 1;
      head.layer_types.clear();  // the head attends to its whole context
      head.sliding_window = 0;
      head.attention_chunk = 0;
      return head;
    }
    case SpecMethod::kDraftModel: {
      ModelShape small = find_model_shape("llama3-1b").value();
      small.dtype = target.dtype;
      small.kv_dtype = target.kv_dtype;
      small.tp = target.tp;
      return small;
    }
    case SpecMethod::kNone:
    case SpecMethod::kNgram:
    case SpecMethod::kSuffix:
    case SpecMethod::kMedusa:
      return std::nullopt;
  }
  return std::nullopt;
}

GpuSpec without_host_terms(GpuSpec gpu) {
  gpu.host_step_ns = 0;
  gpu.host_per_request_ns = 0;
  gpu.host_per_block_ns = 0;
  gpu.host_per_token_ns = 0;
  return gpu;
}

}  // namespace

DrafterCost::DrafterCost(const SpeculativeConfig& speculative, const ModelShape& target, const GpuSpec& gpu,
                         const CudaGraphConfig& graphs)
    : speculative_(speculative) {
  if (std::optional<ModelShape> shape = drafter_model(speculative, target)) {
    model_.emplace(*shape, without_host_terms(gpu), graphs, nullptr, false);
  }
}

std::int64_t DrafterCost::cost_ns(std::int64_t num_requests, std::int64_t context_tokens) {
  if (!model_ || num_requests <= 0) return 0;
  const std::int64_t k = speculative_.num_speculative_tokens;
  const bool parallel = speculative_.drafts_in_parallel();
  const std::int64_t forwards = parallel ? 1 : k;
  const std::int64_t q = parallel ? k : 1;  // query tokens per request and forward
  std::int64_t total = 0;
  for (std::int64_t j = 0; j < forwards; ++j) {
    const std::int64_t context = context_tokens + j * num_requests;  // the j drafts written so far
    StepShape shape;
    shape.num_tokens = num_requests * q;
    shape.num_seqs = num_requests;
    shape.num_sampled = num_requests;
    shape.kv_tokens_read = context + num_requests * q;
    shape.attended_pairs = q * context + num_requests * (q * (q + 1) / 2);
    shape.uniform_decode = q == 1;
    total += model_->cost(shape).duration_ns;
  }
  return total;
}

}  // namespace kv::sim
