#include "model/catalog/model_shape.h"

#include <algorithm>
#include <string>

namespace kv {

namespace {

using A = AttentionType;

// `layers` entries: `special` at every layer i with i % period == period - 1, `other` elsewhere.
std::vector<AttentionType> every_nth(int layers, int period, AttentionType special, AttentionType other) {
  std::vector<AttentionType> types(static_cast<std::size_t>(layers), other);
  for (int i = period - 1; i < layers; i += period) types[static_cast<std::size_t>(i)] = special;
  return types;
}

ModelShape dense(std::string name, int layers, int hidden, int heads, int kv_heads, int head_dim, int intermediate,
                 int vocab) {
  ModelShape m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = head_dim;
  m.intermediate = intermediate;
  m.vocab = vocab;
  return m;
}

// gpt-oss: 64 query heads, 8 KV heads of 64, hidden 2880, vocab 201088, sliding window 128 on
// the even layers, full attention on the odd ones (config.json "layer_types"). MoE with 4
// experts per token of width 2880: the active MLP is 4 * 2880 = 11520 wide.
ModelShape gpt_oss(std::string name, int layers) {
  ModelShape m = dense(std::move(name), layers, 2880, 64, 8, 64, 4 * 2880, 201088);
  m.layer_types = every_nth(layers, 2, A::kFullAttention, A::kSlidingWindow);
  m.sliding_window = 128;
  return m;
}

// `layers` entries, kMamba except every period-th layer (i % period == offset), full attention.
std::vector<AttentionType> attention_every(int layers, int period, int offset) {
  std::vector<AttentionType> types(static_cast<std::size_t>(layers), A::kMamba);
  for (int i = offset; i < layers; i += period) types[static_cast<std::size_t>(i)] = A::kFullAttention;
  return types;
}

// Gated DeltaNet: the state (gated_delta_net_state) and the GEMMs: in_proj_qkvz + in_proj_ba
// (hidden -> 2 key + 2 value widths + 2 per value head), out_proj (value width -> hidden).
void gated_delta_net(ModelShape& m, int key_heads, int value_heads, int key_dim, int value_dim, int conv_kernel,
                     int ssm_bytes) {
  const std::int64_t key = std::int64_t{key_heads} * key_dim, value = std::int64_t{value_heads} * value_dim;
  m.set_mamba_state(gated_delta_net_state(key_heads, value_heads, key_dim, value_dim, conv_kernel, ssm_bytes));
  m.mamba_in_proj = static_cast<int>(2 * key + 2 * value + 2 * value_heads);
  m.mamba_inner = static_cast<int>(value);
}

// Mamba2: the state (mamba2_state) and the GEMMs: in_proj hidden -> 2 * inner + 2 * groups *
// state + heads; out_proj inner -> hidden.
void mamba2(ModelShape& m, int heads, int head_dim, int groups, int state, int d_conv) {
  const std::int64_t inner = std::int64_t{heads} * head_dim;
  m.set_mamba_state(mamba2_state(heads, head_dim, groups, state, d_conv));
  m.mamba_in_proj = static_cast<int>(2 * inner + 2LL * groups * state + heads);
  m.mamba_inner = static_cast<int>(inner);
}

std::vector<ModelShape> make_shapes() {
  std::vector<ModelShape> shapes = {
      // name, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab (bf16)
      dense("tiny", 2, 256, 4, 2, 64, 512, 1024),
      dense("small", 4, 1024, 8, 2, 128, 2816, 32000),
      dense("llama3-1b", 16, 2048, 32, 8, 64, 8192, 128256),
      dense("llama3-8b", 32, 4096, 32, 8, 128, 14336, 128256),
      dense("llama3-70b", 80, 8192, 64, 8, 128, 28672, 128256),
  };
  // https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json: 24 layers, 32 experts.
  shapes.push_back(gpt_oss("gpt-oss-20b", 24));
  // https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json: 36 layers, 128 experts.
  shapes.push_back(gpt_oss("gpt-oss-120b", 36));
  // https://huggingface.co/google/gemma-3-27b-it/blob/main/config.json (text_config): 62
  // layers, hidden 5376, 32 heads, 16 KV heads of 128, intermediate 21504, vocab 262208,
  // sliding_window 1024, sliding_window_pattern 6 (every sixth layer is global). Dense.
  ModelShape gemma = dense("gemma-3-27b", 62, 5376, 32, 16, 128, 21504, 262208);
  gemma.layer_types = every_nth(62, 6, A::kFullAttention, A::kSlidingWindow);
  gemma.sliding_window = 1024;
  shapes.push_back(gemma);
  // https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E/blob/main/config.json
  // (text_config): 48 layers, hidden 5120, 40 heads, 8 KV heads of 128, vocab 202048,
  // attention_chunk_size 8192; every fourth layer (no_rope_layers) attends globally, the others
  // to their chunk. MoE, 16 experts, 1 per token of width 8192 plus a shared expert of 8192:
  // the active MLP is 16384 wide.
  ModelShape scout = dense("llama-4-scout", 48, 5120, 40, 8, 128, 8192 + 8192, 202048);
  scout.layer_types = every_nth(48, 4, A::kFullAttention, A::kChunkedLocalAttention);
  scout.attention_chunk = 8192;
  shapes.push_back(scout);
  // gpt-oss-20b with every layer full attention: the dense twin the hybrid path reduces to.
  ModelShape twin = gpt_oss("gpt-oss-20b-dense", 24);
  twin.layer_types.clear();
  twin.sliding_window = 0;
  shapes.push_back(twin);

  // The presets below were checked field by field against their published config.json
  // (2026-11-26); where the Hub file could not be read, against a public copy of it, named in
  // tests/data/README.md, where trimmed copies of each are read back by
  // tests/replay/replay_model_config_test.cc.
  //
  // https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json: 48 layers,
  // hidden_size 2048, 16 heads, num_key_value_heads 2, head_dim 256, vocab_size 151936,
  // full_attention_interval 4 (no layer_types: three linear_attention layers, then
  // full_attention); linear_conv_kernel_dim 4, linear_key_head_dim 128, linear_value_head_dim
  // 128, linear_num_key_heads 16, linear_num_value_heads 32 (no mamba_ssm_dtype: 16-bit states,
  // 1,097,728 bytes a layer; 1,130,496 with two draft tokens). MoE on every layer (decoder_sparse_step 1,
  // mlp_only_layers []): 512 experts, num_experts_per_tok 10 of moe_intermediate_size 512,
  // shared_expert_intermediate_size 512: active MLP 5632.
  ModelShape next = dense("qwen3-next-80b-a3b", 48, 2048, 16, 2, 256, 10 * 512 + 512, 151936);
  next.layer_types = every_nth(48, 4, A::kFullAttention, A::kMamba);
  gated_delta_net(next, 16, 32, 128, 128, 4, 2);
  shapes.push_back(next);
  // https://huggingface.co/Qwen/Qwen3.5-4B/blob/main/config.json (text_config): 32 layers,
  // hidden_size 2560, intermediate_size 9216, 16 heads, num_key_value_heads 4, head_dim 256,
  // vocab_size 248320, layer_types three linear_attention then full_attention, eight times; the
  // linear_* fields as Qwen3-Next's and mamba_ssm_dtype float32: a 2,146,304-byte state, so page
  // unification makes the attention block 528 tokens (33 * 16 * 4096 bytes >= the state).
  ModelShape q35 = dense("qwen3.5-4b", 32, 2560, 16, 4, 256, 9216, 248320);
  q35.layer_types = every_nth(32, 4, A::kFullAttention, A::kMamba);
  gated_delta_net(q35, 16, 32, 128, 128, 4, 4);
  shapes.push_back(q35);
  // https://huggingface.co/nvidia/Nemotron-H-8B-Base-8K/blob/main/config.json:
  // hybrid_override_pattern "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-" (52 blocks: 24
  // Mamba2 "M", 4 attention "*", 24 MLP "-"), hidden_size 4096, 32 heads, 8 KV heads of
  // attention_head_dim 128, intermediate_size 21504 (squared-ReLU, two matrices), vocab_size
  // 131072, mamba_num_heads 128, mamba_head_dim 64, n_groups 8, ssm_state_size 128, conv_kernel
  // 4. kvsim's layers are the 28 mixer blocks; the 24 MLP blocks' 2 * 21504-wide weights spread
  // over them as a 3-matrix MLP of 2 * 21504 * 24 / (3 * 28) = 12288.
  ModelShape nemo = dense("nemotron-h-8b", 28, 4096, 32, 8, 128, 12288, 131072);
  for (char c : std::string_view("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-")) {
    if (c != '-') nemo.layer_types.push_back(c == '*' ? A::kFullAttention : A::kMamba);
  }
  mamba2(nemo, 128, 64, 8, 128, 4);
  shapes.push_back(nemo);
  // https://huggingface.co/ibm-granite/granite-4.0-h-small/blob/main/config.json: 40 layers,
  // 4 "attention" and 36 "mamba" in layer_types, hidden_size 4096, 32 heads (head 128),
  // mamba_n_heads 128, mamba_d_head 64, mamba_n_groups 1, mamba_d_state 128, mamba_d_conv 4,
  // vocab_size 100352; MoE on every layer: 72 experts, num_experts_per_tok 10 of
  // intermediate_size 768, shared_intermediate_size 1536: active MLP 9216. Unverified:
  // num_key_value_heads 8, and the attention layers' positions 5, 15, 25, 35 (those of the
  // published granite-4.0-h-tiny and -h-1b configs).
  ModelShape granite = dense("granite-4.0-h-small", 40, 4096, 32, 8, 128, 10 * 768 + 1536, 100352);
  granite.layer_types = attention_every(40, 10, 5);
  mamba2(granite, 128, 64, 1, 128, 4);
  shapes.push_back(granite);
  // https://huggingface.co/ai21labs/AI21-Jamba-1.5-Mini/blob/main/config.json (Jamba-v0.1's
  // shape): 32 layers, hidden_size 4096, 32 heads, 8 KV heads of 128, intermediate_size 14336,
  // vocab_size 65536, attn_layer_period 8, attn_layer_offset 4, Mamba (v1) mamba_d_state 16,
  // mamba_d_conv 4, mamba_expand 2 (inner 8192: conv 8192 x 3 + SSM 8192 x 16, 16-bit, as vLLM's
  // mamba1_state_shape). MoE on the odd layers (expert_layer_period 2, expert_layer_offset 1), 2
  // of 16 experts: the mean active MLP is (14336 + 2 * 14336) / 2 = 21504. in_proj 2 * inner
  // (x_proj and dt_proj, mamba_dt_rank 256, left out).
  ModelShape jamba = dense("jamba-mini", 32, 4096, 32, 8, 128, 21504, 65536);
  jamba.layer_types = attention_every(32, 8, 4);
  jamba.set_mamba_state(mamba1_state(8192, 4, 16));
  jamba.mamba_in_proj = 2 * 8192;
  jamba.mamba_inner = 8192;
  shapes.push_back(jamba);
  // https://huggingface.co/openai/whisper-large-v3/blob/main/config.json: the decoder's
  // decoder_layers 32, d_model 1280, decoder_attention_heads 20 (head 64, no GQA),
  // decoder_ffn_dim 5120 (GELU, two matrices: a 3-matrix width of 2 * 5120 / 3 = 3413),
  // vocab_size 51866, max_source_positions 1500 (the encoder outputs cross attention reads;
  // encoder_layers 32 and encoder_attention_heads 20 are not modelled: the encoder keeps no KV
  // cache).
  ModelShape whisper = dense("whisper-large-v3", 32, 1280, 20, 20, 64, 3413, 51866);
  whisper.cross_attention = true;
  whisper.encoder_tokens = 1500;
  whisper.encoder_layers = 32;  // encoder_layers 32, encoder_attention_heads 20, encoder_ffn_dim 5120
  shapes.push_back(whisper);
  return shapes;
}

}  // namespace

MambaStateSize gated_delta_net_state(int key_heads, int value_heads, int key_dim, int value_dim, int conv_kernel,
                                     int ssm_bytes) {
  const std::int64_t conv_channels = 2LL * key_heads * key_dim + std::int64_t{value_heads} * value_dim;
  const std::int64_t tap = conv_channels * 2;
  return {tap * (conv_kernel - 1) + std::int64_t{value_heads} * key_dim * value_dim * ssm_bytes, tap};
}

MambaStateSize mamba2_state(int heads, int head_dim, int groups, int state, int d_conv) {
  const std::int64_t inner = std::int64_t{heads} * head_dim;
  const std::int64_t tap = (inner + 2LL * groups * state) * 2;
  return {tap * (d_conv - 1) + inner * state * 2, tap};
}

MambaStateSize mamba1_state(std::int64_t inner, int d_conv, int d_state) {
  return {inner * (d_conv - 1 + d_state) * 2, 0};
}

std::int64_t ModelShape::num_linear_params() const {
  const std::int64_t h = hidden;
  const std::int64_t q = static_cast<std::int64_t>(heads) * head_dim;
  const std::int64_t kv = static_cast<std::int64_t>(kv_heads) * head_dim;
  const std::int64_t mamba = num_layers_of(AttentionType::kMamba);
  const std::int64_t attention = (layers - mamba) * (cross_attention ? 2 : 1);
  return ((q + 2 * kv) * h + q * h) * attention + (std::int64_t{mamba_in_proj} + mamba_inner) * h * mamba +
         3LL * intermediate * h * layers;
}

std::int64_t ModelShape::num_params() const {
  const std::int64_t h = hidden;
  return num_linear_params() + 2 * h * layers + 2LL * vocab * h + h;
}

std::int64_t ModelShape::weight_bytes() const {
  const std::int64_t linear = num_linear_params();
  return dtype_bytes_of(dtype, linear) + 2 * (num_params() - linear);
}

StatusOr<ModelShape> shard_for_tp(const ModelShape& m, int tp) {
  if (tp < 1) return Status::error("tensor parallel size must be >= 1, got " + std::to_string(tp));
  if (tp == 1) return m;
  const std::string what = "model " + m.name + " cannot be split over " + std::to_string(tp) + " ranks: ";
  if (m.heads % tp != 0) return Status::error(what + std::to_string(m.heads) + " attention heads");
  if (m.kv_heads >= tp ? m.kv_heads % tp != 0 : tp % m.kv_heads != 0) {
    return Status::error(what + std::to_string(m.kv_heads) + " KV heads (neither divides the other)");
  }
  if (m.intermediate % tp != 0) return Status::error(what + "intermediate size " + std::to_string(m.intermediate));
  ModelShape s = m;
  s.heads = m.heads / tp;
  s.kv_heads = std::max(1, m.kv_heads / tp);
  s.intermediate = m.intermediate / tp;
  s.vocab = (m.vocab + tp - 1) / tp;               // vLLM pads the vocabulary to a multiple of tp
  s.mamba_state_bytes = m.mamba_state_bytes / tp;  // heads split over the ranks
  s.mamba_conv_tap_bytes = m.mamba_conv_tap_bytes / tp;
  s.mamba_in_proj = m.mamba_in_proj / tp;
  s.mamba_inner = m.mamba_inner / tp;
  s.tp = m.tp * tp;
  return s;
}

int ModelShape::num_layers_of(AttentionType type) const {
  if (layer_types.empty()) return type == AttentionType::kFullAttention ? layers : 0;
  return static_cast<int>(std::count(layer_types.begin(), layer_types.end(), type));
}

int ModelShape::attention_block_size(int block_size, int num_speculative_tokens) const {
  const std::int64_t state = mamba_state_bytes_with(num_speculative_tokens);
  if (!has_mamba() || state <= 0) return block_size;
  constexpr std::int64_t kKernelAlignment = 16;  // vLLM's kernel block alignment
  const std::int64_t per_token = std::int64_t{2} * kv_heads * head_dim * std::max(1, dtype_bits(kv_dtype) / 8);
  const std::int64_t step = kKernelAlignment * per_token;
  const std::int64_t needed = kKernelAlignment * ((state + step - 1) / step);
  return static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(block_size, needed), std::int64_t{1} << 30));
}

