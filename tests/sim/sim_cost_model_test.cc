// Cost model and profile table: presets, roofline numbers checked by hand, monotonicity,
// CUDA-graph effects, profile interpolation, the messages of bad profile CSVs, and the
// second-tier transfer nodes.
#include "sim/cost_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "sim/hardware_specs.h"
#include "sim/profile_table.h"

namespace kv::sim {
namespace {

ModelShape model(const char* name) { return *find_model_shape(name); }
GpuSpec gpu(const char* name) { return *find_gpu_spec(name); }

CudaGraphConfig graphs(CudaGraphMode mode) {
  CudaGraphConfig c;
  c.mode = mode;
  return c;
}

// A batch of `seqs` decodes, each with `context` tokens already cached.
StepShape decode(std::int64_t seqs, std::int64_t context) {
  StepShape s;
  s.num_tokens = seqs;
  s.num_seqs = seqs;
  s.num_sampled = seqs;
  s.kv_tokens_read = seqs * (context + 1);
  s.attended_pairs = seqs * (context + 1);
  s.uniform_decode = true;
  return s;
}

// One prefill chunk of `tokens` on top of `context` cached tokens.
StepShape prefill(std::int64_t tokens, std::int64_t context) {
  StepShape s;
  s.num_tokens = tokens;
  s.num_seqs = 1;
  s.kv_tokens_read = context + tokens;
  s.attended_pairs = tokens * context + tokens * (tokens + 1) / 2;
  s.num_block_ids = (tokens + 15) / 16;
  return s;
}

TEST(HardwareSpecsTest, PresetsAndLookup) {
  ModelShape m = model("llama3-8b");
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.intermediate, 14336);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.kv_bytes_per_token(), 2 * 32 * 8 * 128 * 2);  // 128 KiB per token
  EXPECT_EQ(model("llama3-70b").layers, 80);
  EXPECT_EQ(model("tiny").hidden, 256);
  EXPECT_EQ(gpu("h200").hbm_bytes_per_s, 4'800'000'000'000);
  EXPECT_EQ(gpu("h100-sxm").sm_count, 132);

  EXPECT_EQ(find_model_shape("gpt5").status().message(),
            "unknown model 'gpt5' (valid: tiny, small, llama3-1b, llama3-8b, llama3-70b, gpt-oss-20b, gpt-oss-120b, "
            "gemma-3-27b, llama-4-scout, gpt-oss-20b-dense, qwen3-next-80b-a3b, qwen3.5-4b, nemotron-h-8b, "
            "granite-4.0-h-small, jamba-mini, whisper-large-v3)");
  EXPECT_EQ(find_gpu_spec("a100").status().message(),
            "unknown gpu 'a100' (valid: a100-40gb, a100-80gb, l40s, h100-pcie, h100-sxm, h200, b200)");
}

TEST(CostModelTest, SummarizeCountsPerRequest) {
  StepPlan plan;
  ScheduledRequest a;  // decode at position 10
  a.num_computed_tokens = 10;
  a.token_ids = {7};
  a.samples = true;
  ScheduledRequest b;  // a 4-token chunk after 8 cached tokens, 1 new block
  b.is_new = true;
  b.num_computed_tokens = 8;
  b.block_ids = {3, 4, 5};
  b.token_ids = {1, 2, 3, 4};
  plan.requests = {a, b};
  StepShape s = summarize(plan);
  EXPECT_EQ(s.num_tokens, 5);
  EXPECT_EQ(s.num_seqs, 2);
  EXPECT_EQ(s.num_sampled, 1);
  EXPECT_EQ(s.kv_tokens_read, 11 + 12);
  EXPECT_EQ(s.attended_pairs, (1 * 10 + 1) + (4 * 8 + 10));
  EXPECT_EQ(s.num_block_ids, 3);
  EXPECT_FALSE(s.uniform_decode);
}

