// CostModel: the predicted device time of one step. The step's kernels (sim/kernels.h) are
// each costed by a roofline -- latency + max(FLOPs / (peak * efficiency), bytes / (bandwidth *
// efficiency)), with the terms of the kernel's class (GpuSpec::terms_for: the global pair and no
// latency unless the preset gives its class its own) -- or by a ProfileTable when it has the
// kernel (a measured time: no class terms), plus launch overheads as the
// CUDA-graph dispatcher decides; host work and copies join them in a StepDag whose critical
// path is the step's duration.
// Invariants:
//   1. Everything is integer arithmetic (cycles of the GPU clock; 128-bit intermediates):
//      the same plan gives the same number on every machine.
//   2. cost() is O(1) given a StepShape, and summarize() is O(requests) (never O(tokens)).
//   3. The L identical layers are one node per kernel type weighted L times; the layers are a
//      chain in stream order, so the critical path is exact.
//   4. Graph modes: NONE pays launch_overhead_ns per kernel; PIECEWISE pays it for attention
//      only, plus one graph_launch_ns per piece (layers + 1), on tokens padded to the capture
//      size outside attention; FULL pays one graph_launch_ns for the whole forward, on padded
//      tokens everywhere. slot_mapping and lm_head run eagerly in every mode.
//   5. Windowed layers (sliding window w; chunked local c, costed as a window of c): their
//      attention reads min(context, w) keys per query, not the whole context; the attention
//      node is full layers * full attention + windowed layers * windowed attention.
//   6. Formats (model/catalog/dtype.h): the projections read weights in the model's dtype and run at
//      the GPU's peak for it, with inputs in that dtype where the GPU has tensor cores for it
//      (else weight-only: 16-bit inputs at the bf16 peak); the KV cache is read and written in
//      kv_dtype; norms, rotary, SiLU, attention math and the LM head are 16-bit.
//   7. Host work per step is host_step_ns + host_per_request_ns * requests + host_per_block_ns *
//      block ids + host_per_token_ns * tokens. Synchronous (default): it precedes the step's
//      copies and kernels on the critical path. Asynchronous scheduling: the host prepares this
//      step while the GPU runs the previous one, so the step takes max(host, device path).
//   8. Tensor parallelism (model().tp > 1, the model is one rank's shard): each layer ends its
//      attention and its MLP with a ring all-reduce of tokens * hidden 16-bit activations,
//      2 (tp - 1) steps of (interconnect_latency_ns + bytes / tp / interconnect_bytes_per_s),
//      and the LM head's logits are gathered (tp - 1 steps of one rank's rows of fp32 logits).
//      The all_reduce node is 0 at tp == 1.
//   9. Second-tier transfers (TierCostOptions::enabled): two more nodes after host_schedule,
//      tier_load and tier_store (evicted blocks saved before reuse). Overlap: the load ends
//      before final_norm (layer by layer, ahead of each layer's attention) and the store
//      before cache_write; stall: both end before the forward starts. A third node, tier_save,
//      copies the blocks the previous step filled (every-full-block) out beside the whole
//      forward: it ends before d2h_sampled (the same copy direction), so it delays a step only
//      when it takes longer than the step's forward. Without a tier the DAG is exactly the
//      nodes of StepNode.
//  10. Mamba layers (ModelShape::mamba_state_bytes > 0): no qkv_proj, rotary, cache_write,
//      o_proj nor attention of their own; the attention node carries, per Mamba layer, a
//      roofline of its in_proj and out_proj GEMMs plus its state (with K draft tokens, the
//      state vLLM sizes for them: ModelShape::mamba_state_bytes_with): every scheduled request
//      reads its state once and writes it once per step (2 * num_seqs * state bytes), and the
//      scan does about 4 FLOPs per 16-bit state element per token. A first-order term (the
//      conv, gating and chunked-scan kernels are not modelled one by one).
//  11. Encoder-decoder models (ModelShape::cross_attention): one more node, encoder, between
//      the host's inputs and the decoder's first layer: per encoder layer, the QKV, output and
//      two MLP GEMMs over the step's encoder tokens and bidirectional attention over each
//      request's encoder positions (its encoder_pairs), then, per decoder layer, the
//      projection of the encoder outputs to cross-attention K/V and its cache write. The
//      attention node adds, per decoder layer, the cross-attention Q and output GEMMs and every
//      query reading the encoder_tokens keys of its request. Steps without encoder tokens give
//      the node 0; decoder-only models have no such node and no such term.
// Not thread-safe (cost() re-weights a member DAG).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "model/cuda_graph_dispatcher.h"
#include "model/sched/speculative_config.h"
#include "model/sched/step_plan.h"
#include "sim/hardware_specs.h"
#include "sim/kernel_class.h"
#include "sim/kernels.h"
#include "sim/profile_table.h"
#include "sim/step_dag.h"
#include "sim/tier_links.h"

