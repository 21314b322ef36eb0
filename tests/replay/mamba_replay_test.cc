// Mamba and encoder-decoder presets above the core: each preset's KV-cache groups (align with
// prefix caching on, none with it off), the exact layout of qwen3-next-80b-a3b, a verified
// qwen3-next replay, and the hit-rate collapse of vLLM issue 45238 (a 528-token attention
// block: a shared prefix that covers three blocks gives hits, one that covers two does not).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "model/catalog/model_shape.h"
#include "replay/model_config.h"
#include "replay/replay_builder.h"
#include "traces/generators.h"
#include "traces/replay_source.h"
#include "traces/trace_io.h"

namespace kv {
namespace {

namespace fs = std::filesystem;
using namespace kv::replay;

const char* kTrace = "traces/data/sharegpt_sample.kvtrace";

TEST(MambaPresets, EveryPresetBuildsValidGroups) {
  for (const char* name : {"qwen3-next-80b-a3b", "qwen3.5-4b", "nemotron-h-8b", "granite-4.0-h-small", "jamba-mini"}) {
    const ModelShape m = *find_model_shape(name);
    EXPECT_TRUE(m.has_mamba()) << name;
    EXPECT_GT(m.mamba_state_bytes, 0) << name;
    for (MambaCacheMode mode : {MambaCacheMode::kAlign, MambaCacheMode::kNone, MambaCacheMode::kAll}) {
      auto groups = m.kv_cache_groups(16, mode, 8192);
      ASSERT_TRUE(groups.ok()) << name << ": " << groups.status().message();
      bool has_mamba = false;
      for (const KvCacheGroupSpec& g : *groups) {
        EXPECT_TRUE(validate_spec(g.spec).ok()) << name;
        if (g.spec.type != AttentionType::kMamba) continue;
        has_mamba = true;
        EXPECT_EQ(g.spec.mamba_mode, mode) << name;
        // vLLM: with caching off (none) one block covers max_model_len tokens.
        EXPECT_EQ(g.spec.block_size, mode == MambaCacheMode::kNone ? 8192 : m.attention_block_size(16)) << name;
        EXPECT_GE(g.spec.page_size_bytes(), m.mamba_state_bytes) << name;
      }
      EXPECT_TRUE(has_mamba) << name;
    }
  }
  auto whisper = find_model_shape("whisper-large-v3")->kv_cache_groups(16);
  ASSERT_TRUE(whisper.ok()) << whisper.status().message();
  ASSERT_EQ(whisper->size(), 2u);
  EXPECT_EQ(describe((*whisper)[0].spec), "full");
  EXPECT_EQ((*whisper)[1].spec.type, AttentionType::kCrossAttention);
  EXPECT_EQ((*whisper)[1].layer_names.size(), 32u);
}

TEST(MambaPresets, Qwen3NextGroupLayout) {
  const ModelShape m = *find_model_shape("qwen3-next-80b-a3b");
  EXPECT_EQ(m.num_layers_of(AttentionType::kMamba), 36);
  // 16-bit state: conv (2 * 16 * 128 + 32 * 128) * 3 * 2 + delta rule 32 * 128 * 128 * 2.
  EXPECT_EQ(m.mamba_state_bytes, 1'097'728);
  // 2 KV heads of 256, 16-bit: 2048 bytes a token; 34 * 16 tokens hold one state.
  EXPECT_EQ(m.attention_block_size(16), 544);
  auto groups = m.kv_cache_groups(16, MambaCacheMode::kAlign);
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  ASSERT_EQ(groups->size(), 4u);
  for (int g = 0; g < 3; ++g) {
    const KvCacheGroupSpec& group = (*groups)[static_cast<std::size_t>(g)];
    EXPECT_EQ(describe(group.spec), "mamba(align, 1097728 B)") << g;
    ASSERT_EQ(group.layer_names.size(), 12u);
    // Group g takes the Mamba bucket's layers g, g + 3, ...: model layers g, g + 4, ...
    EXPECT_EQ(group.layer_names.front(), "layers." + std::to_string(g));
    EXPECT_EQ(group.layer_names.back(), "layers." + std::to_string(44 + g));
    EXPECT_EQ(group.spec.page_size_bytes(), 544 * 2048);
  }
  const KvCacheGroupSpec& full = (*groups)[3];
  EXPECT_EQ(describe(full.spec), "full");
  EXPECT_EQ(full.spec.block_size, 544);
  ASSERT_EQ(full.layer_names.size(), 12u);
  EXPECT_EQ(full.layer_names.front(), "layers.3");
  EXPECT_EQ(full.layer_names.back(), "layers.47");
  EXPECT_EQ(full.group_page_size_bytes, 12LL * 544 * 2048);
  EXPECT_EQ(find_model_shape("qwen3.5-4b")->attention_block_size(16), 528);
}

// vLLM lengthens the conv state of gated DeltaNet and Mamba2 layers by one tap per draft token
// (MambaStateShapeCalculator's num_spec: conv_kernel - 1 + num_spec taps); Mamba1's
// (mamba1_state_shape) takes no num_spec. Without drafts nothing changes.
TEST(MambaPresets, ConvStateGrowsOneTapPerDraftToken) {
  const ModelShape next = *find_model_shape("qwen3-next-80b-a3b");
  // One tap: (2 * 16 * 128 + 32 * 128) channels, 2 bytes.
  EXPECT_EQ(next.mamba_conv_tap_bytes, 16'384);
  EXPECT_EQ(next.mamba_state_bytes_with(0), 1'097'728);
  EXPECT_EQ(next.mamba_state_bytes_with(2), 1'130'496);
  // 1,130,496 / (16 * 2048) = 34.5: 35 * 16 tokens.
  EXPECT_EQ(next.attention_block_size(16, 0), 544);
  EXPECT_EQ(next.attention_block_size(16, 2), 560);
  auto groups = next.kv_cache_groups(16, MambaCacheMode::kAlign, 131072, 2);
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  EXPECT_EQ(describe((*groups)[0].spec), "mamba(align, 1130496 B, 2 speculative)");
  EXPECT_EQ((*groups)[0].spec.page_size_bytes(), 560 * 2048);
  EXPECT_EQ((*groups)[3].spec.block_size, 560);

  const ModelShape q35 = *find_model_shape("qwen3.5-4b");  // fp32 delta rule, 16-bit conv
  EXPECT_EQ(q35.mamba_state_bytes_with(2), 2'179'072);
  EXPECT_EQ(q35.attention_block_size(16, 2), 544);
  // Nemotron-H: (128 * 64 + 2 * 8 * 128) channels a tap.
  const ModelShape nemo = *find_model_shape("nemotron-h-8b");
  EXPECT_EQ(nemo.mamba_state_bytes_with(0), 2'158'592);
  EXPECT_EQ(nemo.mamba_state_bytes_with(2), 2'199'552);
  EXPECT_EQ(nemo.attention_block_size(16, 0), 528);
  EXPECT_EQ(nemo.attention_block_size(16, 2), 544);
  // Granite-4.0-H: one group, (8192 + 2 * 128) channels; one draft already needs 544 tokens.
  const ModelShape granite = *find_model_shape("granite-4.0-h-small");
  EXPECT_EQ(granite.mamba_state_bytes_with(1), 2'164'736);
  EXPECT_EQ(granite.attention_block_size(16, 0), 528);
  EXPECT_EQ(granite.attention_block_size(16, 1), 544);
  // Jamba's Mamba1 state does not grow.
  const ModelShape jamba = *find_model_shape("jamba-mini");
  EXPECT_EQ(jamba.mamba_conv_tap_bytes, 0);
  EXPECT_EQ(jamba.mamba_state_bytes_with(3), jamba.mamba_state_bytes);
  EXPECT_EQ(jamba.attention_block_size(16, 3), jamba.attention_block_size(16));
  // Tensor parallelism splits the tap with the channels.
  EXPECT_EQ(shard_for_tp(next, 2)->mamba_state_bytes_with(2), 1'130'496 / 2);
}

// vLLM's MambaSpec takes one speculative state block per draft token when speculative decoding
// is on (any drafter); attention groups take none. Without speculation there are none.
TEST(MambaPresets, SpeculativeDecodingGivesMambaGroupsSpeculativeBlocks) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "model", "qwen3-next-80b-a3b").ok());
  ASSERT_TRUE(set_option(c, "speculative-method", "mtp").ok());
  ASSERT_TRUE(set_option(c, "num-speculative-tokens", "2").ok());
  ASSERT_TRUE(set_option(c, "acceptance-rates", "0.8,0.5").ok());
  ASSERT_TRUE(c.validate().ok()) << c.validate().message();
  auto groups = c.kv_cache_groups();
  ASSERT_TRUE(groups.ok()) << groups.status().message();
  ASSERT_EQ(groups->size(), 4u);
  // Two draft tokens lengthen the conv state by two taps, and the attention block with it.
  EXPECT_EQ(c.block_size(), 560);
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(describe((*groups)[static_cast<std::size_t>(g)].spec), "mamba(align, 1130496 B, 2 speculative)");
  }
  EXPECT_EQ(describe((*groups)[3].spec), "full");
  EXPECT_EQ((*groups)[3].spec.block_size, 560);
  // align: the state, the one before it and the two speculative blocks.
  EXPECT_EQ((*groups)[0].spec.max_blocks_per_request(4096, 8192), 4);
  ASSERT_TRUE(set_option(c, "speculative-method", "none").ok());
  ASSERT_TRUE(set_option(c, "num-speculative-tokens", "0").ok());
  EXPECT_EQ(describe((*c.kv_cache_groups())[0].spec), "mamba(align, 1097728 B)");
  EXPECT_EQ(c.block_size(), 544);
}

