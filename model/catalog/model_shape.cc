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
  return shapes;
}

}  // namespace

std::int64_t ModelShape::num_linear_params() const {
  const std::int64_t h = hidden;
  const std::int64_t q = static_cast<std::int64_t>(heads) * head_dim;
  const std::int64_t kv = static_cast<std::int64_t>(kv_heads) * head_dim;
  return ((q + 2 * kv) * h + q * h + 3LL * intermediate * h) * layers;
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
  s.vocab = (m.vocab + tp - 1) / tp;  // vLLM pads the vocabulary to a multiple of tp
  s.tp = m.tp * tp;
  return s;
}

int ModelShape::num_layers_of(AttentionType type) const {
  if (layer_types.empty()) return type == AttentionType::kFullAttention ? layers : 0;
  return static_cast<int>(std::count(layer_types.begin(), layer_types.end(), type));
}

std::vector<LayerKvCacheSpec> ModelShape::layer_specs(int block_size) const {
  std::vector<LayerKvCacheSpec> specs;
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
    specs.push_back({"layers." + std::to_string(i), s});
  }
  return specs;
}

StatusOr<std::vector<KvCacheGroupSpec>> ModelShape::kv_cache_groups(int block_size) const {
  const std::vector<LayerKvCacheSpec> specs = layer_specs(block_size);
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