namespace kv::sim {

// What the cost model needs from a plan.
struct StepShape {
  std::int64_t num_tokens = 0;      // tokens computed this step
  std::int64_t num_seqs = 0;        // scheduled requests
  std::int64_t num_sampled = 0;     // requests with samples == true
  std::int64_t kv_tokens_read = 0;  // sum over requests of num_computed + scheduled tokens
  std::int64_t attended_pairs = 0;  // causal (query, key) pairs: sum of q * c + q * (q + 1) / 2
  std::int64_t num_block_ids = 0;   // block ids sent in the plan (block-table deltas)
  bool uniform_decode = false;      // every request computes exactly one token
  bool cascade = false;             // the plan uses cascade attention (common prefix blocks)
  // With a window w > 0: the same two figures for a layer that reads only the last w keys
  // (query p attends min(p + 1, w) keys; a sequence reads min(c + q, q + w - 1) keys).
  std::int64_t window = 0;
  std::int64_t window_kv_tokens_read = 0;
  std::int64_t window_attended_pairs = 0;
  // Second-tier transfers of the plan (StepPlan invariant 5).
  std::int64_t tier_host_loads = 0, tier_disk_loads = 0;  // blocks loaded from each tier
  std::int64_t tier_stores_before = 0;                    // evicted blocks saved before reuse
  std::int64_t tier_saves_carried = 0;                    // blocks the previous step filled, saved during this one
  // Encoder-decoder models (invariant 11): the encoder positions run this step, and the sum
  // over the admitted requests of their encoder length squared (bidirectional pairs).
  std::int64_t encoder_tokens = 0;
  std::int64_t encoder_pairs = 0;
};

// `window`: the reach of the model's windowed layers (model_window(); 0 = none).
StepShape summarize(const StepPlan& plan, std::int64_t window = 0);

// The reach in tokens of the model's windowed layers: the sliding window, else the attention
// chunk; 0 when every layer is full attention.
std::int64_t model_window(const ModelShape& model);

// FLOPs and HBM bytes of one launch of a kernel for one layer, the peak it runs at, and its
// class (sim/kernel_class.h), whose terms (GpuSpec::terms_for) price it.
struct KernelWork {
  std::int64_t flops = 0;
  std::int64_t bytes = 0;
  std::int64_t peak_flops = 0;  // FLOP/s of the format its math runs in (GpuSpec::peak_flops_for)
  KernelClass cls = KernelClass::kElementwise;
  bool fp8_weights = false;  // a GEMM whose weights are fp8 (GpuSpec::terms_for)
};

// The nodes of the step DAG, in id order.
enum class StepNode {
  kHostSchedule,   // scheduler and input preparation on the host
  kH2dBlockTable,  // block-table deltas
  kH2dInputs,      // token ids, positions, query start locations (slot-mapping inputs)
  kSlotMapping,
  kGraphLaunch,  // first (or only) CUDA-graph replay
  kInputNorm,    // per layer, weighted by the number of layers:
  kQkvProj,
  kRotary,
  kCacheWrite,
  kAttention,
  kOProj,
  kPostAttentionNorm,
  kGateUpProj,
  kSiluMul,
  kDownProj,
  kFinalNorm,
  kLmHead,
  kD2hSampled,  // sampled token ids back to the host
  kAllReduce,   // tensor parallelism: 2 all-reduces per layer and the logits gather
};
inline constexpr int kNumStepNodes = 19;

struct StepCost {
  std::int64_t cycles = 0;       // critical path
  std::int64_t duration_ns = 0;  // cycles at the GPU clock, rounded up
  DispatchResult dispatch;       // the CUDA-graph decision for the batch
  std::int64_t kernels = 0;      // kernel executions (graph replays count their kernels)
  std::array<std::int64_t, kNumStepNodes> node_cycles{};
  std::int64_t tier_load_cycles = 0, tier_store_cycles = 0;
  std::int64_t tier_stall_cycles = 0;  // what the tier nodes add to the critical path
  std::int64_t encoder_cycles = 0;     // invariant 11: the encoder node (0 without an encoder)
};

class CostModel {
 public:
  // `profile` may be null (roofline only); it must outlive the model. `num_speculative_tokens`:
  // K with speculative decoding on, which sizes the Mamba state (invariant 10).
  CostModel(const ModelShape& model, const GpuSpec& gpu, const CudaGraphConfig& graphs, const ProfileTable* profile,
            bool async_scheduling = false, const TierCostOptions& tier = {}, int num_speculative_tokens = 0);

