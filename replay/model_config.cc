#include "replay/model_config.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kv::replay {

namespace {

using Json = nlohmann::json;

// Bounds far above any real model that keep every size product (bytes per token, parameters,
// a kernel's FLOPs) inside int64_t (header, invariant 3).
constexpr int kMaxTokens = 1 << 30;  // windows, chunks, layer-pattern periods
constexpr int kMaxLayers = 1024;
constexpr int kMaxHidden = 1 << 16;  // hidden_size; also heads * head_dim
constexpr int kMaxHeads = 1024;
constexpr int kMaxMlp = 1 << 20;        // one MLP or expert width
constexpr int kMaxActiveMlp = 1 << 21;  // the active MLP width of an MoE
constexpr int kMaxExperts = 1 << 14;
constexpr int kMaxVocab = 1 << 22;

// The fields of one config, with the file name for messages.
struct Fields {
  const std::string& file;
  const Json& top;   // the whole file
  const Json& text;  // "text_config" when present, else the whole file

  Status error(const std::string& field, const std::string& why) const {
    return Status::error(file + ": " + field + ": " + why);
  }
  const Json* find(const std::string& field) const {
    for (const Json* j : {&text, &top}) {
      auto it = j->find(field);
      if (it != j->end() && !it->is_null()) return &*it;
    }
    return nullptr;
  }
  // A positive integer field up to `max`; `fallback` when absent (0: required).
  StatusOr<int> positive(const std::string& field, int fallback = 0, int max = kMaxTokens) const {
    const Json* v = find(field);
    if (v == nullptr) {
      if (fallback > 0) return fallback;
      return error(field, "missing (a positive integer is required)");
    }
    if (!v->is_number_integer() ||
        (v->is_number_unsigned() ? v->get<std::uint64_t>() == 0 : v->get<std::int64_t>() <= 0)) {
      return error(field, "must be a positive integer, got " + v->dump());
    }
    if (v->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
      return error(field, v->dump() + " is above the bound " + std::to_string(max));
    }
    return static_cast<int>(v->get<std::uint64_t>());
  }
};

#define KV_ASSIGN(dst, expr)                        \
  do {                                              \
    auto kv_value_ = (expr);                        \
    if (!kv_value_.ok()) return kv_value_.status(); \
    dst = *kv_value_;                               \
  } while (0)

// The active MLP width of a mixture of experts (ModelShape invariant 3), or the dense width.
StatusOr<int> active_intermediate(const Fields& f, int intermediate) {
  const bool moe = f.find("num_local_experts") != nullptr || f.find("num_experts") != nullptr;
  if (!moe) return intermediate;
  int experts = 0, per_token = 0, width = 0, shared = 0;
  KV_ASSIGN(experts, f.positive(f.find("num_local_experts") ? "num_local_experts" : "num_experts", 0, kMaxExperts));
  KV_ASSIGN(per_token, f.positive("num_experts_per_tok", 0, kMaxExperts));
  if (per_token > experts) {
    return f.error("num_experts_per_tok",
                   std::to_string(per_token) + " exceeds the " + std::to_string(experts) + " experts");
  }
  KV_ASSIGN(width, f.positive("moe_intermediate_size", intermediate, kMaxMlp));
  if (f.find("shared_expert_intermediate_size") != nullptr) {
    KV_ASSIGN(shared, f.positive("shared_expert_intermediate_size", 0, kMaxMlp));
  } else if (const Json* s = f.find("shared_intermediate_size"); s != nullptr && !(s->is_number_integer() && *s == 0)) {
    KV_ASSIGN(shared, f.positive("shared_intermediate_size", 0, kMaxMlp));  // Granite-4.0-H
  } else if (const Json* type = f.find("model_type");
             type != nullptr && type->is_string() && type->get<std::string>().rfind("llama4", 0) == 0) {
    shared = intermediate;  // Llama 4: one shared expert as wide as a routed one
  }
  const std::int64_t active = std::int64_t{per_token} * width + shared;
  if (active > kMaxActiveMlp) {
    return f.error("num_experts_per_tok",
                   std::to_string(per_token) + " experts of width " + std::to_string(width) +
                       (shared > 0 ? " plus a shared " + std::to_string(shared) : std::string()) +
                       " make an active MLP of " + std::to_string(active) + ", above the bound " +
                       std::to_string(kMaxActiveMlp));
  }
  if (f.find("expert_layer_period") == nullptr) return static_cast<int>(active);
  // Jamba: experts only on layers i % expert_layer_period == expert_layer_offset (HF defaults
  // 2 and 1), a dense MLP of intermediate_size elsewhere; the mean over the layers, as the
  // jamba-mini preset has it.
  int period = 0, offset = 1;
  KV_ASSIGN(period, f.positive("expert_layer_period", 0, kMaxLayers));
  if (const Json* o = f.find("expert_layer_offset"); o != nullptr && !(o->is_number_integer() && *o == 0)) {
    KV_ASSIGN(offset, f.positive("expert_layer_offset", 0, kMaxLayers));
  } else if (o != nullptr) {
    offset = 0;
  }
  if (offset >= period) {
    return f.error("expert_layer_offset",
                   std::to_string(offset) + " is not below expert_layer_period " + std::to_string(period));
  }
  int layers = 0;
  KV_ASSIGN(layers, f.positive("num_hidden_layers", 0, kMaxLayers));
  const std::int64_t moe_layers = (layers - offset + period - 1) / period;
  return static_cast<int>((moe_layers * active + (layers - moe_layers) * std::int64_t{intermediate}) / layers);
}

// A string field's value, or "" when absent or not a string.
std::string text_of(const Fields& f, const std::string& field) {
  const Json* v = f.find(field);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// Qwen3-Next / Qwen3.5 gated DeltaNet layers ("linear_attention"): the state from the
// linear_* fields (gated_delta_net_state in model_shape.h has the formula), 16-bit unless
// mamba_ssm_dtype is float32.
Status read_gated_delta_net(const Fields& f, ModelShape& m) {
  int kernel = 0, key_dim = 0, value_dim = 0, key_heads = 0, value_heads = 0;
  KV_ASSIGN(kernel, f.positive("linear_conv_kernel_dim", 0, kMaxHeads));
  KV_ASSIGN(key_dim, f.positive("linear_key_head_dim", 0, kMaxHidden));
  KV_ASSIGN(value_dim, f.positive("linear_value_head_dim", 0, kMaxHidden));
  KV_ASSIGN(key_heads, f.positive("linear_num_key_heads", 0, kMaxHeads));
  KV_ASSIGN(value_heads, f.positive("linear_num_value_heads", 0, kMaxHeads));
  const int ssm_bytes = text_of(f, "mamba_ssm_dtype") == "float32" ? 4 : 2;
  const std::int64_t key = std::int64_t{key_heads} * key_dim, value = std::int64_t{value_heads} * value_dim;
  m.set_mamba_state(gated_delta_net_state(key_heads, value_heads, key_dim, value_dim, kernel, ssm_bytes));
  m.mamba_in_proj = static_cast<int>(std::min<std::int64_t>(2 * key + 2 * value + 2 * value_heads, kMaxMlp));
  m.mamba_inner = static_cast<int>(std::min<std::int64_t>(value, kMaxMlp));
  return {};
}

// Mamba2 layers (Granite-4.0-H "mamba", Nemotron-H "M"): the state from heads, head dim,
// n_groups, state and d_conv (mamba2_state in model_shape.h). The arguments name the family's
// fields.
Status read_mamba2(const Fields& f, ModelShape& m, const std::string& heads_field, const std::string& head_dim_field,
                   const std::string& groups_field, const std::string& state_field, const std::string& conv_field) {
  int heads = 0, head_dim = 0, groups = 0, state = 0, conv = 0;
  KV_ASSIGN(heads, f.positive(heads_field, 0, kMaxHeads));
  KV_ASSIGN(head_dim, f.positive(head_dim_field, 0, kMaxHidden));
  KV_ASSIGN(groups, f.positive(groups_field, 1, kMaxHeads));
  KV_ASSIGN(state, f.positive(state_field, 0, kMaxHidden));
  KV_ASSIGN(conv, f.positive(conv_field, 4, kMaxHeads));
  const std::int64_t inner = std::int64_t{heads} * head_dim;
  m.set_mamba_state(mamba2_state(heads, head_dim, groups, state, conv));
  m.mamba_in_proj = static_cast<int>(std::min<std::int64_t>(2 * inner + 2LL * groups * state + heads, kMaxMlp));
  m.mamba_inner = static_cast<int>(std::min<std::int64_t>(inner, kMaxMlp));
  return {};
}

Status read_layer_types(const Fields& f, ModelShape& m) {
  const Json& list = *f.find("layer_types");
  if (!list.is_array() || list.size() != static_cast<std::size_t>(m.layers)) {
    return f.error("layer_types", "must be a list of num_hidden_layers (" + std::to_string(m.layers) + ") names");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "layer_types[" + std::to_string(i) + "]";
    const std::string t = list[i].is_string() ? list[i].get<std::string>() : list[i].dump();
    if (t == "full_attention")
      m.layer_types.push_back(AttentionType::kFullAttention);
    else if (t == "sliding_attention")
      m.layer_types.push_back(AttentionType::kSlidingWindow);
    else if (t == "chunked_attention")
      m.layer_types.push_back(AttentionType::kChunkedLocalAttention);
    else if (t == "attention")  // Granite-4.0-H
      m.layer_types.push_back(AttentionType::kFullAttention);
    else if (t == "linear_attention" || t == "mamba")
      m.layer_types.push_back(AttentionType::kMamba);
    else
      return f.error(where, "unsupported layer type " + t +
                                " (valid: full_attention, attention, sliding_attention, chunked_attention, "
                                "linear_attention, mamba)");
  }
  if (m.has_mamba()) {
    const bool linear = std::find(list.begin(), list.end(), "linear_attention") != list.end();
    if (Status s = linear ? read_gated_delta_net(f, m)
                          : read_mamba2(f, m, "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state",
                                        "mamba_d_conv");
        !s.ok()) {
      return s;
    }
  }
  if (m.num_layers_of(AttentionType::kSlidingWindow) > 0) KV_ASSIGN(m.sliding_window, f.positive("sliding_window"));
  if (m.num_layers_of(AttentionType::kChunkedLocalAttention) > 0) {
    KV_ASSIGN(m.attention_chunk, f.positive("attention_chunk_size"));
  }
  return {};
}

// Llama 4: chunked local attention except on the NoPE (global) layers.
Status read_chunked(const Fields& f, ModelShape& m) {
  KV_ASSIGN(m.attention_chunk, f.positive("attention_chunk_size"));
  const Json* no_rope = f.find("no_rope_layers");
  if (no_rope != nullptr && no_rope->is_array() && !no_rope->empty()) {
    if (no_rope->size() != static_cast<std::size_t>(m.layers)) {
      return f.error("no_rope_layers", "must have num_hidden_layers (" + std::to_string(m.layers) + ") entries");
    }
    for (std::size_t i = 0; i < no_rope->size(); ++i) {
      const Json& v = (*no_rope)[i];
      // Compared whole: 2^32 read as an int would wrap to 0.
      if (!v.is_number_integer() || (v != 0 && v != 1)) {
        return f.error("no_rope_layers[" + std::to_string(i) + "]",
                       "must be 0 (global) or 1 (chunked), got " + v.dump());
      }
      m.layer_types.push_back(v == 0 ? AttentionType::kFullAttention : AttentionType::kChunkedLocalAttention);
    }
    return {};
  }
  int interval = 0;
  KV_ASSIGN(interval, f.positive("no_rope_layer_interval", 4));
  for (int i = 0; i < m.layers; ++i) {
    m.layer_types.push_back((i + 1) % interval == 0 ? AttentionType::kFullAttention
                                                    : AttentionType::kChunkedLocalAttention);
  }
  return {};
}

// Every layer global after all: a dense shape, with no chunk (as read_sliding leaves no window).
Status read_chunked_or_dense(const Fields& f, ModelShape& m) {
  if (Status s = read_chunked(f, m); !s.ok()) return s;
  if (m.num_layers_of(AttentionType::kChunkedLocalAttention) == 0) {
    m.layer_types.clear();
    m.attention_chunk = 0;
  }
  return {};
}

// Sliding-window families: Gemma 3 (a pattern), Qwen2 (max_window_layers), Mistral (all).
Status read_sliding(const Fields& f, ModelShape& m) {
  if (const Json* use = f.find("use_sliding_window"); use != nullptr && use->is_boolean() && !use->get<bool>()) {
    return {};
  }
  KV_ASSIGN(m.sliding_window, f.positive("sliding_window"));
  if (f.find("sliding_window_pattern") != nullptr) {
    int period = 0;
    KV_ASSIGN(period, f.positive("sliding_window_pattern"));
    for (int i = 0; i < m.layers; ++i) {
      m.layer_types.push_back(i % period == period - 1 ? AttentionType::kFullAttention : AttentionType::kSlidingWindow);
    }
  } else if (f.find("use_sliding_window") != nullptr && f.find("max_window_layers") != nullptr) {
    int first = 0;
    KV_ASSIGN(first, f.positive("max_window_layers"));
    for (int i = 0; i < m.layers; ++i) {
      m.layer_types.push_back(i < first ? AttentionType::kFullAttention : AttentionType::kSlidingWindow);
    }
  } else {
    m.layer_types.assign(static_cast<std::size_t>(m.layers), AttentionType::kSlidingWindow);
  }
  if (m.num_layers_of(AttentionType::kSlidingWindow) == 0) {
    m.layer_types.clear();
    m.sliding_window = 0;
  }
  return {};
}

// Qwen3-Next without layer_types: every full_attention_interval-th layer is full attention.
Status read_full_attention_interval(const Fields& f, ModelShape& m) {
  int interval = 0;
  KV_ASSIGN(interval, f.positive("full_attention_interval"));
  for (int i = 0; i < m.layers; ++i) {
    m.layer_types.push_back((i + 1) % interval == 0 ? AttentionType::kFullAttention : AttentionType::kMamba);
  }
  if (!m.has_mamba()) {
    m.layer_types.clear();
    return {};
  }
  return read_gated_delta_net(f, m);
}

// Nemotron-H: one character per block, "M" Mamba2, "*" attention, "-" MLP. kvsim's layers are
// the mixer blocks; the MLP blocks' squared-ReLU (two-matrix) weights spread over them as a
// three-matrix MLP (model_shape.cc, nemotron-h-8b).
Status read_hybrid_override_pattern(const Fields& f, ModelShape& m) {
  const Json& v = *f.find("hybrid_override_pattern");
  if (!v.is_string()) return f.error("hybrid_override_pattern", "must be a string of M, * and -");
  const std::string pattern = v.get<std::string>();
  if (pattern.size() != static_cast<std::size_t>(m.layers)) {
    return f.error("hybrid_override_pattern", "has " + std::to_string(pattern.size()) +
                                                  " blocks, num_hidden_layers is " + std::to_string(m.layers));
  }
  int mlps = 0;
  m.layer_types.clear();
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == 'M')
      m.layer_types.push_back(AttentionType::kMamba);
    else if (pattern[i] == '*')
      m.layer_types.push_back(AttentionType::kFullAttention);
    else if (pattern[i] == '-')
      ++mlps;
    else
      return f.error("hybrid_override_pattern[" + std::to_string(i) + "]",
                     std::string("unsupported block '") + pattern[i] + "' (valid: M, *, -; MoE blocks E are not read)");
  }
  if (m.layer_types.empty()) return f.error("hybrid_override_pattern", "has no Mamba or attention block");
  const std::int64_t mixers = static_cast<std::int64_t>(m.layer_types.size());
  m.intermediate = static_cast<int>(std::max<std::int64_t>(1, 2LL * m.intermediate * mlps / (3 * mixers)));
  m.layers = static_cast<int>(mixers);
  return read_mamba2(f, m, "mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel");
}

