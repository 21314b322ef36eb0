// Model configs: Hugging Face config.json files of each family read into the same shapes as the
// presets that were written by hand from them, and the messages of bad files.
#include "replay/model_config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace kv::replay {
namespace {

ModelShape preset(const char* name) { return *find_model_shape(name); }

void expect_same_shape(const ModelShape& got, const ModelShape& want) {
  EXPECT_EQ(got.layers, want.layers);
  EXPECT_EQ(got.hidden, want.hidden);
  EXPECT_EQ(got.heads, want.heads);
  EXPECT_EQ(got.kv_heads, want.kv_heads);
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.intermediate, want.intermediate);
  EXPECT_EQ(got.vocab, want.vocab);
  EXPECT_EQ(got.layer_types, want.layer_types);
  EXPECT_EQ(got.sliding_window, want.sliding_window);
  EXPECT_EQ(got.attention_chunk, want.attention_chunk);
}

TEST(ModelConfigTest, LlamaFileIsTheLlama3_8bPreset) {
  auto m = load_model_config(std::string(KVSIM_SOURCE_DIR) + "/tests/data/llama-3.1-8b-config.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  expect_same_shape(*m, preset("llama3-8b"));
  EXPECT_EQ(m->name, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(m->kv_bytes_per_token(), preset("llama3-8b").kv_bytes_per_token());
}

std::string data_file(const char* name) { return std::string(KVSIM_SOURCE_DIR) + "/tests/data/" + name; }

// The Mamba hybrids' published configs (trimmed copies; tests/data/README.md names the source of
// each) read into their presets: layer pattern, attention shape, active MLP width, and the
// recurrent state vLLM's MambaStateShapeCalculator sizes, with the attention block it implies.
TEST(ModelConfigTest, PublishedHybridConfigsAreThePresets) {
  struct Case {
    const char* file;
    const char* preset;
    int mamba_layers;
    std::int64_t state_bytes;
    int block_size;              // attention_block_size(16)
    std::int64_t tap_bytes;      // one conv tap: what each draft token adds (vLLM's num_spec)
    int speculative_block_size;  // attention_block_size(16, 2)
  };
  const Case cases[] = {
      // conv (2 * 16 * 128 + 32 * 128) * 3 + delta rule 32 * 128 * 128, 16-bit; 2048 B a token.
      {"qwen3-next-80b-a3b-instruct-config.json", "qwen3-next-80b-a3b", 36, (8192LL * 3 + 32 * 128 * 128) * 2, 544,
       8192 * 2, 560},
      // The same conv state, 16-bit, and the delta rule in float32; 4096 B a token.
      {"qwen3.5-4b-config.json", "qwen3.5-4b", 24, 8192LL * 3 * 2 + 32 * 128 * 128 * 4, 528, 8192 * 2, 544},
      // conv (128 * 64 + 2 * 8 * 128) * 3 + SSM 128 * 64 * 128, 16-bit; 4096 B a token.
      {"nemotron-h-8b-base-8k-config.json", "nemotron-h-8b", 24, (10240LL * 3 + 8192 * 128) * 2, 528, 10240 * 2, 544},
      // conv (128 * 64 + 2 * 1 * 128) * 3 + SSM 128 * 64 * 128, 16-bit.
      {"granite-4.0-h-small-config.json", "granite-4.0-h-small", 36, (8448LL * 3 + 8192 * 128) * 2, 528, 8448 * 2, 544},
      // Mamba v1: conv 8192 * 3 + SSM 8192 * 16, 16-bit; no num_spec, so drafts add nothing.
      {"ai21-jamba-1.5-mini-config.json", "jamba-mini", 28, 8192LL * 19 * 2, 80, 0, 80},
  };
  for (const Case& c : cases) {
    auto m = load_model_config(data_file(c.file));
    ASSERT_TRUE(m.ok()) << m.status().message();
    const ModelShape want = preset(c.preset);
    SCOPED_TRACE(c.preset);
    expect_same_shape(*m, want);
    EXPECT_EQ(m->num_layers_of(AttentionType::kMamba), c.mamba_layers);
    EXPECT_EQ(m->mamba_state_bytes, c.state_bytes);
    EXPECT_EQ(want.mamba_state_bytes, c.state_bytes);
    EXPECT_EQ(m->mamba_in_proj, want.mamba_in_proj);
    EXPECT_EQ(m->mamba_inner, want.mamba_inner);
    EXPECT_EQ(m->attention_block_size(16), c.block_size);
    EXPECT_EQ(want.attention_block_size(16), c.block_size);
    EXPECT_EQ(m->mamba_conv_tap_bytes, c.tap_bytes);
    EXPECT_EQ(want.mamba_conv_tap_bytes, c.tap_bytes);
    EXPECT_EQ(m->attention_block_size(16, 2), c.speculative_block_size);
    EXPECT_EQ(want.attention_block_size(16, 2), c.speculative_block_size);
  }
  // Active MLP widths: Granite-4.0-H 10 of 72 experts of 768 plus a shared 1536
  // (shared_intermediate_size); Jamba 2 of 16 experts of 14336 on every second layer, a dense
  // 14336 on the others; Nemotron-H's 24 two-matrix MLP blocks over its 28 mixers.
  EXPECT_EQ(load_model_config(data_file("granite-4.0-h-small-config.json"))->intermediate, 10 * 768 + 1536);
  EXPECT_EQ(load_model_config(data_file("ai21-jamba-1.5-mini-config.json"))->intermediate, (2 * 14336 + 14336) / 2);
  EXPECT_EQ(load_model_config(data_file("nemotron-h-8b-base-8k-config.json"))->intermediate, 12288);
  // Nemotron-H names its head size attention_head_dim (128 above, as hidden / heads happens to
  // be); it wins over hidden / heads where they differ.
  auto wide_heads = parse_model_config("nemo.json",
                                       R"({"hidden_size": 3072, "num_hidden_layers": 2, "num_attention_heads": 32,
                                       "num_key_value_heads": 8, "attention_head_dim": 128, "intermediate_size": 12288,
                                       "vocab_size": 131072})");
  ASSERT_TRUE(wide_heads.ok()) << wide_heads.status().message();
  EXPECT_EQ(wide_heads->head_dim, 128);
}

// Falcon-H1 runs attention and Mamba2 side by side in every block: kvsim's layers are the
// mixers, alternating, and the block's MLP spreads over its two (the 7B's shape).
TEST(ModelConfigTest, FalconH1ParallelBlocksAreTwoMixerLayersEach) {
  auto m = parse_model_config("falcon.json", R"({"model_type": "falcon_h1", "hidden_size": 3072,
      "num_hidden_layers": 44, "num_attention_heads": 12, "num_key_value_heads": 2, "head_dim": 128,
      "intermediate_size": 12288, "vocab_size": 130048, "mamba_d_state": 256, "mamba_n_groups": 1,
      "mamba_n_heads": 24, "mamba_d_head": 128, "mamba_d_ssm": 3072, "mamba_d_conv": 4})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->layers, 88);
  EXPECT_EQ(m->num_layers_of(AttentionType::kMamba), 44);
  EXPECT_EQ(m->num_layers_of(AttentionType::kFullAttention), 44);
  EXPECT_EQ(m->layer_types[0], AttentionType::kFullAttention);
  EXPECT_EQ(m->layer_types[1], AttentionType::kMamba);
  EXPECT_EQ(std::int64_t{m->layers} * m->intermediate, 44LL * 12288);  // the same MLP weights
  // conv (24 * 128 + 2 * 1 * 256) * 3 + SSM 24 * 128 * 256, 16-bit.
  EXPECT_EQ(m->mamba_state_bytes, (3584LL * 3 + 24 * 128 * 256) * 2);
  EXPECT_EQ(m->mamba_inner, 3072);
  // The KV cache: 44 attention layers of 2 KV heads of 128.
  EXPECT_EQ(m->kv_bytes_per_token(), 44LL * 2 * 2 * 128 * 2);
  auto huge = parse_model_config("falcon.json", R"({"model_type": "falcon_h1", "hidden_size": 64,
      "num_hidden_layers": 600, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
      "mamba_d_state": 16, "mamba_n_heads": 4, "mamba_d_head": 16})");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(), "falcon.json: num_hidden_layers: makes 1200 mixer layers, above the bound 1024");
}