  StepCost cost(const StepShape& shape);

  // The work of kernel `k`, classed by kernel_class(k).
  KernelWork work(Kernel k, const KernelQuery& q, std::int64_t attended_pairs) const;
  // latency + max(compute, memory) with the terms of w.cls, in cycles.
  std::int64_t roofline_cycles(const KernelWork& w) const;
  // Execution cycles of one launch for one layer (profile if it has the kernel, else roofline).
  std::int64_t kernel_cycles(Kernel k, const KernelQuery& q, std::int64_t attended_pairs) const;

  // The attention node of one step, over every layer, with `launch` cycles per layer.
  std::int64_t attention_node_cycles(const StepShape& shape, std::int64_t pad, std::int64_t launch) const;
  // Invariant 10: every Mamba layer's GEMMs and state traffic for `dense` tokens.
  std::int64_t mamba_node_cycles(const KernelQuery& dense, std::int64_t launch) const;
  // Invariant 11: the encoder node, and the decoder's cross-attention over the encoder outputs.
  std::int64_t encoder_node_cycles(const StepShape& shape, std::int64_t launch) const;
  std::int64_t cross_attention_cycles(const StepShape& shape, std::int64_t launch) const;

  // Host time of one step (invariant 7), in ns.
  std::int64_t host_ns(const StepShape& shape) const;
  // One ring all-reduce of `bytes` over model().tp ranks (invariant 8), in ns; 0 at tp == 1.
  std::int64_t all_reduce_ns(std::int64_t bytes) const;

  std::int64_t ns_to_cycles(std::int64_t ns) const;      // rounded up
  std::int64_t cycles_to_ns(std::int64_t cycles) const;  // rounded up

  const ModelShape& model() const { return model_; }
  const GpuSpec& gpu() const { return gpu_; }
  const CudaGraphDispatcher& dispatcher() const { return dispatcher_; }
  const StepDag& dag() const { return dag_; }

 private:
  KernelWork unclassed_work(Kernel k, const KernelQuery& q, std::int64_t attended_pairs) const;
  void add_tier_nodes();
  std::int64_t critical_path(std::int64_t host_cycles);
  void cost_tier(const StepShape& shape, StepCost& out, std::int64_t host_cycles);

  ModelShape model_;
  std::int64_t mamba_state_bytes_;  // model_.mamba_state_bytes_with(K): one request's state, one layer
  GpuSpec gpu_;
  CudaGraphDispatcher dispatcher_;
  const ProfileTable* profile_;
  bool async_scheduling_;
  TierCostOptions tier_;
  StepDag dag_;  // fixed structure, re-weighted by cost()
  StepDag::NodeId tier_load_node_ = -1, tier_store_node_ = -1, tier_save_node_ = -1;  // when tier_.enabled
  StepDag::NodeId encoder_node_ = -1;                                                 // when model_.cross_attention
};

// The drafter of speculative decoding (docs/fidelity.md, "Speculative decoding"). The target's
// verification of 1 + K tokens per decoding request is already in the step's StepShape (the
// scheduler schedules them); this charges what proposes the next drafts, after the target's
// forward, on the same GPU, in the same step:
//   eagle, eagle3, mtp, dspark, dflash: the head is one decoder layer of the target's shape (its
//     hidden size, heads, MLP width, dtype, tp; full attention) with the target's LM head;
//   draft_model: the smallest llama preset (llama3-1b) at the target's dtype and tp;
//   ngram, suffix (host lookups) and medusa (heads folded into the target's LM head): free.
// A drafter that drafts sequentially runs K forwards of R tokens (one per request given drafts,
// the j-th reading the request's context plus j tokens in the drafter's own KV); a parallel
// drafter (dspark, dflash, --parallel-drafting) runs one forward of R * K tokens. Each forward
// is costed by a CostModel of the drafter's shape with the target's CUDA-graph mode and no host
// terms (the host prepared the step once). Invariant 1 holds: integers throughout.
class DrafterCost {
 public:
  DrafterCost(const SpeculativeConfig& speculative, const ModelShape& target, const GpuSpec& gpu,
              const CudaGraphConfig& graphs);
  bool is_free() const { return !model_.has_value(); }
  // Device time of the drafter over `num_requests` requests whose contexts (tokens known to the
  // target after the step) add up to `context_tokens`; 0 when is_free() or no request drafts.
  std::int64_t cost_ns(std::int64_t num_requests, std::int64_t context_tokens);
  // The shape a model drafter runs (for docs and tests); empty name when free.
  const ModelShape* drafter_shape() const { return model_ ? &model_->model() : nullptr; }

 private:
  SpeculativeConfig speculative_;
  std::optional<CostModel> model_;
};

}  // namespace kv::sim
