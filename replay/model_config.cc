#include "replay/model_config.h"

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
  return static_cast<int>(active);
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
    else
      return f.error(where,
                     "unsupported layer type " + t + " (valid: full_attention, sliding_attention, chunked_attention)");
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

Status read_layer_pattern(const Fields& f, ModelShape& m) {
  if (f.find("layer_types") != nullptr) return read_layer_types(f, m);
  if (f.find("attention_chunk_size") != nullptr) return read_chunked_or_dense(f, m);
  if (f.find("sliding_window") != nullptr) return read_sliding(f, m);
  return {};
}

StatusOr<ModelShape> read_shape(const Fields& f, const std::string& name) {
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
  if (f.find("head_dim") == nullptr && m.hidden % m.heads != 0) {
    return f.error("head_dim", "missing, and hidden_size " + std::to_string(m.hidden) +
                                   " is not a multiple of num_attention_heads " + std::to_string(m.heads));
  }
  KV_ASSIGN(m.head_dim, f.positive("head_dim", m.hidden / m.heads, kMaxHidden));
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
