// ModelConfig: the shape of the seeded synthetic Llama-style transformer (RMSNorm, rotary,
// GQA attention, SwiGLU MLP, untied embedding and LM head) shared by the CPU reference and the
// CUDA backend, and the tensor ids that seed each weight.
// Invariants of a valid config (validate() checks them):
//   1. num_heads % num_kv_heads == 0 (GQA groups), head_dim % 8 == 0 (16-byte vector access)
//      and head_dim <= 256 (one attention thread block holds a query row).
//   2. Weights are U(-a, a) with a = sqrt(3 / fan_in) (unit-variance outputs for unit-variance
//      inputs); RMSNorm weights are 1; the embedding is U(-sqrt(3), sqrt(3)).
//   3. Tensor ids are unique per (layer, kind): kind + 16 * layer, globals below 16.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/util/status.h"

namespace kv::gpuref {

struct ModelConfig {
  std::string name = "tiny";
  int num_layers = 2;
  int hidden = 256;
  int num_heads = 4;
  int num_kv_heads = 2;
  int head_dim = 64;
  int intermediate = 512;
  int vocab = 1024;
  float rms_eps = 1e-5f;
  double rope_theta = 500000.0;

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
  int qkv_dim() const { return q_dim() + 2 * kv_dim(); }
  std::int64_t num_params() const;
  Status validate() const;
};

// Presets: the shapes of model/catalog/model_shape.h (tiny, small, llama3-1b, llama3-8b, llama3-70b).
StatusOr<ModelConfig> model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

enum class TensorKind : std::uint32_t {
  kEmbedding = 1,
  kFinalNorm = 2,
  kLmHead = 3,
  kAttnNorm = 16,
  kQkv = 17,
  kOProj = 18,
  kMlpNorm = 19,
  kGateUp = 20,  // rows [0, intermediate) are the gate, [intermediate, 2*intermediate) the up
  kDown = 21,
};

// Unique id of a tensor (layer ignored for the global kinds).
std::uint32_t tensor_id(TensorKind kind, int layer);
// Scale a of U(-a, a) for a weight with the given fan-in.
float uniform_scale(int fan_in);
inline constexpr float kEmbeddingScale = 1.7320508f;  // sqrt(3): unit variance

// Inverse rotary frequencies, head_dim / 2 of them: theta^(-2i / head_dim), in fp32.
std::vector<float> rope_inv_freq(const ModelConfig& config);

}  // namespace kv::gpuref
