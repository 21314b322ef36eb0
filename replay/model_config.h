// Model configs: a ModelShape read from a Hugging Face config.json (`--model-config FILE`), so
// any Llama-, Qwen-, Mistral-, gpt-oss- or Gemma-shaped model can be simulated without a preset.
// Fields read (from "text_config" when the file has one, as Gemma 3 and Llama 4 do):
//   hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, vocab_size
//   (required); num_key_value_heads (default: num_attention_heads); head_dim (default:
//   attention_head_dim (Nemotron-H), else hidden_size / num_attention_heads);
//   mixture of experts: num_local_experts or num_experts, num_experts_per_tok,
//   moe_intermediate_size (expert width, default intermediate_size), a shared expert from
//   shared_expert_intermediate_size, shared_intermediate_size (Granite-4.0-H) or, for Llama 4,
//   intermediate_size: the active MLP width is experts_per_tok * expert width + shared
//   (ModelShape invariant 3); with expert_layer_period and expert_layer_offset (Jamba: experts
//   on every period-th layer, a dense intermediate_size MLP on the others) the mean over the
//   layers;
//   layer pattern, first that applies: layer_types ("full_attention", "sliding_attention",
//   "chunked_attention"); attention_chunk_size with no_rope_layers (0 = global) or every
//   no_rope_layer_interval-th (default 4) layer global (Llama 4); sliding_window with
//   sliding_window_pattern N (every N-th layer global, Gemma 3); use_sliding_window with
//   max_window_layers (Qwen2: layers from max_window_layers on slide); sliding_window alone
//   (Mistral: every layer slides). A null field counts as absent.
//   Mamba hybrids (AttentionType::kMamba layers, their state sized as vLLM sizes it):
//   hybrid_override_pattern (Nemotron-H: "M" Mamba2, "*" attention, "-" MLP; mamba_num_heads,
//   mamba_head_dim, n_groups, ssm_state_size, conv_kernel); layer_types "linear_attention"
//   (Qwen3-Next, Qwen3.5: linear_conv_kernel_dim, linear_key_head_dim, linear_value_head_dim,
//   linear_num_key_heads, linear_num_value_heads, mamba_ssm_dtype) or "mamba" / "attention"
//   (Granite-4.0-H: mamba_n_heads, mamba_d_head, mamba_n_groups, mamba_d_state, mamba_d_conv);
//   full_attention_interval (Qwen3-Next without layer_types); attn_layer_period and
//   attn_layer_offset (Jamba: mamba_d_state, mamba_d_conv, mamba_expand); model_type
//   "falcon_h1" (attention and Mamba2 side by side in every block: 2 * num_hidden_layers mixer
//   layers, alternating, each with half the MLP; the Granite-4.0-H Mamba fields). Refused, naming the
//   field: is_encoder_decoder (use --model whisper-large-v3) and MoE blocks "E" in
//   hybrid_override_pattern.
// Invariants:
//   1. The result satisfies ModelShape's invariants, or the Status names the file and the field
//      (`config.json: num_key_value_heads: 5 does not divide num_attention_heads 32`).
//   2. Pure function of the text: the same file gives the same shape.
//   3. Sizes are bounded far above any real model, so that bytes per token, parameter counts
//      and a step's FLOPs stay inside int64_t: at most 1024 layers and 1024 heads, hidden_size
//      and heads * head_dim at most 2^16, an MLP or expert width at most 2^20 and the active
//      MLP width 2^21, 2^14 experts, a vocabulary of 2^22, windows and chunks of 2^30 tokens.
//      A larger value is an error naming the field and the bound.
#pragma once

#include <string>
#include <string_view>

#include "model/catalog/model_shape.h"
#include "model/util/status.h"

namespace kv::replay {

// `name` names the file in messages; the shape is named after "_name_or_path" when the file has
// one, else after `name`.
StatusOr<ModelShape> parse_model_config(const std::string& name, std::string_view json_text);
StatusOr<ModelShape> load_model_config(const std::string& path);

}  // namespace kv::replay
