// ModelShape: the dimensions of a Llama-shaped decoder (RMSNorm, rotary, GQA attention, SwiGLU
// MLP), and the one table of named presets that `--model NAME` refers to everywhere: the
// simulator's cost model and the CUDA backend's synthetic transformer build the same network
// from the same entry. Pure data.
// Invariants of every preset: heads % kv_heads == 0; all dimensions positive.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/status.h"

namespace kv {

struct ModelShape {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int intermediate = 0;  // MLP size
  int vocab = 0;
  int dtype_bytes = 2;   // bf16

  // K and V of one token over all layers.
  std::int64_t kv_bytes_per_token() const {
    return 2LL * layers * kv_heads * head_dim * dtype_bytes;
  }
  // Weights: attention and MLP projections, two norms per layer, untied embedding and LM head,
  // the final norm.
  std::int64_t num_params() const;
};

// tiny, small, llama3-1b, llama3-8b, llama3-70b (the last three with Llama 3's shapes).
const std::vector<ModelShape>& model_shapes();
StatusOr<ModelShape> find_model_shape(std::string_view name);

}  // namespace kv