TEST(MambaPresets, ModeFollowsPrefixCachingAndTheOptionChecksIt) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "model", "qwen3-next-80b-a3b").ok());
  EXPECT_EQ(c.mamba_cache_mode(), MambaCacheMode::kAlign);
  EXPECT_EQ(c.block_size(), 544);
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  ASSERT_TRUE(set_option(c, "prefix-caching", "off").ok());
  EXPECT_EQ(c.mamba_cache_mode(), MambaCacheMode::kNone);
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  ASSERT_TRUE(set_option(c, "mamba-cache-mode", "align").ok());
  EXPECT_EQ(c.validate().message(), "--mamba-cache-mode: align needs --prefix-caching on");
  EXPECT_FALSE(set_option(c, "mamba-cache-mode", "some").ok());
  ASSERT_TRUE(set_option(c, "model", "whisper-large-v3").ok());
  ASSERT_TRUE(set_option(c, "prefix-caching", "on").ok());
  EXPECT_NE(c.validate().message().find("--prefix-caching: whisper-large-v3 has cross attention"), std::string::npos)
      << c.validate().message();
}

// The CUDA backend runs Mamba groups (every mode) but refuses cross attention and speculative
// decoding, each with its own message.
TEST(MambaPresets, TheGpuDeviceTakesMambaModelsButNotCrossAttention) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "model", "qwen3-next-80b-a3b").ok());
  c.device.kind = DeviceKind::kGpu;
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  ASSERT_TRUE(set_option(c, "prefix-caching", "off").ok());  // mode none
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  ASSERT_TRUE(set_option(c, "model", "whisper-large-v3").ok());
  EXPECT_EQ(c.validate().message(),
            "--device: whisper-large-v3: the CUDA backend has no cross-attention kernels; use --device sim");
}