std::vector<LayerKvCacheSpec> ModelShape::layer_specs(int block_size, MambaCacheMode mamba_mode,
                                                      std::int64_t max_model_len, int num_speculative_blocks) const {
  std::vector<LayerKvCacheSpec> specs;
  block_size = attention_block_size(block_size, num_speculative_blocks);
  for (int i = 0; i < layers; ++i) {
    KvCacheSpec s;
    s.type = layer_type(i);
    s.block_size = block_size;
    s.num_kv_heads = kv_heads;
    s.head_size = head_dim;
    s.head_size_v = head_dim;
    s.dtype_bytes = std::max(1, dtype_bits(kv_dtype) / 8);  // fp4 pages: see ReplayConfig::validate
    if (s.type == AttentionType::kSlidingWindow) s.window = sliding_window;
    if (s.type == AttentionType::kChunkedLocalAttention) s.chunk = attention_chunk;
    if (s.type == AttentionType::kMamba) {
      s.mamba_mode = mamba_mode;
      s.mamba_state_bytes = mamba_state_bytes_with(num_speculative_blocks);
      s.num_speculative_blocks = num_speculative_blocks;
      // vLLM: with prefix caching off one block holds the request's state for its whole life.
      if (mamba_mode == MambaCacheMode::kNone) {
        s.block_size = static_cast<int>(std::min<std::int64_t>(max_model_len, std::int64_t{1} << 30));
      }
    }
    specs.push_back({"layers." + std::to_string(i), s});
    if (cross_attention && s.type != AttentionType::kMamba) {
      KvCacheSpec cross = s;
      cross.type = AttentionType::kCrossAttention;
      specs.push_back({"layers." + std::to_string(i) + ".cross", cross});
    }
  }
  return specs;
}

StatusOr<std::vector<KvCacheGroupSpec>> ModelShape::kv_cache_groups(int block_size, MambaCacheMode mamba_mode,
                                                                    std::int64_t max_model_len,
                                                                    int num_speculative_blocks) const {
  const std::vector<LayerKvCacheSpec> specs =
      layer_specs(block_size, mamba_mode, max_model_len, num_speculative_blocks);
  return get_kv_cache_groups(specs);
}

const std::vector<ModelShape>& model_shapes() {
  static const std::vector<ModelShape> shapes = make_shapes();
  return shapes;
}

StatusOr<ModelShape> find_model_shape(std::string_view name) {
  std::string valid;
  for (const ModelShape& s : model_shapes()) {
    if (s.name == name) return s;
    valid += valid.empty() ? "" : ", ";
    valid += s.name;
  }
  return Status::error("unknown model '" + std::string(name) + "' (valid: " + valid + ")");
}

ModelShape with_sliding_window(ModelShape model, int window) {
  if (window > 0 && model.num_layers_of(AttentionType::kSlidingWindow) > 0) model.sliding_window = window;
  return model;
}

}  // namespace kv