TEST(ModelConfigTest, GptOssLayerTypesAndExperts) {
  std::string types;
  for (int i = 0; i < 24; ++i)
    types += std::string(i ? "," : "") + (i % 2 ? "\"full_attention\"" : "\"sliding_attention\"");
  auto m = parse_model_config("gpt-oss.json",
                              R"({"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 24,
                                  "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
                                  "intermediate_size": 2880, "vocab_size": 201088, "num_local_experts": 32,
                                  "num_experts_per_tok": 4, "sliding_window": 128, "layer_types": [)" +
                                  types + "]}");
  ASSERT_TRUE(m.ok()) << m.status().message();
  expect_same_shape(*m, preset("gpt-oss-20b"));
}

TEST(ModelConfigTest, GemmaPatternFromTextConfig) {
  auto m = parse_model_config("gemma.json",
                              R"({"model_type": "gemma3", "text_config": {"hidden_size": 5376,
                                  "num_hidden_layers": 62, "num_attention_heads": 32, "num_key_value_heads": 16,
                                  "head_dim": 128, "intermediate_size": 21504, "vocab_size": 262208,
                                  "sliding_window": 1024, "sliding_window_pattern": 6}})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  expect_same_shape(*m, preset("gemma-3-27b"));
}

TEST(ModelConfigTest, Llama4ChunkedWithSharedExpert) {
  auto m = parse_model_config("scout.json",
                              R"({"text_config": {"model_type": "llama4_text", "hidden_size": 5120,
                                  "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
                                  "head_dim": 128, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
                                  "vocab_size": 202048, "num_local_experts": 16, "num_experts_per_tok": 1,
                                  "attention_chunk_size": 8192, "no_rope_layers": []}})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  expect_same_shape(*m, preset("llama-4-scout"));
}