TEST(MambaPresets, ModelConfigReadsTheHybridFamilies) {
  const std::string base =
      R"("hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
         "intermediate_size": 5120, "vocab_size": 151936, "num_hidden_layers": 8)";
  auto next = parse_model_config("next.json", "{" + base + R"(, "full_attention_interval": 4,
      "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
      "linear_num_key_heads": 16, "linear_num_value_heads": 32})");
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->num_layers_of(AttentionType::kMamba), 6);
  EXPECT_EQ(next->mamba_state_bytes, find_model_shape("qwen3-next-80b-a3b")->mamba_state_bytes);
  auto nemo = parse_model_config("nemo.json", "{" + base + R"(, "hybrid_override_pattern": "M-M*-M--",
      "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4})");
  ASSERT_TRUE(nemo.ok()) << nemo.status().message();
  EXPECT_EQ(nemo->layers, 4);
  EXPECT_EQ(nemo->num_layers_of(AttentionType::kFullAttention), 1);
  EXPECT_EQ(nemo->mamba_state_bytes, find_model_shape("nemotron-h-8b")->mamba_state_bytes);
  auto jamba = parse_model_config("jamba.json", "{" + base + R"(, "attn_layer_period": 8, "attn_layer_offset": 4,
      "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2})");
  ASSERT_TRUE(jamba.ok()) << jamba.status().message();
  EXPECT_EQ(jamba->layer_type(4), AttentionType::kFullAttention);
  EXPECT_EQ(jamba->num_layers_of(AttentionType::kMamba), 7);
  EXPECT_EQ(parse_model_config("e.json", "{" + base + R"(, "hybrid_override_pattern": "M-E*-M-E"})").status().message(),
            "e.json: hybrid_override_pattern[2]: unsupported block 'E' (valid: M, *, -; MoE blocks E are not read)");
  EXPECT_EQ(parse_model_config("w.json", "{" + base + R"(, "is_encoder_decoder": true})").status().message(),
            "w.json: is_encoder_decoder: encoder-decoder configs are not read (use --model whisper-large-v3)");
}

