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
//      attention_chunk > 0), or Mamba (then mamba_state_bytes > 0: a linear-attention or SSM
//      layer, whose projections are mamba_in_proj / mamba_inner wide). Cross attention is not a
//      layer type here: cross_attention adds one cross-attention layer to every non-Mamba layer
//      (an encoder-decoder's decoder).
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

// One Mamba layer's state for one request, as vLLM's MambaStateShapeCalculator sizes it: the
// bytes without speculative decoding, and what one conv tap adds per draft token (0: fixed).
struct MambaStateSize {
  std::int64_t bytes = 0;
  std::int64_t conv_tap_bytes = 0;
};

// Gated DeltaNet (Qwen3-Next, Qwen3.5; gated_delta_net_state_shape): a 16-bit causal-conv state
// of (2 * key heads * key dim + value heads * value dim) channels by (kernel - 1 + num_spec)
// taps, and a delta-rule state of value heads * key dim * value dim at `ssm_bytes` each.
MambaStateSize gated_delta_net_state(int key_heads, int value_heads, int key_dim, int value_dim, int conv_kernel,
                                     int ssm_bytes);
// Mamba2 (Nemotron-H, Granite-4.0-H; mamba2_state_shape): a conv state of (heads * head dim +
// 2 * groups * state) channels by (d_conv - 1 + num_spec) taps and an SSM state of heads *
// head dim * state, both 16-bit.
MambaStateSize mamba2_state(int heads, int head_dim, int groups, int state, int d_conv);
// Mamba1 (Jamba; mamba1_state_shape, which takes no num_spec): a conv state of inner channels
// by (d_conv - 1) taps and an SSM state of inner * d_state, both 16-bit; fixed under speculation.
MambaStateSize mamba1_state(std::int64_t inner, int d_conv, int d_state);

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
  // kMamba layers: one request's recurrent state of one layer without speculative decoding
  // (conv + SSM / delta-rule tensors, vLLM MambaStateShapeCalculator), and the widths of the
  // layer's two GEMMs (in_proj: hidden -> mamba_in_proj; out_proj: mamba_inner -> hidden).
  std::int64_t mamba_state_bytes = 0;
  // The bytes one causal-conv tap adds, for a family whose conv state vLLM lengthens by one tap
  // per draft token (num_spec: gated DeltaNet, Mamba2); 0 where it does not (Mamba1, a state
  // given in bytes). mamba_state_bytes_with() is the only place the two are added.
  std::int64_t mamba_conv_tap_bytes = 0;
  int mamba_in_proj = 0;
  int mamba_inner = 0;
  // Encoder-decoder (Whisper): every layer also has a cross-attention layer over the
  // encoder's encoder_tokens outputs (vLLM runs these models with prefix caching off).
  bool cross_attention = false;
  int encoder_tokens = 0;
  // Its encoder: encoder_layers bidirectional layers of the decoder's width, heads and MLP
  // (Whisper's encoder and decoder have the same d_model, heads and FFN width).
  int encoder_layers = 0;

  // K and V of one token over all attention layers (Mamba layers keep no per-token KV; fp4:
  // rounded up to whole bytes per token).
  std::int64_t kv_bytes_per_token() const {
    return dtype_bytes_of(kv_dtype, 2LL * (layers - num_layers_of(AttentionType::kMamba)) * kv_heads * head_dim);
  }
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
  bool is_hybrid() const { return cross_attention || num_layers_of(AttentionType::kFullAttention) != layers; }
  bool has_mamba() const { return num_layers_of(AttentionType::kMamba) > 0; }

  // One Mamba state with `num_speculative_tokens` draft tokens per step (0: speculation off):
  // mamba_state_bytes plus one conv tap per draft token (vLLM's num_spec).
  std::int64_t mamba_state_bytes_with(int num_speculative_tokens) const {
    return mamba_state_bytes + mamba_conv_tap_bytes * num_speculative_tokens;
  }
  void set_mamba_state(const MambaStateSize& size) {
    mamba_state_bytes = size.bytes;
    mamba_conv_tap_bytes = size.conv_tap_bytes;
  }

  // The attention block size vLLM runs a model with Mamba layers at
  // (HybridAttentionMambaModelConfig): the smallest multiple of 16 tokens whose attention page
  // holds one Mamba state (mamba_state_bytes_with(num_speculative_tokens)), or `block_size` when
  // that is larger. Other models: `block_size`.
  int attention_block_size(int block_size, int num_speculative_tokens = 0) const;

  // One spec per layer (named "layers.I"; a cross-attention layer "layers.I.cross"), with this
  // block size (attention_block_size() applied). Mamba layers carry `mamba_mode`; in mode
  // kNone their block is max_model_len tokens, as vLLM sets it with prefix caching off. With
  // speculative decoding, vLLM gives each Mamba layer one speculative state block per draft
  // token (`num_speculative_blocks`, its num_speculative_tokens), and the state and the block
  // size are those for that many draft tokens.
  std::vector<LayerKvCacheSpec> layer_specs(int block_size, MambaCacheMode mamba_mode = MambaCacheMode::kAlign,
                                            std::int64_t max_model_len = 131072, int num_speculative_blocks = 0) const;
  // vLLM's KV-cache groups of the model; each group's group_page_size_bytes is its bytes per
  // block over its layers.
  StatusOr<std::vector<KvCacheGroupSpec>> kv_cache_groups(int block_size,
                                                          MambaCacheMode mamba_mode = MambaCacheMode::kAlign,
                                                          std::int64_t max_model_len = 131072,
                                                          int num_speculative_blocks = 0) const;
};

// Dense: tiny, small, llama3-1b, llama3-8b, llama3-70b (the last three with Llama 3's shapes).
// Hybrid: gpt-oss-20b, gpt-oss-120b (sliding 128 / full, alternating), gemma-3-27b (five
// sliding 1024 per full), llama-4-scout (three chunked 8192 per full); gpt-oss-20b-dense is
// gpt-oss-20b with every layer full attention (the reduction check's twin).
// Mamba hybrids: qwen3-next-80b-a3b and qwen3.5-4b (three gated-DeltaNet layers per full
// attention), nemotron-h-8b and granite-4.0-h-small (Mamba2 + attention), jamba-mini (Mamba +
// attention every 8th layer). Encoder-decoder: whisper-large-v3 (self + cross attention).
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