TEST(ModelConfigTest, QwenAndMistralSlidingWindows) {
  // Qwen2 ships sliding_window with use_sliding_window false: every layer is full attention.
  auto qwen = parse_model_config("qwen.json",
                                 R"({"hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
                                     "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
                                     "sliding_window": 131072, "use_sliding_window": false, "max_window_layers": 28})");
  ASSERT_TRUE(qwen.ok()) << qwen.status().message();
  EXPECT_FALSE(qwen->is_hybrid());
  EXPECT_EQ(qwen->head_dim, 128);  // hidden / heads
  // Mistral 7B v0.1: every layer slides over 4096 tokens.
  auto mistral = parse_model_config("mistral.json",
                                    R"({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                                        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
                                        "sliding_window": 4096})");
  ASSERT_TRUE(mistral.ok()) << mistral.status().message();
  EXPECT_EQ(mistral->num_layers_of(AttentionType::kSlidingWindow), 32);
  EXPECT_EQ(mistral->sliding_window, 4096);
  // Qwen3-MoE: 8 of 128 experts of width 768 are active.
  auto moe = parse_model_config("qwen3moe.json",
                                R"({"hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
                                    "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
                                    "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
                                    "vocab_size": 151936, "sliding_window": null})");
  ASSERT_TRUE(moe.ok()) << moe.status().message();
  EXPECT_EQ(moe->intermediate, 8 * 768);
}