// Jamba: attention on layers i % attn_layer_period == attn_layer_offset, Mamba (v1) elsewhere:
// an inner width of mamba_expand * hidden and its state (mamba1_state in model_shape.h: fixed
// under speculative decoding).
Status read_jamba(const Fields& f, ModelShape& m) {
  int period = 0, offset = 0, state = 0, conv = 0, expand = 0;
  KV_ASSIGN(period, f.positive("attn_layer_period"));
  if (const Json* o = f.find("attn_layer_offset"); o != nullptr && !(o->is_number_integer() && *o == 0)) {
    KV_ASSIGN(offset, f.positive("attn_layer_offset"));
  }
  if (offset >= period) {
    return f.error("attn_layer_offset",
                   std::to_string(offset) + " is not below attn_layer_period " + std::to_string(period));
  }
  KV_ASSIGN(state, f.positive("mamba_d_state", 16, kMaxHidden));
  KV_ASSIGN(conv, f.positive("mamba_d_conv", 4, kMaxHeads));
  KV_ASSIGN(expand, f.positive("mamba_expand", 2, kMaxHeads));
  for (int i = 0; i < m.layers; ++i) {
    m.layer_types.push_back(i % period == offset ? AttentionType::kFullAttention : AttentionType::kMamba);
  }
  const std::int64_t inner = std::int64_t{expand} * m.hidden;
  if (inner > kMaxMlp)
    return f.error("mamba_expand", "makes an inner width above the bound " + std::to_string(kMaxMlp));
  m.set_mamba_state(mamba1_state(inner, conv, state));
  m.mamba_in_proj = static_cast<int>(2 * inner);
  m.mamba_inner = static_cast<int>(inner);
  if (!m.has_mamba()) {
    m.layer_types.clear();
    m.set_mamba_state({});
  }
  return {};
}

