// Fuzz target model_config: any bytes as the config.json of `--model-config FILE`
// (replay/model_config.h), then what a replay does with the shape it reads.
// Properties: the reader never crashes; a shape it accepts keeps ModelShape's invariants
// (positive sizes, heads % kv_heads == 0, one layer type per layer, a window or chunk for every
// windowed layer) and model_config.h's bounds, so bytes per token and weight bytes are positive
// and far inside int64_t; the shape printed back as a plain config.json reads back equal; its
// KV-cache groups form or are refused with a Status; the cost model prices steps of every size
// with it on an H100 (no abort in the step DAG, durations >= 0).
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_target.h"
#include "fuzz/price_steps.h"
#include "model/catalog/model_shape.h"
#include "replay/model_config.h"
#include "sim/hardware_specs.h"

namespace {

using kv::AttentionType;
using kv::ModelShape;

const char* type_name(AttentionType t) {
  if (t == AttentionType::kSlidingWindow) return "sliding_attention";
  if (t == AttentionType::kChunkedLocalAttention) return "chunked_attention";
  return "full_attention";
}

// The shape as a dense config.json with an explicit layer_types list.
std::string to_config(const ModelShape& m) {
  nlohmann::json j = {{"_name_or_path", m.name},
                      {"hidden_size", m.hidden},
                      {"num_hidden_layers", m.layers},
                      {"num_attention_heads", m.heads},
                      {"num_key_value_heads", m.kv_heads},
                      {"head_dim", m.head_dim},
                      {"intermediate_size", m.intermediate},
                      {"vocab_size", m.vocab}};
  if (!m.layer_types.empty()) {
    nlohmann::json types = nlohmann::json::array();
    for (AttentionType t : m.layer_types) types.push_back(type_name(t));
    j["layer_types"] = types;
  }
  if (m.sliding_window > 0) j["sliding_window"] = m.sliding_window;
  if (m.attention_chunk > 0) j["attention_chunk_size"] = m.attention_chunk;
  return j.dump();
}

void check_shape(const ModelShape& m) {
  const std::string what = m.name + " " + std::to_string(m.layers) + "x" + std::to_string(m.hidden);
  FUZZ_CHECK(m.layers > 0 && m.layers <= 1024 && m.hidden > 0 && m.hidden <= (1 << 16), what);
  FUZZ_CHECK(m.heads > 0 && m.heads <= 1024 && m.kv_heads > 0 && m.heads % m.kv_heads == 0, what);
  FUZZ_CHECK(m.head_dim > 0 && std::int64_t{m.heads} * m.head_dim <= (1 << 16), what);
  FUZZ_CHECK(m.intermediate > 0 && m.intermediate <= (1 << 21) && m.vocab > 0 && m.vocab <= (1 << 22), what);
  FUZZ_CHECK(m.layer_types.empty() || m.layer_types.size() == static_cast<std::size_t>(m.layers), what);
  FUZZ_CHECK(m.num_layers_of(AttentionType::kSlidingWindow) == 0 || m.sliding_window > 0, what);
  FUZZ_CHECK(m.num_layers_of(AttentionType::kChunkedLocalAttention) == 0 || m.attention_chunk > 0, what);
  FUZZ_CHECK(m.kv_bytes_per_token() > 0 && m.kv_bytes_per_token() <= (std::int64_t{1} << 40), what);
  FUZZ_CHECK(m.weight_bytes() > 0 && m.weight_bytes() <= (std::int64_t{1} << 60), what);
}

void check_round_trip(const ModelShape& m) {
  const std::string text = to_config(m);
  auto again = kv::replay::parse_model_config("again.json", text);
  FUZZ_CHECK(again.ok(), again.status().message() + " in " + text);
  const ModelShape& a = *again;
  bool same = a.name == m.name && a.layers == m.layers && a.hidden == m.hidden && a.heads == m.heads &&
              a.kv_heads == m.kv_heads && a.head_dim == m.head_dim && a.intermediate == m.intermediate &&
              a.vocab == m.vocab && a.sliding_window == m.sliding_window && a.attention_chunk == m.attention_chunk;
  for (int i = 0; same && i < m.layers; ++i) same = a.layer_type(i) == m.layer_type(i);
  FUZZ_CHECK(same, text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto shape = kv::replay::parse_model_config("config.json", kv::fuzz::as_text(data, size));
  if (!shape.ok()) {
    FUZZ_CHECK(shape.status().message().rfind("config.json: ", 0) == 0, shape.status().message());
    return 0;
  }
  check_shape(*shape);
  check_round_trip(*shape);
  (void)shape->kv_cache_groups(16);  // groups or a Status, never an abort
  static const kv::sim::GpuSpec gpu = kv::sim::find_gpu_spec("h100-sxm").value();
  kv::fuzz::price_steps(*shape, gpu);
  return 0;
}