TEST(ModelConfigTest, ErrorsNameTheFileAndField) {
  const std::string base =
      R"("num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100)";
  EXPECT_EQ(parse_model_config("c.json", "{" + base + "}").status().message(),
            "c.json: hidden_size: missing (a positive integer is required)");
  EXPECT_EQ(parse_model_config("c.json", R"({"hidden_size": "big", )" + base + "}").status().message(),
            "c.json: hidden_size: must be a positive integer, got \"big\"");
  EXPECT_EQ(
      parse_model_config("c.json", R"({"hidden_size": 64, "num_key_value_heads": 3, )" + base + "}").status().message(),
      "c.json: num_key_value_heads: 3 does not divide num_attention_heads 4");
  EXPECT_EQ(
      parse_model_config("c.json", R"({"hidden_size": 64, "layer_types": ["full_attention", "mamba"], )" + base + "}")
          .status()
          .message(),
      "c.json: mamba_n_heads: missing (a positive integer is required)");
  EXPECT_EQ(
      parse_model_config("c.json", R"({"hidden_size": 64, "layer_types": ["full_attention", "moe"], )" + base + "}")
          .status()
          .message(),
      "c.json: layer_types[1]: unsupported layer type moe (valid: full_attention, attention, sliding_attention, "
      "chunked_attention, linear_attention, mamba)");
  EXPECT_EQ(parse_model_config("c.json", R"({"hidden_size": 64, "layer_types": ["full_attention"], )" + base + "}")
                .status()
                .message(),
            "c.json: layer_types: must be a list of num_hidden_layers (2) names");
  EXPECT_EQ(parse_model_config("c.json", R"({"hidden_size": 64, "num_experts": 4, "num_experts_per_tok": 2,
                                               "expert_layer_period": 2, "expert_layer_offset": 2, )" +
                                             base + "}")
                .status()
                .message(),
            "c.json: expert_layer_offset: 2 is not below expert_layer_period 2");
  EXPECT_EQ(parse_model_config("c.json", "{\"hidden_size\": ").status().message(), "c.json: not valid JSON (byte 17)");
  // Found by fuzzing (fuzz/regressions/model_config/number-1e28001-overflows-double-uncaught.json):
  // a number beyond a double threw nlohmann's out_of_range, which nothing caught.
  EXPECT_EQ(parse_model_config("c.json", R"({"eos_token_id": [1e28001], "hidden_size": 64})").status().message(),
            "c.json: not valid JSON: number overflow parsing '1e28001'");
  EXPECT_EQ(load_model_config("/nonexistent/config.json").status().message(),
            "cannot open model config /nonexistent/config.json");
}

// Sizes up to 2^30 each were accepted, so the parameter count (layers * hidden * heads *
// head_dim) and experts_per_tok * expert width (an int) overflowed; a no_rope_layers entry of 2^32 was
// read as 0. The inputs are in fuzz/regressions/model_config/.
TEST(ModelConfigTest, HugeSizesNameTheFieldAndBound) {
  const std::string base = R"("hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100)";
  EXPECT_EQ(parse_model_config("c.json", R"({"num_hidden_layers": 1073741824, )" + base + "}").status().message(),
            "c.json: num_hidden_layers: 1073741824 is above the bound 1024");
  EXPECT_EQ(
      parse_model_config("c.json", R"({"num_hidden_layers": 18446744073709551615, )" + base + "}").status().message(),
      "c.json: num_hidden_layers: 18446744073709551615 is above the bound 1024");
  EXPECT_EQ(
      parse_model_config("c.json", R"({"num_hidden_layers": 2, "head_dim": 65536, )" + base + "}").status().message(),
      "c.json: head_dim: 65536 times 4 heads is above the bound 65536");
  EXPECT_EQ(
      parse_model_config("c.json", R"({"num_hidden_layers": 2, "num_local_experts": 16384, "num_experts_per_tok": 16384,
                                            "moe_intermediate_size": 1048576, )" +
                                       base + "}")
          .status()
          .message(),
      "c.json: num_experts_per_tok: 16384 experts of width 1048576 make an active MLP of 17179869184, above the "
      "bound 2097152");
  EXPECT_EQ(parse_model_config(
                "c.json", R"({"num_hidden_layers": 2, "attention_chunk_size": 8, "no_rope_layers": [1, 4294967296], )" +
                              base + "}")
                .status()
                .message(),
            "c.json: no_rope_layers[1]: must be 0 (global) or 1 (chunked), got 4294967296");
  // At the bounds: every size product still fits.
  auto big =
      parse_model_config("c.json", R"({"num_hidden_layers": 1024, "hidden_size": 65536, "num_attention_heads": 1024,
                                             "head_dim": 64, "intermediate_size": 1048576, "vocab_size": 4194304})");
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ(big->kv_bytes_per_token(), 2LL * 1024 * 1024 * 64 * 2);
  EXPECT_GT(big->weight_bytes(), 0);
}

}  // namespace
}  // namespace kv::replay
