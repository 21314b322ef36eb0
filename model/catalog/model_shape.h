// ModelShape: the dimensions of a Llama-shaped decoder (RMSNorm, rotary, GQA attention, SwiGLU
// MLP), its layer pattern (which layers attend to everything, to a sliding window, or to their
// own chunk), and the one table of named presets that `--model NAME` refers to everywhere: the
// simulator's cost model and the CUDA backend's synthetic transformer build the same network
// from the same entry, and a hybrid model's KV-cache groups come from it (kv_cache_groups()).
// Pure data.
// Invariants of every preset:
//   1. heads % kv_heads == 0; all dimensions positive.
//   2. layer_types is empty (every layer full attention) or has exactly `layers` entries, each
//      full, sliding window (then sliding_window > 0) or chunked local (then
//      attention_chunk > 0). Mamba and cross attention never appear.
//   3. For a mixture-of-experts model, `intermediate` is the MLP width one token activates
//      (experts per token times the expert width, plus any shared expert), so the dense cost
//      and parameter formulas count active parameters. (Pool sizing from GPU memory therefore
//      counts active weights only: it overstates the KV cache an MoE model leaves room for.)
//   4. `dtype` is the format of the linear layers' weights (and of their GEMMs' inputs where
//      the GPU has tensor cores for it); embeddings, LM head and norms stay 16-bit, as vLLM
//      keeps them. `kv_dtype` is the KV cache's format.
//   5. A shape with tp > 1 is ONE rank's shard (shard_for_tp()): heads, kv_heads, intermediate
//      and vocab are per rank; hidden and layers are whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/catalog/dtype.h"
#include "model/kv_cache_groups.h"
#include "model/kv_cache_spec.h"
#include "model/util/status.h"

namespace kv {

struct ModelShape {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int intermediate = 0;  // MLP size (MoE: the active width, invariant 3)
  int vocab = 0;
  DType dtype = DType::kBf16;     // weights and compute (invariant 4)
  DType kv_dtype = DType::kBf16;  // KV cache
  int tp = 1;                     // tensor-parallel ranks this shape is one shard of (invariant 5)
  // Attention type per layer, in model order; empty: every layer is full attention.
  std::vector<AttentionType> layer_types = {};
  int sliding_window = 0;   // tokens, of every kSlidingWindow layer
  int attention_chunk = 0;  // tokens, of every kChunkedLocalAttention layer

  // K and V of one token over all layers (fp4: rounded up to whole bytes per token).
  std::int64_t kv_bytes_per_token() const { return dtype_bytes_of(kv_dtype, 2LL * layers * kv_heads * head_dim); }
  // Weights: attention and MLP projections, two norms per layer, untied embedding and LM head,
  // the final norm.
  std::int64_t num_params() const;
  // The attention and MLP projections alone (the weights `dtype` applies to).
  std::int64_t num_linear_params() const;
  // Bytes of the weights: projections in `dtype`, everything else 16-bit (invariant 4).
  std::int64_t weight_bytes() const;

  AttentionType layer_type(int layer) const {
    return layer_types.empty() ? AttentionType::kFullAttention : layer_types[static_cast<std::size_t>(layer)];
  }
  // Layers of one attention type.
  int num_layers_of(AttentionType type) const;
  // True when some layer is not full attention (its KV-cache groups are vLLM's hybrid layout).
  bool is_hybrid() const { return num_layers_of(AttentionType::kFullAttention) != layers; }

  // One spec per layer (named "layers.I"), with this block size.
  std::vector<LayerKvCacheSpec> layer_specs(int block_size) const;
  // vLLM's KV-cache groups of the model; each group's group_page_size_bytes is its bytes per
  // block over its layers.
  StatusOr<std::vector<KvCacheGroupSpec>> kv_cache_groups(int block_size) const;
};

// Dense: tiny, small, llama3-1b, llama3-8b, llama3-70b (the last three with Llama 3's shapes).
// Hybrid: gpt-oss-20b, gpt-oss-120b (sliding 128 / full, alternating), gemma-3-27b (five
// sliding 1024 per full), llama-4-scout (three chunked 8192 per full); gpt-oss-20b-dense is
// gpt-oss-20b with every layer full attention (the reduction check's twin).
const std::vector<ModelShape>& model_shapes();
StatusOr<ModelShape> find_model_shape(std::string_view name);

// One rank's shard under tensor parallelism over `tp` ranks, as vLLM splits the model: query
// heads, the MLP width and the vocabulary (embedding and LM head) are divided by tp; KV heads
// too when kv_heads >= tp, else each rank holds one KV head (replicated tp / kv_heads times).
// Errors name what does not divide: heads % tp, kv_heads % tp (or tp % kv_heads), intermediate
// % tp. tp == 1 returns the model unchanged.
StatusOr<ModelShape> shard_for_tp(const ModelShape& model, int tp);

// The model with every sliding-window layer's window set to `window` (0: unchanged).
ModelShape with_sliding_window(ModelShape model, int window);

}  // namespace kv