ReplaySummary replay(ReplayConfig& c, std::unique_ptr<RequestSource> requests, const trace::TraceHeader& header,
                     std::vector<RequestMetrics>* done = nullptr) {
  c.run.replay.keep_decision_text = false;
  auto run = build_replay(c, std::move(requests), header.hash_seed, header.source);
  EXPECT_TRUE(run.ok()) << run.status().message();
  if (!run.ok()) return {};
  auto replayer = run->make_replayer(c);
  if (done != nullptr) replayer->on_request_done = [done](const RequestMetrics& m) { done->push_back(m); };
  auto summary = replayer->run();
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return summary.ok() ? *summary : ReplaySummary{};
}

TEST(MambaReplay, Qwen3NextVerifiedFullHasNoViolations) {
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "model", "qwen3-next-80b-a3b").ok());
  c.device.verify = sim::VerifyMode::kFull;
  auto source = trace::TraceRequestSource::open(kTrace, trace::ReplaySourceOptions{});  // all 1,000 requests
  ASSERT_TRUE(source.ok()) << source.status().message();
  const trace::TraceHeader header = (*source)->header();
  const ReplaySummary s = replay(c, std::move(source).value(), header);
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  EXPECT_GT(s.requests_finished, 0);
  ASSERT_EQ(s.groups.size(), 4u);
}

// Requests with a prefix-cache hit among `n` prompts of `shared` + `unique` tokens, one at a time.
int requests_with_hits(int shared, int unique, int n, const std::vector<std::pair<std::string, std::string>>& options) {
  trace::PrefixGenOptions px;
  px.num_prompts = n;
  px.num_prefixes = 1;
  px.prefix_len = shared;
  px.suffix_len = unique;
  px.repeat = 1;
  px.output_len = 4;
  const fs::path path = fs::temp_directory_path() / ("kvsim_mamba_collapse_" + std::to_string(::getpid()) + "_" +
                                                     std::to_string(shared) + ".kvtrace");
  {
    auto writer = trace::TraceWriter::create(path.string(), trace::prefix_gen_header(px), true);
    EXPECT_TRUE(writer.ok()) << writer.status().message();
    if (!writer.ok()) return -1;
    EXPECT_TRUE(trace::generate_prefix(px, *writer).ok());
    EXPECT_TRUE(writer->close().ok());
  }
  ReplayConfig c;
  EXPECT_TRUE(set_option(c, "model", "qwen3.5-4b").ok());
  EXPECT_TRUE(set_option(c, "max-num-seqs", "1").ok());
  for (const auto& [name, value] : options) EXPECT_TRUE(set_option(c, name, value).ok()) << name;
  c.device.verify = sim::VerifyMode::kFast;
  auto source = trace::TraceRequestSource::open(path.string(), trace::ReplaySourceOptions{});
  EXPECT_TRUE(source.ok()) << source.status().message();
  if (!source.ok()) return -1;
  const trace::TraceHeader header = (*source)->header();
  std::vector<RequestMetrics> done;
  const ReplaySummary s = replay(c, std::move(source).value(), header, &done);
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  fs::remove(path);
  int hits = 0;
  for (const RequestMetrics& m : done) hits += m.cached_tokens > 0 ? 1 : 0;
  return hits;
}

// vLLM as in issue 45238 (no chunk end at the shared-prefix boundary, a 2,048-token budget):
// the first chunk of a 2,200-token prompt ends at 1,584 (three 528-token blocks), the only
// state below the unique suffix. 1,600 shared tokens cover it: later requests hit it. 1,500
// do not: no state is ever cached inside the shared prefix.
TEST(MambaReplay, HitRateCollapsesWhenTheSharedPrefixMissesTheFirstChunkEnd) {
  const std::vector<std::pair<std::string, std::string>> issue = {{"mamba-prefix-split", "off"},
                                                                  {"max-num-batched-tokens", "2048"}};
  EXPECT_EQ(requests_with_hits(1600, 600, 12, issue), 11);  // all but the first
  EXPECT_EQ(requests_with_hits(1500, 700, 12, issue), 0);
  // kvsim's default (the later vLLM rule) cuts a chunk at the boundary: the 1,056 state is
  // cached by the second request, so from the third on every request hits.
  EXPECT_EQ(requests_with_hits(1500, 700, 12, {{"max-num-batched-tokens", "2048"}}), 10);
  // mode all caches a state at every block end of every chunk.
  auto all = issue;
  all.emplace_back("mamba-cache-mode", "all");
  EXPECT_EQ(requests_with_hits(1500, 700, 12, all), 11);
}

}  // namespace
}  // namespace kv