// Falcon-H1: attention and a Mamba2 mixer side by side in every block, then one MLP. kvsim's
// layers are the mixers: 2 * num_hidden_layers of them, attention and Mamba alternating, each
// with half the block's MLP (the same weights and FLOPs; one more pair of norms per block).
// vLLM keeps the same caches: an attention layer and a Mamba layer per block.
Status read_parallel_hybrid(const Fields& f, ModelShape& m) {
  if (2LL * m.layers > kMaxLayers) {
    return f.error("num_hidden_layers", "makes " + std::to_string(2LL * m.layers) + " mixer layers, above the bound " +
                                            std::to_string(kMaxLayers));
  }
  m.layer_types.clear();
  for (int i = 0; i < m.layers; ++i) {
    m.layer_types.push_back(AttentionType::kFullAttention);
    m.layer_types.push_back(AttentionType::kMamba);
  }
  m.layers *= 2;
  m.intermediate = std::max(1, m.intermediate / 2);
  return read_mamba2(f, m, "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv");
}

Status read_layer_pattern(const Fields& f, ModelShape& m) {
  if (text_of(f, "model_type") == "falcon_h1") return read_parallel_hybrid(f, m);
  if (f.find("hybrid_override_pattern") != nullptr) return read_hybrid_override_pattern(f, m);
  if (f.find("layer_types") != nullptr) return read_layer_types(f, m);
  if (f.find("full_attention_interval") != nullptr) return read_full_attention_interval(f, m);
  if (f.find("attn_layer_period") != nullptr) return read_jamba(f, m);

  if (f.find("attention_chunk_size") != nullptr) return read_chunked_or_dense(f, m);
  if (f.find("sliding_window") != nullptr) return read_sliding(f, m);
  return {};
}

