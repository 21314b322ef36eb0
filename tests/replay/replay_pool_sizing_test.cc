// Pool sizing: bytes per block and blocks from GPU memory under each --dtype and
// --kv-cache-dtype, checked against the numbers worked out by hand.
#include "replay/pool_sizing.h"

#include <gtest/gtest.h>

#include "replay/replay_config.h"

namespace kv::replay {
namespace {

ModelShape llama8b(DType weights, DType kv) {
  ModelShape m = *find_model_shape("llama3-8b");
  m.dtype = weights;
  m.kv_dtype = kv;
  return m;
}

TEST(PoolSizingTest, KvBytesPerTokenFollowTheCacheDtype) {
  // 2 (K and V) * 32 layers * 8 KV heads * 128 = 65,536 values per token.
  EXPECT_EQ(llama8b(DType::kBf16, DType::kBf16).kv_bytes_per_token(), 131072);
  EXPECT_EQ(llama8b(DType::kBf16, DType::kFp16).kv_bytes_per_token(), 131072);
  EXPECT_EQ(llama8b(DType::kBf16, DType::kFp8).kv_bytes_per_token(), 65536);
  EXPECT_EQ(llama8b(DType::kBf16, DType::kFp4).kv_bytes_per_token(), 32768);
}

TEST(PoolSizingTest, WeightsKeepEmbeddingsAndHeadIn16Bit) {
  const ModelShape bf16 = llama8b(DType::kBf16, DType::kBf16);
  EXPECT_EQ(bf16.num_params(), 8'030'261'248);
  // Per layer (4096 * 6144 + 4096 * 4096 + 3 * 14336 * 4096) = 218,103,808, times 32.
  EXPECT_EQ(bf16.num_linear_params(), 6'979'321'856);
  EXPECT_EQ(bf16.weight_bytes(), 2 * 8'030'261'248LL);
  // fp8: projections one byte each, embedding + LM head + norms (1,050,939,392) two bytes.
  EXPECT_EQ(llama8b(DType::kFp8, DType::kBf16).weight_bytes(), 6'979'321'856 + 2 * 1'050'939'392LL);
  EXPECT_EQ(llama8b(DType::kFp4, DType::kBf16).weight_bytes(), 6'979'321'856 / 2 + 2 * 1'050'939'392LL);
}

TEST(PoolSizingTest, BlocksFromMemoryByHand) {
  const sim::GpuSpec h100 = *sim::find_gpu_spec("h100-sxm");
  // 80 GiB * 0.9 = 77,309,411,328; activations 8192 * (2 * 14336 + 4 * 4096) * 4 = 1,476,395,008.
  // bf16: weights 16,060,522,496 -> 59,772,493,824 free / 2 MiB per block = 28,501 blocks.
  EXPECT_EQ(*blocks_from_gpu_memory(llama8b(DType::kBf16, DType::kBf16), h100, 0.9, 16, 8192), 28501);
  // fp8 weights and cache: weights 9,081,200,640 -> 66,751,815,680 free / 1 MiB = 63,659 blocks.
  EXPECT_EQ(*blocks_from_gpu_memory(llama8b(DType::kFp8, DType::kFp8), h100, 0.9, 16, 8192), 63659);
}

TEST(PoolSizingTest, TensorParallelHalvesTheKvBytesPerBlockPerRank) {
  const ModelShape whole = llama8b(DType::kBf16, DType::kBf16);
  const ModelShape rank = *shard_for_tp(whole, 2);
  EXPECT_EQ(rank.kv_heads, 4);
  EXPECT_EQ(rank.kv_bytes_per_token() * 2, whole.kv_bytes_per_token());
  // 16 ranks > 8 KV heads: each rank keeps one head (replicated), so 1/8, not 1/16.
  const ModelShape sixteen = *shard_for_tp(whole, 16);
  EXPECT_EQ(sixteen.kv_heads, 1);
  EXPECT_EQ(sixteen.kv_bytes_per_token() * 8, whole.kv_bytes_per_token());
  EXPECT_EQ(shard_for_tp(whole, 3).status().message(),
            "model llama3-8b cannot be split over 3 ranks: 32 attention heads");
  // Per rank: half the projections, the embedding and LM head split by vocabulary, the norms
  // (2 * 32 * 4096 + 4096 = 266,240 weights) whole on every rank.
  EXPECT_EQ(rank.weight_bytes(), whole.weight_bytes() / 2 + 266'240);
  // More room per rank and half the bytes per block: more than twice the blocks.
  const sim::GpuSpec h100 = *sim::find_gpu_spec("h100-sxm");
  EXPECT_GT(*blocks_from_gpu_memory(rank, h100, 0.9, 16, 8192),
            2 * *blocks_from_gpu_memory(whole, h100, 0.9, 16, 8192));
  ReplayConfig c;
  ASSERT_TRUE(set_option(c, "tp", "2").ok());
  EXPECT_TRUE(c.validate().ok());
  EXPECT_EQ(c.effective_model().kv_heads, 4);
  EXPECT_EQ(c.effective_model().tp, 2);
  ASSERT_TRUE(set_option(c, "tp", "3").ok());
  EXPECT_EQ(c.validate().message(), "--tp: model llama3-8b cannot be split over 3 ranks: 32 attention heads");
}

TEST(PoolSizingTest, HostOverheadOption) {
  ReplayConfig c;
  EXPECT_EQ(c.effective_gpu().host_step_ns, c.device.gpu.host_step_ns);  // "gpu": the preset's terms
  ASSERT_TRUE(set_option(c, "host-overhead", "300000,2000,15").ok());
  EXPECT_EQ(c.effective_gpu().host_step_ns, 300000);
  EXPECT_EQ(c.effective_gpu().host_per_request_ns, 2000);
  EXPECT_EQ(c.effective_gpu().host_per_token_ns, 15);
  EXPECT_EQ(c.effective_gpu().host_per_block_ns, 0);
  ASSERT_TRUE(set_option(c, "host-overhead", "none").ok());
  EXPECT_EQ(c.effective_gpu().host_step_ns, 0);
  EXPECT_EQ(set_option(c, "host-overhead", "1,2").message(),
            "--host-overhead: must be gpu, none or STEP_NS,REQUEST_NS,TOKEN_NS, got '1,2'");
}

TEST(PoolSizingTest, ConfigDefaultsAreBf16AndAutoFollowsDtype) {
  ReplayConfig c;
  EXPECT_EQ(c.effective_model().dtype, DType::kBf16);
  EXPECT_EQ(c.effective_model().kv_dtype, DType::kBf16);
  ASSERT_TRUE(set_option(c, "dtype", "fp8").ok());
  EXPECT_EQ(c.effective_model().kv_dtype, DType::kFp8);  // auto
  ASSERT_TRUE(set_option(c, "kv-cache-dtype", "bf16").ok());
  EXPECT_EQ(c.effective_model().kv_dtype, DType::kBf16);
  EXPECT_EQ(set_option(c, "dtype", "int3").message(), "--dtype: unknown dtype 'int3' (valid: bf16, fp16, fp8, fp4)");
  EXPECT_EQ(set_option(c, "kv-cache-dtype", "fp6").message(),
            "--kv-cache-dtype: unknown dtype 'fp6' (valid: bf16, fp16, fp8, fp4) or auto");
}

}  // namespace
}  // namespace kv::replay