TEST(CostModelTest, SummarizeChargesAWindowNotTheContext) {
  StepPlan plan;
  ScheduledRequest a;  // decode at position 10,000
  a.num_computed_tokens = 10'000;
  a.token_ids = {7};
  ScheduledRequest b;  // 4 tokens after 2 cached ones: inside the window
  b.num_computed_tokens = 2;
  b.token_ids = {1, 2, 3, 4};
  b.group_block_ids = {{0, 3}, {4}};
  plan.requests = {a, b};
  StepShape s = summarize(plan, 128);
  EXPECT_EQ(s.kv_tokens_read, 10'001 + 6);
  EXPECT_EQ(s.window_kv_tokens_read, 128 + 6);  // the last 128 keys, not 10,001
  EXPECT_EQ(s.window_attended_pairs, 128 + (3 + 4 + 5 + 6));
  EXPECT_EQ(s.attended_pairs, 10'001 + (3 + 4 + 5 + 6));
  EXPECT_EQ(s.num_block_ids, 3);                        // both groups' ids
  EXPECT_EQ(summarize(plan).window_kv_tokens_read, 0);  // no window: not computed
}

TEST(CostModelTest, WindowedLayersAttendToTheirWindow) {
  const ModelShape hybrid = model("gpt-oss-20b");  // 12 sliding (128) + 12 full layers
  CostModel cm(hybrid, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  CostModel dense(model("gpt-oss-20b-dense"), gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  StepShape s = decode(8, 20'000);
  s.window = model_window(hybrid);
  ASSERT_EQ(s.window, 128);
  s.window_kv_tokens_read = 8 * 128;
  s.window_attended_pairs = 8 * 128;
  const std::int64_t launch = cm.ns_to_cycles(cm.gpu().launch_overhead_ns);
  const std::int64_t full = cm.kernel_cycles(Kernel::kAttention, {8, 8, s.kv_tokens_read}, s.attended_pairs);
  const std::int64_t window = cm.kernel_cycles(Kernel::kAttention, {8, 8, 8 * 128}, 8 * 128);
  const std::int64_t fixed = cm.ns_to_cycles(cm.gpu().attention_latency_ns);  // every launch pays it
  EXPECT_LT((window - fixed) * 10, full - fixed);
  const StepCost c = cm.cost(s);
  EXPECT_EQ(c.node_cycles[static_cast<int>(StepNode::kAttention)], 12 * (full + launch) + 12 * (window + launch));
  // The dense twin pays the whole context in all 24 layers.
  EXPECT_EQ(dense.cost(s).node_cycles[static_cast<int>(StepNode::kAttention)], 24 * (full + launch));
  EXPECT_LT(c.duration_ns, dense.cost(s).duration_ns);
}

// Invariant 10: a Mamba layer has no attention kernels; it pays its GEMMs and its state, read
// and written once per scheduled request per step, so the state term grows with the requests.
TEST(CostModelTest, MambaLayersPayTheirStateNotAttention) {
  const ModelShape m = model("qwen3-next-80b-a3b");  // 36 gated-DeltaNet + 12 full layers
  CostModel cm(m, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  const StepShape s = decode(8, 20'000);
  const std::int64_t launch = cm.ns_to_cycles(cm.gpu().launch_overhead_ns);
  const std::int64_t full = cm.kernel_cycles(Kernel::kAttention, {8, 8, s.kv_tokens_read}, s.attended_pairs);
  const KernelQuery dense{8, 8, 0};
  const StepCost c = cm.cost(s);
  EXPECT_EQ(c.node_cycles[static_cast<int>(StepNode::kAttention)],
            12 * (full + launch) + cm.mamba_node_cycles(dense, launch));
  EXPECT_EQ(c.node_cycles[static_cast<int>(StepNode::kQkvProj)],
            12 * (cm.kernel_cycles(Kernel::kQkvProj, dense, 0) + launch));
  // Decode is bound by the state traffic: 36 layers * 8 requests * 2 * 1,097,728 bytes.
  const std::int64_t state_bytes = 36LL * 8 * 2 * m.mamba_state_bytes;
  EXPECT_GE(cm.mamba_node_cycles(dense, 0), cm.roofline_cycles(KernelWork{0, state_bytes, cm.gpu().peak_flops}));
  EXPECT_GT(cm.mamba_node_cycles({8, 16, 0}, 0), cm.mamba_node_cycles(dense, 0));
  // Two draft tokens a step: the state vLLM keeps is two conv taps longer (1,130,496 bytes).
  CostModel drafting(m, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr, false, {}, 2);
  const std::int64_t grown = 36LL * 8 * 2 * m.mamba_state_bytes_with(2);
  EXPECT_GE(drafting.mamba_node_cycles(dense, 0), cm.roofline_cycles(KernelWork{0, grown, cm.gpu().peak_flops}));
  EXPECT_GT(drafting.mamba_node_cycles(dense, 0), cm.mamba_node_cycles(dense, 0));
}

// Invariant 11: an encoder-decoder model's step runs the encoder over its admissions' encoder
// tokens before the decoder (a node on the critical path), and every decoder query reads its
// request's encoder keys in each layer's cross attention. Decoder-only models have neither.
TEST(CostModelTest, EncoderNodeAndCrossAttentionOfWhisper) {
  const ModelShape m = model("whisper-large-v3");
  EXPECT_EQ(m.encoder_layers, 32);
  EXPECT_EQ(m.encoder_tokens, 1500);
  CostModel cm(m, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  StepShape admit = prefill(20, 0);
  admit.encoder_tokens = 1500;
  admit.encoder_pairs = 1500 * 1500;
  const std::int64_t launch = cm.ns_to_cycles(cm.gpu().launch_overhead_ns);
  const StepCost with = cm.cost(admit);
  EXPECT_EQ(with.encoder_cycles, cm.encoder_node_cycles(admit, launch));
  EXPECT_GT(with.encoder_cycles, 0);
  const StepCost without = cm.cost(prefill(20, 0));  // the same decoder work, no encoder input
  EXPECT_EQ(without.encoder_cycles, 0);
  EXPECT_EQ(with.cycles - without.cycles, with.encoder_cycles);  // on the critical path
  // Two encoder inputs cost more than one; the bidirectional attention grows with the pairs.
  StepShape two = admit;
  two.encoder_tokens = 3000;
  two.encoder_pairs = 2 * 1500 * 1500;
  EXPECT_GT(cm.encoder_node_cycles(two, launch), with.encoder_cycles);
  // Cross attention: 32 layers, each decode query reading 1500 keys, in the attention node.
  const StepShape d = decode(8, 100);
  const std::int64_t cross = cm.cross_attention_cycles(d, launch);
  EXPECT_GT(cross, 0);
  const std::int64_t self = cm.kernel_cycles(Kernel::kAttention, {8, 8, d.kv_tokens_read}, d.attended_pairs);
  EXPECT_EQ(cm.cost(d).node_cycles[static_cast<int>(StepNode::kAttention)], 32 * (self + launch) + cross);
  // A decoder-only model: no cross term, and its DAG has no encoder node.
  CostModel llama(model("llama3-8b"), gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  EXPECT_EQ(llama.cross_attention_cycles(d, launch), 0);
  EXPECT_EQ(llama.cost(admit).encoder_cycles, 0);
}

TEST(CostModelTest, RooflineOfOneGemmByHand) {
  CostModel cm(model("llama3-8b"), gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  // qkv_proj for one token: [1, 4096] x [4096, 6144]: bytes = (4096 + 4096*6144 + 6144) * 2
  // = 50,352,128; at 3.35 TB/s * 85% (the preset's measured 16-bit GEMM bandwidth) and
  // 1980 MHz: 50352128 * 1980e6 / 2.8475e12 = 35012.9 -> 35013 cycles (memory-bound:
  // 2 * 4096 * 6144 FLOPs need only ~72 cycles).
  KernelWork w = cm.work(Kernel::kQkvProj, {1, 1, 0}, 0);
  EXPECT_EQ(w.bytes, 50'352'128);
  EXPECT_EQ(w.flops, 2 * 4096 * 6144);
  EXPECT_EQ(cm.roofline_cycles(w), 35013);
  EXPECT_EQ(cm.ns_to_cycles(1000), 1980);
  EXPECT_EQ(cm.cycles_to_ns(1980), 1000);
  EXPECT_EQ(cm.cycles_to_ns(1981), 1001);  // rounded up
}

TEST(CostModelTest, Fp8WeightsHalveGemmBytesAndRunAtTheFp8Peak) {
  ModelShape m = model("llama3-8b");
  m.dtype = DType::kFp8;
  m.kv_dtype = DType::kBf16;
  CostModel cm(m, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  // qkv_proj for one token in fp8 (W8A8): bytes = 4096 * 1 (fp8 input) + 4096 * 6144 * 1
  // (weights) + 6144 * 2 (bf16 output) = 25,182,208, at H100 SXM's fp8 peak.
  KernelWork w = cm.work(Kernel::kQkvProj, {1, 1, 0}, 0);
  EXPECT_EQ(w.bytes, 25'182'208);
  EXPECT_EQ(w.flops, 2 * 4096 * 6144);
  EXPECT_EQ(w.peak_flops, 1'979'000'000'000'000);
  // Norms and the LM head stay 16-bit, at the bf16 peak.
  EXPECT_EQ(cm.work(Kernel::kLmHead, {1, 1, 0}, 0).peak_flops, 989'000'000'000'000);

  // Without fp8 tensor cores the GEMM is weight-only: 16-bit input, bf16 peak.
  GpuSpec no_fp8 = gpu("h100-sxm");
  no_fp8.peak_fp8_flops = 0;
  CostModel weight_only(m, no_fp8, graphs(CudaGraphMode::kNone), nullptr);
  KernelWork wo = weight_only.work(Kernel::kQkvProj, {1, 1, 0}, 0);
  EXPECT_EQ(wo.bytes, 4096 * 2 + 4096 * 6144 + 6144 * 2);
  EXPECT_EQ(wo.peak_flops, 989'000'000'000'000);

  // fp4 weights: half a byte per weight.
  m.dtype = DType::kFp4;
  CostModel fp4(m, no_fp8, graphs(CudaGraphMode::kNone), nullptr);
  EXPECT_EQ(fp4.work(Kernel::kDownProj, {1, 1, 0}, 0).bytes, 14336 * 2 + 14336 * 4096 / 2 + 4096 * 2);
}

TEST(CostModelTest, KvCacheDtypeScalesTheAttentionsKvBytes) {
  ModelShape m = model("llama3-8b");
  CostModel bf16(m, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  m.kv_dtype = DType::kFp8;
  CostModel fp8(m, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  // One decode reading 1000 cached tokens: K and V of 8 heads of 128 per token, per layer.
  const KernelQuery q{1, 1, 1000};
  EXPECT_EQ(bf16.work(Kernel::kAttention, q, 1000).bytes - fp8.work(Kernel::kAttention, q, 1000).bytes,
            2 * 1000 * 1024);
  // The cache write reads 16-bit K and V and writes them in the cache's format.
  EXPECT_EQ(bf16.work(Kernel::kCacheWrite, q, 0).bytes - fp8.work(Kernel::kCacheWrite, q, 0).bytes, 2 * 1024);
  // A decode step over long contexts is faster with the smaller cache; the weights do not move.
  EXPECT_LT(fp8.cost(decode(64, 8000)).duration_ns, bf16.cost(decode(64, 8000)).duration_ns);
  EXPECT_EQ(fp8.work(Kernel::kQkvProj, q, 0).bytes, bf16.work(Kernel::kQkvProj, q, 0).bytes);
}

TEST(CostModelTest, TensorParallelSplitsTheWorkAndAddsAllReduces) {
  const ModelShape whole = model("llama3-8b");
  const ModelShape rank = *shard_for_tp(whole, 2);
  CostModel one(whole, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  CostModel two(rank, gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  // Each rank reads half the projection weights.
  const KernelQuery q{1, 1, 0};
  EXPECT_EQ(two.work(Kernel::kGateUpProj, q, 0).flops * 2, one.work(Kernel::kGateUpProj, q, 0).flops);
  // One ring all-reduce of 64 tokens * 4096 * 2 bytes = 524,288 bytes over 2 ranks: 2 steps of
  // 2000 ns + 262,144 / 380 GB/s (the preset's measured NVLink 4; 689.9 -> 690 ns) = 5380 ns.
  EXPECT_EQ(two.all_reduce_ns(64 * 4096 * 2), 5380);
  EXPECT_EQ(one.all_reduce_ns(64 * 4096 * 2), 0);
  StepCost c1 = one.cost(decode(64, 1000));
  StepCost c2 = two.cost(decode(64, 1000));
  const int ar = static_cast<int>(StepNode::kAllReduce);
  EXPECT_EQ(c1.node_cycles[ar], 0);
  // 2 all-reduces per layer, plus gathering 64 rows of 128,256 fp32 logits (1 step of 2000 ns
  // + 16,416,768 bytes / 380 GB/s = 43,203 ns).
  EXPECT_EQ(c2.node_cycles[ar], two.ns_to_cycles(2 * 32 * 5380 + 2000 + 43203));
  EXPECT_LT(c2.node_cycles[static_cast<int>(StepNode::kQkvProj)], c1.node_cycles[static_cast<int>(StepNode::kQkvProj)]);
  // A PCIe card pays more for the same all-reduce.
  CostModel pcie(rank, gpu("l40s"), graphs(CudaGraphMode::kNone), nullptr);
  EXPECT_GT(pcie.all_reduce_ns(64 * 4096 * 2), two.all_reduce_ns(64 * 4096 * 2));
}

TEST(CostModelTest, HostTermsAndAsynchronousScheduling) {
  GpuSpec g = gpu("h100-sxm");
  g.host_step_ns = 100'000;
  g.host_per_request_ns = 1000;
  g.host_per_block_ns = 0;
  g.host_per_token_ns = 10;
  CostModel sync(model("llama3-8b"), g, graphs(CudaGraphMode::kFullAndPiecewise), nullptr);
  CostModel async(model("llama3-8b"), g, graphs(CudaGraphMode::kFullAndPiecewise), nullptr, true);
  const StepShape s = decode(64, 1000);
  EXPECT_EQ(sync.host_ns(s), 100'000 + 64 * 1000 + 64 * 10);
  const StepCost a = sync.cost(s), b = async.cost(s);
  // Async: the host's share leaves the critical path; the step is the device's path alone.
  EXPECT_EQ(a.cycles - b.cycles, a.node_cycles[static_cast<int>(StepNode::kHostSchedule)]);
  // ...unless the host is the slower side: then the step takes the host's time.
  g.host_step_ns = 50'000'000;
  CostModel slow_host(model("llama3-8b"), g, graphs(CudaGraphMode::kFullAndPiecewise), nullptr, true);
  EXPECT_EQ(slow_host.cost(s).duration_ns, slow_host.cycles_to_ns(slow_host.ns_to_cycles(slow_host.host_ns(s))));
}

TEST(HardwareSpecsTest, CatalogFiguresAndPresetFileFields) {
  EXPECT_EQ(gpu("a100-80gb").peak_fp8_flops, 0);  // Ampere: weight-only fp8
  EXPECT_EQ(gpu("a100-80gb").peak_flops_for(DType::kFp8), 312'000'000'000'000);
  EXPECT_EQ(gpu("l40s").peak_flops_for(DType::kFp8), 733'000'000'000'000);
  EXPECT_EQ(gpu("b200").peak_flops_for(DType::kFp4), 9'000'000'000'000'000);
  EXPECT_EQ(gpu("h100-sxm").peak_flops_for(DType::kFp4), 989'000'000'000'000);
  for (const GpuSpec& g : gpu_presets()) {
    EXPECT_GT(g.peak_flops, 0) << g.name;
    EXPECT_GE(g.peak_fp8_flops == 0 ? 2 * g.peak_flops : g.peak_fp8_flops, 2 * g.peak_flops - 2'000'000'000'000)
        << g.name;
    EXPECT_GT(g.interconnect_bytes_per_s, 0) << g.name;
    // Every field reads back from its preset file text.
    GpuSpec copy = g;
    copy.name = "copy-of-" + g.name;
    auto back = parse_gpu_spec_text("x.gpu", gpu_spec_to_text(copy, g.name, ""));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->interconnect_latency_ns, g.interconnect_latency_ns);
    EXPECT_EQ(back->peak_fp4_flops, g.peak_fp4_flops);
    EXPECT_EQ(back->host_per_token_ns, g.host_per_token_ns);
  }
}

TEST(CostModelTest, DecodeOnLlama3_8bH100IsBandwidthBound) {
  CostModel cm(model("llama3-8b"), gpu("h100-sxm"), graphs(CudaGraphMode::kFullAndPiecewise), nullptr);
  // One decode at context 1000 reads every weight once: per layer qkv 4096*6144, o 4096*4096,
  // gate_up 4096*28672, down 14336*4096 parameters = 218.1M, * 32 layers * 2 bytes
  // = 13.96 GB, plus lm_head 128256*4096*2 = 1.05 GB: 15.01 GB at 3.35 TB/s * 85% (the
  // preset's measured GEMM bandwidth) = 5.27 ms; KV 1001 tokens * 128 KiB = 0.13 GB at 90%:
  // 0.04 ms; 32 attention launches at 12 us fixed each: 0.38 ms; plus ~60 us of host work,
  // copies and launches: about 5.76 ms.
  StepCost c = cm.cost(decode(1, 1000));
  EXPECT_EQ(c.dispatch.runtime_mode, CudaGraphMode::kFull);
  EXPECT_GT(c.duration_ns, 5'700'000);
  EXPECT_LT(c.duration_ns, 5'850'000);
  EXPECT_EQ(c.kernels, 1 + 10 * 32 + 2);

  // The same step on an H200 (its own measured kernels, 4.8 TB/s): 15.01 GB at 87% = 4.18 TB/s
  // = 3.59 ms, 129 GEMM launches at 4.9 us fixed each: 0.63 ms; KV at 93%: 0.03 ms; 32
  // attention launches at 9.2 us: 0.29 ms; 161 elementwise launches at 2.6 us: 0.42 ms; host
  // work: about 5.0 ms (a measured whole step of one sequence and 512 keys took 4.92 ms,
  // reports/gpu/2026-11-27-h200/).
  CostModel h200(model("llama3-8b"), gpu("h200"), graphs(CudaGraphMode::kFullAndPiecewise), nullptr);
  std::int64_t t200 = h200.cost(decode(1, 1000)).duration_ns;
  EXPECT_GT(t200, 4'950'000);
  EXPECT_LT(t200, 5'150'000);
}

TEST(CostModelTest, MonotoneInTokensAndContext) {
  for (CudaGraphMode mode : {CudaGraphMode::kNone, CudaGraphMode::kPiecewise, CudaGraphMode::kFull,
                             CudaGraphMode::kFullDecodeOnly, CudaGraphMode::kFullAndPiecewise}) {
    CostModel cm(model("llama3-8b"), gpu("h100-sxm"), graphs(mode), nullptr);
    std::int64_t last = 0;
    for (std::int64_t t = 1; t <= 8192; t += (t < 600 ? 1 : 97)) {
      std::int64_t d = cm.cost(prefill(t, 0)).duration_ns;
      EXPECT_GE(d, last) << to_string(mode) << " tokens " << t;
      last = d;
    }
    last = 0;
    for (std::int64_t ctx = 0; ctx <= 200'000; ctx += 5000) {
      std::int64_t d = cm.cost(decode(64, ctx)).duration_ns;
      EXPECT_GE(d, last) << to_string(mode) << " context " << ctx;
      last = d;
    }
    EXPECT_GT(cm.cost(prefill(512, 100'000)).duration_ns, cm.cost(prefill(512, 0)).duration_ns);
  }
}

TEST(CostModelTest, GraphModesChangeLaunchCostsAndPadding) {
  // The tiny model is launch-bound: 22 layer kernels of a few hundred ns each.
  auto cost_of = [](CudaGraphMode mode, const StepShape& s) {
    CostModel cm(model("tiny"), gpu("h100-sxm"), graphs(mode), nullptr);
    return cm.cost(s);
  };
  StepShape five = decode(5, 100);
  std::int64_t none = cost_of(CudaGraphMode::kNone, five).duration_ns;
  std::int64_t piecewise = cost_of(CudaGraphMode::kPiecewise, five).duration_ns;
  std::int64_t full = cost_of(CudaGraphMode::kFullAndPiecewise, five).duration_ns;
  EXPECT_GT(none, piecewise);
  EXPECT_GT(piecewise, full);
  // NONE pays 4 us for each of 2 * 10 + 1 (final norm) graph-able kernels; FULL's one 6 us
  // graph launch overlaps the input copies (a parallel branch of the step DAG).
  EXPECT_NEAR(static_cast<double>(none - full), 21 * 4000.0, 1000.0);

  // FULL pads 5 tokens to 8: the dense kernels cost what 8 tokens cost.
  StepCost full5 = cost_of(CudaGraphMode::kFullAndPiecewise, five);
  StepCost full8 = cost_of(CudaGraphMode::kFullAndPiecewise, decode(8, 100));
  EXPECT_EQ(full5.dispatch.batch.num_tokens, 8);
  EXPECT_EQ(full5.node_cycles[static_cast<int>(StepNode::kQkvProj)],
            full8.node_cycles[static_cast<int>(StepNode::kQkvProj)]);
  StepCost none5 = cost_of(CudaGraphMode::kNone, five);
  StepCost none8 = cost_of(CudaGraphMode::kNone, decode(8, 100));
  EXPECT_LT(none5.node_cycles[static_cast<int>(StepNode::kQkvProj)],
            none8.node_cycles[static_cast<int>(StepNode::kQkvProj)]);
}

TEST(CostModelTest, EmptyStepCostsOnlyHostWork) {
  CostModel cm(model("tiny"), gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  StepCost c = cm.cost(StepShape{});
  EXPECT_EQ(c.duration_ns, 40000);  // host_step_ns
  EXPECT_EQ(c.kernels, 0);
}

TEST(CostModelTest, CriticalPathIsTheChainThroughTheForward) {
  CostModel cm(model("llama3-8b"), gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  StepCost c = cm.cost(prefill(2048, 0));
  std::int64_t sum = 0;
  for (StepDag::NodeId n : cm.dag().critical_path()) sum += cm.dag().cycles(n);
  EXPECT_EQ(sum, c.cycles);
  std::vector<StepDag::NodeId> path = cm.dag().critical_path();
  EXPECT_EQ(cm.dag().name(path.front()), "host_schedule");
  EXPECT_EQ(cm.dag().name(path.back()), "d2h_sampled");
}

// --- profile table ---

constexpr const char* kProfile =
    "kernel,num_tokens,num_seqs,context_tokens,time_ns\n"
    "qkv_proj,1,0,0,1000\n"
    "qkv_proj,64,0,0,2000\n"
    "qkv_proj,256,0,0,5000\n"
    "attention,9,1,1000,500\n"
    "attention,1,1,1000,100\n"
    "attention,1,1,3000,300\n"
    "attention,9,1,3000,900\n"
    "attention,8,8,8000,4000\n";

TEST(ProfileTableTest, ExactAtPointsLinearBetween) {
  StatusOr<ProfileTable> t = ProfileTable::parse("p.csv", kProfile);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->num_rows(), 8u);
  EXPECT_TRUE(t->has(Kernel::kQkvProj));
  EXPECT_FALSE(t->has(Kernel::kOProj));
  EXPECT_EQ(t->lookup_ns(Kernel::kQkvProj, {1, 0, 0}), 1000);
  EXPECT_EQ(t->lookup_ns(Kernel::kQkvProj, {64, 0, 0}), 2000);
  EXPECT_EQ(t->lookup_ns(Kernel::kQkvProj, {256, 0, 0}), 5000);
  EXPECT_EQ(t->lookup_ns(Kernel::kQkvProj, {160, 0, 0}), 3500);  // halfway
  EXPECT_EQ(t->lookup_ns(Kernel::kQkvProj, {32, 0, 0}), 1492);   // 1000 + 1000 * 31/63
  EXPECT_EQ(t->lookup_ns(Kernel::kQkvProj, {512, 0, 0}), 9000);  // end segment extended
  EXPECT_EQ(t->lookup_ns(Kernel::kQkvProj, {1, 7, 123}), 1000);  // seqs, context ignored

  // Attention: bilinear in (num_tokens, context_tokens) within the num_seqs = 1 group.
  EXPECT_EQ(t->lookup_ns(Kernel::kAttention, {1, 1, 1000}), 100);
  EXPECT_EQ(t->lookup_ns(Kernel::kAttention, {9, 1, 3000}), 900);
  EXPECT_EQ(t->lookup_ns(Kernel::kAttention, {1, 1, 2000}), 200);
  EXPECT_EQ(t->lookup_ns(Kernel::kAttention, {5, 1, 2000}), 450);  // (200 + 700) / 2
  // num_seqs 3 is nearer 1 than 8; 5 is nearer 8 (a single point: constant).
  EXPECT_EQ(t->lookup_ns(Kernel::kAttention, {5, 3, 2000}), 450);
  EXPECT_EQ(t->lookup_ns(Kernel::kAttention, {5, 5, 2000}), 4000);

  EXPECT_EQ(interpolate({10, 20}, {100, 50}, 40), 0);  // clamped at 0
  EXPECT_EQ(interpolate({10, 20}, {100, 50}, 15), 75);
}

TEST(ProfileTableTest, CostModelUsesProfileAndFallsBack) {
  StatusOr<ProfileTable> t = ProfileTable::parse("p.csv", kProfile);
  ASSERT_TRUE(t.ok());
  CostModel with(model("llama3-8b"), gpu("h100-sxm"), graphs(CudaGraphMode::kNone), &*t);
  CostModel without(model("llama3-8b"), gpu("h100-sxm"), graphs(CudaGraphMode::kNone), nullptr);
  EXPECT_EQ(with.kernel_cycles(Kernel::kQkvProj, {160, 1, 0}, 0), 3500 * 1980 / 1000);
  EXPECT_EQ(with.kernel_cycles(Kernel::kOProj, {160, 1, 0}, 0), without.kernel_cycles(Kernel::kOProj, {160, 1, 0}, 0));
}

std::string error_of(const std::string& text) {
  StatusOr<ProfileTable> t = ProfileTable::parse("bad.csv", text);
  return t.ok() ? "ok" : t.status().message();
}

TEST(ProfileTableTest, BadCsvNamesFileLineAndColumn) {
  const std::string header = "kernel,num_tokens,num_seqs,context_tokens,time_ns\n";
  EXPECT_EQ(error_of(""),
            "bad.csv: empty profile, expected the header "
            "'kernel,num_tokens,num_seqs,context_tokens,time_ns'");
  EXPECT_EQ(error_of("kernel,tokens,time\n"),
            "bad.csv:1: header is 'kernel,tokens,time', expected "
            "'kernel,num_tokens,num_seqs,context_tokens,time_ns'");
  EXPECT_EQ(error_of(header + "qkv_proj,1,0,0,10\nqkv_proj,abc,0,0,5\n"),
            "bad.csv:3: column 2 (num_tokens): 'abc' is not an integer");
  EXPECT_EQ(error_of(header + "qkv_proj,1,0,0\n"),
            "bad.csv: line 2: 4 fields where the header has 5: field time_ns is missing");
  EXPECT_EQ(error_of(header + "qkv_proj,1,0,0,5,6\n"),
            "bad.csv: line 2: 6 fields where the header has 5: an extra field after time_ns");
  // The strict reader of every CSV input (model/util/csv_table.h): no quoting, no stray
  // carriage return, and a header alone is not a profile.
  EXPECT_EQ(error_of(header), "bad.csv: no profile rows (a header alone)");
  EXPECT_EQ(error_of(header + "\"qkv_proj\",1,0,0,5\n"),
            "bad.csv: line 2: field kernel: a quote (this file has no quoting)");
  EXPECT_EQ(error_of(header + "qkv_proj,1,0,0,5" + std::string(100000, '"') + "\n"),
            "bad.csv: line 2: field time_ns: a quote (this file has no quoting)");
  EXPECT_EQ(error_of(header + "qkv_proj,1,0\r,0,5\n"),
            "bad.csv: line 2: field num_seqs: a carriage return inside a field");
  EXPECT_EQ(error_of(header + " qkv_proj , 1,0,0,\t5\r\n"), "ok");  // spaces around fields, \r\n line ends
  EXPECT_EQ(error_of(header + "qkv_proj,1,0,0,2.5\n"), "bad.csv:2: column 5 (time_ns): '2.5' is not an integer");
  EXPECT_EQ(error_of(header + "mlp,1,0,0,5\n"),
            "bad.csv:2: column 1 (kernel): unknown kernel 'mlp' (valid: slot_mapping, rmsnorm, "
            "qkv_proj, rotary, cache_write, attention, o_proj, gate_up_proj, silu_mul, "
            "down_proj, lm_head, host_step, decode_step, prefill_step)");
  EXPECT_EQ(error_of(header + "prefill_step,1024,1,1024,25000000\n"), "ok");
  EXPECT_EQ(error_of(header + "prefill_step,1024,1,2048,25000000\n"),
            "bad.csv:2: column 2 (num_tokens): a prefill_step row needs num_tokens >= num_seqs >= 1 and "
            "context_tokens == num_tokens (no cached prefix)");
  EXPECT_EQ(error_of(header + "decode_step,4,4,4096,5000000\n"), "ok");
  EXPECT_EQ(error_of(header + "decode_step,4,2,4096,5000000\n"),
            "bad.csv:2: column 2 (num_tokens): a decode_step row needs num_seqs == num_tokens and context_tokens >= "
            "num_seqs");
  EXPECT_EQ(error_of(header + "decode_step,4,4,3,5000000\n"),
            "bad.csv:2: column 2 (num_tokens): a decode_step row needs num_seqs == num_tokens and context_tokens >= "
            "num_seqs");
  EXPECT_EQ(error_of(header + "rotary,0,0,0,5\n"), "bad.csv:2: column 2 (num_tokens): num_tokens must be >= 1, got 0");
  EXPECT_EQ(error_of(header + "rotary,1,0,0,-5\n"), "bad.csv:2: column 5 (time_ns): must be >= 0, got -5");
  EXPECT_EQ(error_of(header + "rotary,4,0,0,5\nrotary,8,0,0,6\nrotary,4,3,0,7\n"),
            "bad.csv:4: duplicate row for rotary at num_tokens 4 (also on line 2)");
  EXPECT_EQ(error_of(header + "attention,4,1,100,5\nattention,4,1,100,6\n"),
            "bad.csv:3: duplicate row for attention at num_seqs 1, num_tokens 4, "
            "context_tokens 100 (also on line 2)");
}

TEST(ProfileTableTest, LoadsFromFile) {
  std::string path = ::testing::TempDir() + "sim_cost_model_test_profile.csv";
  {
    std::ofstream out(path);
    out << "kernel,num_tokens,num_seqs,context_tokens,time_ns\r\nlm_head,1,1,0,250\r\n";
  }
  StatusOr<ProfileTable> t = ProfileTable::load(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->lookup_ns(Kernel::kLmHead, {3, 3, 0}), 250);
  std::remove(path.c_str());
  EXPECT_EQ(ProfileTable::load("/nonexistent/p.csv").status().message(), "/nonexistent/p.csv: cannot open profile");
}

// Found by fuzzing: a row with time_ns 9223372036854775807 loaded (kvsim calibrate accepted it
// too), and the cost model's ns-to-cycles conversion overflowed to a negative node weight that
// aborted in the step DAG.
TEST(ProfileTableTest, HugeTimesAreRejectedAndExtrapolationSaturates) {
  const std::string header = "kernel,num_tokens,num_seqs,context_tokens,time_ns\n";
  EXPECT_EQ(error_of(header + "rotary,1,0,0,9223372036854775807\n"),
            "bad.csv:2: column 5 (time_ns): must be <= 1000000000000 (1000 s for one launch), got 9223372036854775807");
  EXPECT_EQ(error_of(header + "rotary,1,0,0,9223372036854775808\n"),
            "bad.csv:2: column 5 (time_ns): '9223372036854775808' is not an integer");
  EXPECT_EQ(error_of(header + "rotary,1099511627777,0,0,5\n"),
            "bad.csv:2: column 2 (num_tokens): must be <= 1099511627776, got 1099511627777");
  // Two legal rows whose line, extended to 2^30 tokens, passes int64_t: saturates at the bound.
  StatusOr<ProfileTable> t = ProfileTable::parse("p.csv", header + "rotary,1,0,0,0\nrotary,2,0,0,1000000000000\n" +
                                                              "attention,1,1,1,0\nattention,1,1,2,1000000000000\n");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->lookup_ns(Kernel::kRotary, {1 << 30, 0, 0}), kMaxProfileNs);
  EXPECT_EQ(t->lookup_ns(Kernel::kAttention, {1, 1, std::int64_t{1} << 50}), kMaxProfileNs);
  CostModel cost(model("llama3-70b"), gpu("h100-sxm"), graphs(CudaGraphMode::kNone), &*t);
  const StepCost c = cost.cost(prefill(8192, std::int64_t{1} << 40));
  EXPECT_GT(c.duration_ns, 0);
  EXPECT_GE(c.duration_ns, 80 * kMaxProfileNs);  // 80 layers of saturated rotary launches
}

// Found by fuzzing: an empty cell was read as 0.
TEST(ProfileTableTest, EmptyCellsAreErrors) {
  const std::string header = "kernel,num_tokens,num_seqs,context_tokens,time_ns\n";
  EXPECT_EQ(error_of(header + "rotary,1,0,0,\n"), "bad.csv:2: column 5 (time_ns): '' is not an integer");
  EXPECT_EQ(error_of(header + "rotary,,0,0,5\n"), "bad.csv:2: column 2 (num_tokens): '' is not an integer");
  EXPECT_EQ(error_of(header + "rotary,1,-,0,5\n"), "bad.csv:2: column 3 (num_seqs): '-' is not an integer");
}

}  // namespace
}  // namespace kv::sim

namespace kv::sim {
namespace {

// Second-tier transfers (cost model invariant 9; docs/tiers.md).
TierCostOptions tier_costs(TierLoadMode mode) {
  TierCostOptions t;
  t.enabled = true;
  t.load = mode;
  t.host_link = *parse_link("pcie5");
  t.disk_bytes_per_s = 7'000'000'000;
  t.disk_latency_ns = 100'000;
  t.bytes_per_block = 2'097'152;  // llama3-8b, 16 tokens
  return t;
}

TEST(TierCostTest, TransfersAreLatencyPlusBytesOverBandwidth) {
  const TierCostOptions t = tier_costs(TierLoadMode::kOverlap);
  EXPECT_EQ(t.load_ns(0, 0), 0);
  // 10 blocks over 63 GB/s: ceil(20971520 * 1e9 / 63e9) = 332882 ns, plus 10 us.
  EXPECT_EQ(t.load_ns(10, 0), 10'000 + 332'882);
  // Disk: its latency and the link's, at the disk's 7 GB/s: ceil(20971520 / 7) = 2995932 ns.
  EXPECT_EQ(t.load_ns(0, 10), 100'000 + 10'000 + 2'995'932);
  EXPECT_EQ(t.store_ns(10), t.load_ns(10, 0));
  EXPECT_EQ(parse_link("25:2.5")->bytes_per_s, 25'000'000'000);
  EXPECT_EQ(parse_link("25:2.5")->latency_ns, 2'500);
  EXPECT_FALSE(parse_link("pcie9").ok());
  EXPECT_FALSE(parse_link("0:1").ok());
  for (const char* bad : {"0x10:1", "nan:1", "inf:1", "1e30:1", "25:1e30", "25:nan", " 25:1", "25:"}) {
    EXPECT_FALSE(parse_link(bad).ok()) << bad;
  }
}

TEST(TierCostTest, OverlappedLoadHidesBehindComputeAndAStalledOneDoesNot) {
  const ModelShape m = model("llama3-8b");
  const GpuSpec g = gpu("h100-sxm");
  CostModel plain(m, g, graphs(CudaGraphMode::kNone), nullptr);
  CostModel overlap(m, g, graphs(CudaGraphMode::kNone), nullptr, false, tier_costs(TierLoadMode::kOverlap));
  CostModel stall(m, g, graphs(CudaGraphMode::kNone), nullptr, false, tier_costs(TierLoadMode::kStall));
  StepShape s = prefill(4096, 0);
  const StepCost base = plain.cost(s);
  EXPECT_EQ(overlap.cost(s).cycles, base.cycles);  // no transfer: the same step
  s.tier_host_loads = 8;                           // 16 MiB: far shorter than a 4096-token prefill
  const StepCost hidden = overlap.cost(s);
  EXPECT_EQ(hidden.cycles, base.cycles);
  EXPECT_EQ(hidden.tier_stall_cycles, 0);
  EXPECT_EQ(hidden.tier_load_cycles, plain.ns_to_cycles(tier_costs(TierLoadMode::kOverlap).load_ns(8, 0)));
  const StepCost stalled = stall.cost(s);
  EXPECT_GT(stalled.tier_stall_cycles, 0);
  EXPECT_EQ(stalled.cycles, base.cycles + stalled.tier_stall_cycles);
  EXPECT_LE(stalled.tier_stall_cycles, stalled.tier_load_cycles);
  s.tier_host_loads = 100'000;  // 200 GB: longer than any compute, even overlapped
  EXPECT_GT(overlap.cost(s).tier_stall_cycles, 0);
  s.tier_host_loads = 0;
  EXPECT_EQ(overlap.cost(s).cycles, base.cycles);  // the tier nodes are re-weighted every step
}

// every-full-block: the blocks one step filled are copied out during the next, beside its
// whole forward; only a copy longer than the forward delays the step.
TEST(TierCostTest, CarriedSavesHideBehindTheForwardUnlessLonger) {
  const ModelShape m = model("llama3-8b");
  const GpuSpec g = gpu("h100-sxm");
  const TierCostOptions t = tier_costs(TierLoadMode::kOverlap);
  CostModel plain(m, g, graphs(CudaGraphMode::kNone), nullptr);
  CostModel tiered(m, g, graphs(CudaGraphMode::kNone), nullptr, false, t);
  StepShape s = prefill(4096, 0);
  const StepCost base = plain.cost(s);
  s.tier_saves_carried = 256;  // 512 MiB over PCIe 5: shorter than a 4096-token prefill
  const StepCost hidden = tiered.cost(s);
  EXPECT_EQ(hidden.cycles, base.cycles);
  EXPECT_EQ(hidden.tier_stall_cycles, 0);
  EXPECT_EQ(hidden.tier_store_cycles, plain.ns_to_cycles(t.store_ns(256)));
  EXPECT_EQ(hidden.tier_load_cycles, 0);
  s.tier_saves_carried = 20'000;  // 40 GB: longer than the forward
  const StepCost delayed = tiered.cost(s);
  EXPECT_GT(delayed.tier_stall_cycles, 0);
  EXPECT_EQ(delayed.cycles, base.cycles + delayed.tier_stall_cycles);
  // The save runs beside the forward, so it adds less than its own length.
  EXPECT_LT(delayed.tier_stall_cycles, delayed.tier_store_cycles);
}

// The drafter of speculative decoding (DrafterCost): lookups are free; an eagle head (one
// layer and the LM head) costs less than the target's decode of the same batch; a 1B draft model
// more than the head; drafting K in parallel costs less than K sequential forwards.
TEST(DrafterCostTest, ChargesTheDrafterShape) {
  const ModelShape target = model("llama3-8b");
  const GpuSpec h100 = gpu("h100-sxm");
  const CudaGraphConfig g = graphs(CudaGraphMode::kFullAndPiecewise);
  auto drafter = [&](SpecMethod m, bool parallel) {
    SpeculativeConfig spec;
    spec.method = m;
    spec.num_speculative_tokens = 3;
    spec.parallel_drafting = parallel;
    return DrafterCost(spec, target, h100, g);
  };
  for (SpecMethod m : {SpecMethod::kNgram, SpecMethod::kSuffix, SpecMethod::kMedusa}) {
    DrafterCost free = drafter(m, false);
    EXPECT_TRUE(free.is_free());
    EXPECT_EQ(free.cost_ns(64, 64 * 1000), 0);
  }
  DrafterCost eagle = drafter(SpecMethod::kEagle, false);
  ASSERT_NE(eagle.drafter_shape(), nullptr);
  EXPECT_EQ(eagle.drafter_shape()->layers, 1);
  EXPECT_EQ(eagle.drafter_shape()->hidden, target.hidden);
  EXPECT_EQ(eagle.cost_ns(0, 0), 0);
  const std::int64_t head = eagle.cost_ns(64, 64 * 1000);
  GpuSpec quiet = h100;
  quiet.host_step_ns = quiet.host_per_request_ns = quiet.host_per_block_ns = quiet.host_per_token_ns = 0;
  CostModel target_quiet(target, quiet, g, nullptr);
  EXPECT_GT(head, 0);
  EXPECT_LT(head, 3 * target_quiet.cost(decode(64, 1000)).duration_ns);
  DrafterCost small = drafter(SpecMethod::kDraftModel, false);
  EXPECT_EQ(small.drafter_shape()->name, "llama3-1b");
  EXPECT_GT(small.cost_ns(64, 64 * 1000), head);
  EXPECT_LT(drafter(SpecMethod::kEagle, true).cost_ns(64, 64 * 1000), head);
}

}  // namespace
}  // namespace kv::sim