StatusOr<ModelShape> read_shape(const Fields& f, const std::string& name) {
  if (const Json* ed = f.find("is_encoder_decoder"); ed != nullptr && ed->is_boolean() && ed->get<bool>()) {
    return f.error("is_encoder_decoder", "encoder-decoder configs are not read (use --model whisper-large-v3)");
  }
  ModelShape m;
  m.name = name;
  int intermediate = 0;
  KV_ASSIGN(m.hidden, f.positive("hidden_size", 0, kMaxHidden));
  KV_ASSIGN(m.layers, f.positive("num_hidden_layers", 0, kMaxLayers));
  KV_ASSIGN(m.heads, f.positive("num_attention_heads", 0, kMaxHeads));
  KV_ASSIGN(m.kv_heads, f.positive("num_key_value_heads", m.heads, kMaxHeads));
  if (m.heads % m.kv_heads != 0) {
    return f.error("num_key_value_heads",
                   std::to_string(m.kv_heads) + " does not divide num_attention_heads " + std::to_string(m.heads));
  }
  if (f.find("head_dim") == nullptr && f.find("attention_head_dim") == nullptr && m.hidden % m.heads != 0) {
    return f.error("head_dim", "missing, and hidden_size " + std::to_string(m.hidden) +
                                   " is not a multiple of num_attention_heads " + std::to_string(m.heads));
  }
  // Nemotron-H names it attention_head_dim.
  const std::string head_dim_field =
      f.find("head_dim") == nullptr && f.find("attention_head_dim") != nullptr ? "attention_head_dim" : "head_dim";
  KV_ASSIGN(m.head_dim, f.positive(head_dim_field, m.hidden / m.heads, kMaxHidden));
  if (std::int64_t{m.heads} * m.head_dim > kMaxHidden) {
    return f.error("head_dim", std::to_string(m.head_dim) + " times " + std::to_string(m.heads) +
                                   " heads is above the bound " + std::to_string(kMaxHidden));
  }
  KV_ASSIGN(intermediate, f.positive("intermediate_size", 0, kMaxMlp));
  KV_ASSIGN(m.intermediate, active_intermediate(f, intermediate));
  KV_ASSIGN(m.vocab, f.positive("vocab_size", 0, kMaxVocab));
  if (Status s = read_layer_pattern(f, m); !s.ok()) return s;
  return m;
}

}  // namespace

StatusOr<ModelShape> parse_model_config(const std::string& name, std::string_view json_text) {
  Json top;
  try {
    top = Json::parse(json_text.begin(), json_text.end());
  } catch (const Json::parse_error& e) {
    return Status::error(name + ": not valid JSON (byte " + std::to_string(e.byte) + ")");
  } catch (const Json::exception& e) {  // out_of_range: a number beyond a double (1e400)
    std::string what = e.what();
    what.erase(0, what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2);  // "[json.exception...] "
    return Status::error(name + ": not valid JSON: " + what);
  }
  if (!top.is_object()) return Status::error(name + ": the top level must be a JSON object");
  const Json* text = &top;
  if (auto it = top.find("text_config"); it != top.end() && it->is_object()) text = &*it;
  std::string shape_name = name;
  if (auto it = top.find("_name_or_path"); it != top.end() && it->is_string() && !it->get<std::string>().empty()) {
    shape_name = it->get<std::string>();
  }
  return read_shape(Fields{name, top, *text}, shape_name);
}

StatusOr<ModelShape> load_model_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error("cannot open model config " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_model_config(path, text.str());
}

}  // namespace kv::replay
