// Each CUDA kernel against the CPU reference (gpu_backend/reference/kernels.h) on random data,
// random block tables (with blocks shared between sequences) and padding tokens. Skips without
// a GPU. Tolerances: see gpu_test_util.h (bf16: 2^-8 relative, plus the stated atol).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <cuda_bf16.h>

#include "gpu_backend/gemm.h"
#include "gpu_backend/kernels.h"
#include "gpu_backend/reference/kernels.h"
#include "gpu_backend/reference/mamba_state.h"
#include "gpu_backend/reference/ref_model.h"
#include "gpu_backend/tests/gpu_test_util.h"

namespace kv::gpu {
namespace {

using testing::DeviceBuffer;
using testing::expect_close_bf16;
using testing::from_bf16_bits;
using testing::to_bf16_bits;
using bf16 = __nv_bfloat16;

template <typename P>
bf16* as_bf16(P* p) {
  return reinterpret_cast<bf16*>(p);
}

// A batch over three sequences: a prefill chunk with cached context, a long decode, a fresh
// prefill; sequence 1 shares its first blocks with sequence 0; plus padding tokens.
struct PagedCase {
  int block_size = 16, kv_heads = 2, heads = 8, dim = 64, rows = 3, row_stride = 80;
  std::int64_t num_blocks = 160;
  gpuref::RefBlockTable table;
  std::vector<std::int32_t> token_rows, positions;
  explicit PagedCase(std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::int32_t> perm(static_cast<std::size_t>(num_blocks - 1));
    std::iota(perm.begin(), perm.end(), 1);
    std::shuffle(perm.begin(), perm.end(), rng);
    table.row_stride = row_stride;
    table.table.assign(static_cast<std::size_t>(rows * row_stride), 0);
    const int lens[3] = {600, 1030, 40};
    std::size_t next = 0;
    for (int r = 0; r < rows; ++r) {
      for (int i = 0; i < (lens[r] + block_size - 1) / block_size; ++i) {
        const bool shared = r == 1 && i < 8;
        table.table[static_cast<std::size_t>(r * row_stride + i)] = shared ? table.at(0, i) : perm[next++];
      }
    }
    for (int p = 560; p < 600; ++p) add(0, p);  // chunk over 560 cached tokens
    add(1, 1029);                               // decode with a 1030-token context
    for (int p = 0; p < 40; ++p) add(2, p);     // fresh prefill
    for (int i = 0; i < 3; ++i) add(-1, 0);     // padding
  }
  void add(std::int32_t row, std::int32_t pos) {
    token_rows.push_back(row);
    positions.push_back(pos);
  }
  std::size_t cache_values() const { return static_cast<std::size_t>(num_blocks * block_size * kv_heads * dim); }
};

std::vector<float> random_bf16_values(std::size_t n, std::mt19937& rng, float a = 1.0f) {
  std::uniform_real_distribution<float> u(-a, a);
  std::vector<float> x(n);
  for (float& e : x) e = gpuref::round_bf16(u(rng));
  return x;
}

class GpuKernels : public ::testing::Test {
 protected:
  void SetUp() override { KV_SKIP_WITHOUT_GPU(); }
};

TEST_F(GpuKernels, SlotMappingMatchesReferenceWithPadding) {
  const PagedCase c(1);
  const auto n = static_cast<std::int32_t>(c.token_rows.size());
  DeviceBuffer<std::int32_t> rows(c.token_rows.size()), pos(c.positions.size()), table(c.table.table.size());
  DeviceBuffer<std::int64_t> slots(c.token_rows.size());
  rows.upload(c.token_rows);
  pos.upload(c.positions);
  table.upload(c.table.table);
  const SlotMappingView v{{rows.get(), pos.get(), n}, {table.get(), c.row_stride, c.block_size}, slots.get()};
  ASSERT_EQ(launch_slot_mapping(v, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(slots.download(), gpuref::slot_mapping(c.token_rows, c.positions, c.table, c.block_size));
}

TEST_F(GpuKernels, BlockTableUpdateScattersDeltas) {
  DeviceBuffer<std::int32_t> table(4 * 8), updates(9);
  table.upload(std::vector<std::int32_t>(32, 0));
  updates.upload({0, 0, 7, 3, 5, 9, 0, 1, 11});
  ASSERT_EQ(launch_block_table_update({table.get(), 8, updates.get(), 3}, nullptr), cudaSuccess);
  const std::vector<std::int32_t> t = table.download();
  EXPECT_EQ(t[0], 7);
  EXPECT_EQ(t[1], 11);
  EXPECT_EQ(t[3 * 8 + 5], 9);
  EXPECT_EQ(std::count(t.begin(), t.end(), 0), 29);
}

TEST_F(GpuKernels, CacheWriteNeverWritesPaddingSlots) {
  const PagedCase c(2);
  std::mt19937 rng(3);
  const auto n = static_cast<std::int32_t>(c.token_rows.size());
  const int width = c.kv_heads * c.dim, stride = 3 * width;  // rows as in a qkv buffer
  const std::vector<std::int64_t> slots = gpuref::slot_mapping(c.token_rows, c.positions, c.table, c.block_size);
  const std::vector<float> src = random_bf16_values(static_cast<std::size_t>(n * stride), rng);
  const float sentinel = -1024.0f;  // exact in bf16; never produced by the random source
  gpuref::RefKvCache ref(c.num_blocks, c.block_size, c.kv_heads, c.dim, gpuref::round_bf16(sentinel));
  gpuref::cache_write(src.data() + width, src.data() + 2 * width, stride, slots, &ref);

  DeviceBuffer<std::uint16_t> src_d(src.size()), k(c.cache_values()), v(c.cache_values());
  DeviceBuffer<std::int64_t> slots_d(slots.size());
  src_d.upload(to_bf16_bits(src));
  const std::vector<std::uint16_t> fill(c.cache_values(), gpuref::bf16_bits(sentinel));
  k.upload(fill);
  v.upload(fill);
  slots_d.upload(slots);
  const CacheWriteView<bf16> view{
      as_bf16(src_d.get()) + width,
      as_bf16(src_d.get()) + 2 * width,
      stride,
      slots_d.get(),
      n,
      PagedKvView<bf16>{as_bf16(k.get()), as_bf16(v.get()), c.num_blocks, c.block_size, c.kv_heads, c.dim}};
  ASSERT_EQ(launch_cache_write(view, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(from_bf16_bits(k.download()), ref.k);  // a copy: bit-exact, sentinels everywhere else
  EXPECT_EQ(from_bf16_bits(v.download()), ref.v);
}

void run_attention_case(int num_splits) {
  const PagedCase c(4);
  std::mt19937 rng(5);
  const auto n = static_cast<std::int32_t>(c.token_rows.size());
  const int q_stride = c.heads * c.dim;
  gpuref::RefKvCache cache(c.num_blocks, c.block_size, c.kv_heads, c.dim);
  cache.k = random_bf16_values(c.cache_values(), rng);
  cache.v = random_bf16_values(c.cache_values(), rng);
  const std::vector<float> q = random_bf16_values(static_cast<std::size_t>(n * q_stride), rng, 2.0f);
  const float scale = 0.125f;
  std::vector<float> ref(static_cast<std::size_t>(n * q_stride));
  gpuref::paged_attention(q.data(), q_stride, c.token_rows, c.positions, c.table, cache, c.heads, scale,
                          gpuref::DType::kFp32, ref.data());

  DeviceBuffer<std::uint16_t> q_d(q.size()), out_d(ref.size()), k(c.cache_values()), v(c.cache_values());
  DeviceBuffer<std::int32_t> rows(c.token_rows.size()), pos(c.positions.size()), table(c.table.table.size());
  const std::size_t partials = static_cast<std::size_t>(n) * c.heads * kMaxAttentionSplits;
  DeviceBuffer<float> p_out(partials * static_cast<std::size_t>(c.dim)), p_max(partials), p_sum(partials);
  q_d.upload(to_bf16_bits(q));
  k.upload(to_bf16_bits(cache.k));
  v.upload(to_bf16_bits(cache.v));
  rows.upload(c.token_rows);
  pos.upload(c.positions);
  table.upload(c.table.table);
  const AttentionView<bf16> view{as_bf16(q_d.get()),
                                 q_stride,
                                 as_bf16(out_d.get()),
                                 {rows.get(), pos.get(), n},
                                 {table.get(), c.row_stride, c.block_size},
                                 {as_bf16(k.get()), as_bf16(v.get()), c.num_blocks, c.block_size, c.kv_heads, c.dim},
                                 c.heads,
                                 scale,
                                 num_splits,
                                 p_out.get(),
                                 p_max.get(),
                                 p_sum.get()};
  ASSERT_EQ(launch_paged_attention(view, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // atol 1e-3: outputs are convex combinations of values in [-1, 1]; fp32 order and expf
  // differences stay far below it, a wrong key or mask would not.
  expect_close_bf16(from_bf16_bits(out_d.download()), ref, 1e-3f, "attention splits=" + std::to_string(num_splits));
}

TEST_F(GpuKernels, PagedAttentionPrefillDecodeAndPadding) { run_attention_case(1); }
TEST_F(GpuKernels, PagedAttentionSplitK) { run_attention_case(5); }

// A hybrid layout's windowed layer: every block wholly before the window of a row's first query
// is the null block (block 0, NaN in the cache: reading it would poison the output), the slot
// mapping gives -1 there, and attention over the window matches the reference (which aborts
// if it ever reads the null block).
void run_windowed_case(std::int64_t window, int num_splits) {
  PagedCase c(6);
  int nulls = 0;
  for (int r = 0; r < c.rows; ++r) {
    std::int32_t first_query = 1 << 30;
    for (std::size_t i = 0; i < c.token_rows.size(); ++i) {
      if (c.token_rows[i] == r) first_query = std::min(first_query, c.positions[i]);
    }
    const std::int64_t first_key = attention_begin(window, first_query);
    for (int i = 0; (i + 1) * c.block_size <= first_key; ++i, ++nulls)
      c.table.table[static_cast<std::size_t>(r * c.row_stride + i)] = 0;
  }
  ASSERT_GT(nulls, 0);
  std::mt19937 rng(7);
  const auto n = static_cast<std::int32_t>(c.token_rows.size());
  const int q_stride = c.heads * c.dim;
  gpuref::RefKvCache cache(c.num_blocks, c.block_size, c.kv_heads, c.dim);
  cache.k = random_bf16_values(c.cache_values(), rng);
  cache.v = random_bf16_values(c.cache_values(), rng);
  const std::size_t block_values = static_cast<std::size_t>(c.block_size * c.kv_heads * c.dim);
  std::fill_n(cache.k.begin(), block_values, std::nanf(""));  // block 0, the null block
  std::fill_n(cache.v.begin(), block_values, std::nanf(""));
  const std::vector<float> q = random_bf16_values(static_cast<std::size_t>(n * q_stride), rng, 2.0f);
  const float scale = 0.125f;
  std::vector<float> ref(static_cast<std::size_t>(n * q_stride));
  gpuref::paged_attention(q.data(), q_stride, c.token_rows, c.positions, c.table, cache, c.heads, scale,
                          gpuref::DType::kFp32, ref.data(), gpuref::AttentionMask{window, true});

  DeviceBuffer<std::uint16_t> q_d(q.size()), out_d(ref.size()), k(c.cache_values()), v(c.cache_values());
  DeviceBuffer<std::int32_t> rows(c.token_rows.size()), pos(c.positions.size()), table(c.table.table.size());
  DeviceBuffer<std::int64_t> slots(c.token_rows.size());
  const std::size_t partials = static_cast<std::size_t>(n) * c.heads * kMaxAttentionSplits;
  DeviceBuffer<float> p_out(partials * static_cast<std::size_t>(c.dim)), p_max(partials), p_sum(partials);
  q_d.upload(to_bf16_bits(q));
  k.upload(to_bf16_bits(cache.k));
  v.upload(to_bf16_bits(cache.v));
  rows.upload(c.token_rows);
  pos.upload(c.positions);
  table.upload(c.table.table);
  const BlockTableView tv{table.get(), c.row_stride, c.block_size, 0};
  ASSERT_EQ(launch_slot_mapping(SlotMappingView{{rows.get(), pos.get(), n}, tv, slots.get()}, nullptr), cudaSuccess);
  AttentionView<bf16> view{as_bf16(q_d.get()),
                           q_stride,
                           as_bf16(out_d.get()),
                           {rows.get(), pos.get(), n},
                           tv,
                           {as_bf16(k.get()), as_bf16(v.get()), c.num_blocks, c.block_size, c.kv_heads, c.dim},
                           c.heads,
                           scale,
                           num_splits,
                           p_out.get(),
                           p_max.get(),
                           p_sum.get()};
  view.window = window;
  ASSERT_EQ(launch_paged_attention(view, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(slots.download(), gpuref::slot_mapping(c.token_rows, c.positions, c.table, c.block_size, true));
  const std::string what = "window " + std::to_string(window) + " splits " + std::to_string(num_splits);
  expect_close_bf16(from_bf16_bits(out_d.download()), ref, 1e-3f, what);
}

TEST_F(GpuKernels, SlidingWindowAttentionSkipsNullBlocks) {
  for (const int splits : {1, 5}) {
    for (const std::int64_t w : {1, 37, 128, 300}) run_windowed_case(w, splits);
  }
}

TEST_F(GpuKernels, ChunkedLocalAttentionSkipsNullBlocks) {
  for (const int splits : {1, 5}) {
    for (const std::int64_t c : {-24, -64, -256}) run_windowed_case(c, splits);
  }
}

TEST_F(GpuKernels, RmsnormRotarySiluMulEmbedding) {
  std::mt19937 rng(6);
  const int rows = 37, dim = 256, heads = 4, kv_heads = 2, head_dim = 64, inter = 96, vocab = 50;
  // RMSNorm: fp32 residual in, weights 1 + small noise.
  std::vector<float> x(static_cast<std::size_t>(rows * dim));
  for (float& e : x) e = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
  const std::vector<float> w = random_bf16_values(static_cast<std::size_t>(dim), rng);
  std::vector<float> ref(x.size());
  gpuref::rmsnorm(x.data(), rows, dim, w.data(), 1e-5f, gpuref::DType::kFp32, ref.data());
  DeviceBuffer<float> x_d(x.size());
  DeviceBuffer<std::uint16_t> w_d(w.size()), out_d(x.size());
  x_d.upload(x);
  w_d.upload(to_bf16_bits(w));
  ASSERT_EQ(
      launch_rmsnorm(RmsNormView<bf16>{x_d.get(), as_bf16(w_d.get()), as_bf16(out_d.get()), rows, dim, 1e-5f}, nullptr),
      cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_close_bf16(from_bf16_bits(out_d.download()), ref, 1e-5f, "rmsnorm");

  // Rotary over q and k heads of a qkv row, large positions (theta 500000 frequencies).
  gpuref::ModelConfig mc;
  const std::vector<float> inv = gpuref::rope_inv_freq(mc);
  const int stride = (heads + 2 * kv_heads) * head_dim;
  std::vector<float> qkv = random_bf16_values(static_cast<std::size_t>(rows * stride), rng);
  std::vector<std::int32_t> positions(static_cast<std::size_t>(rows));
  for (auto& p : positions) p = std::uniform_int_distribution<std::int32_t>(0, 8000)(rng);
  DeviceBuffer<std::uint16_t> qkv_d(qkv.size());
  DeviceBuffer<std::int32_t> pos_d(positions.size());
  DeviceBuffer<float> inv_d(inv.size());
  qkv_d.upload(to_bf16_bits(qkv));
  pos_d.upload(positions);
  inv_d.upload(inv);
  gpuref::rotary(qkv.data(), stride, positions, heads, kv_heads, head_dim, inv, gpuref::DType::kFp32);
  ASSERT_EQ(launch_rotary(RotaryView<bf16>{as_bf16(qkv_d.get()), stride, pos_d.get(), inv_d.get(), rows, heads,
                                           kv_heads, head_dim},
                          nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // atol 1e-3: fp32 angles up to 8000 rad agree between sincosf and std::sin/cos to ~1e-4.
  expect_close_bf16(from_bf16_bits(qkv_d.download()), qkv, 1e-3f, "rotary (v heads untouched too)");

  const std::vector<float> gu = random_bf16_values(static_cast<std::size_t>(rows * 2 * inter), rng, 4.0f);
  std::vector<float> act(static_cast<std::size_t>(rows * inter));
  gpuref::silu_mul(gu.data(), rows, inter, gpuref::DType::kFp32, act.data());
  DeviceBuffer<std::uint16_t> gu_d(gu.size()), act_d(act.size());
  gu_d.upload(to_bf16_bits(gu));
  ASSERT_EQ(launch_silu_mul(SiluMulView<bf16>{as_bf16(gu_d.get()), as_bf16(act_d.get()), rows, inter}, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_close_bf16(from_bf16_bits(act_d.download()), act, 1e-5f, "silu_mul");

  const std::vector<float> table = random_bf16_values(static_cast<std::size_t>(vocab * dim), rng);
  std::vector<std::int32_t> toks(static_cast<std::size_t>(rows));
  for (auto& t : toks) t = std::uniform_int_distribution<std::int32_t>(0, vocab - 1)(rng);
  std::vector<float> emb(static_cast<std::size_t>(rows * dim));
  gpuref::embedding(toks, table.data(), dim, emb.data());
  DeviceBuffer<std::uint16_t> table_d(table.size());
  DeviceBuffer<std::int32_t> toks_d(toks.size());
  DeviceBuffer<float> emb_d(emb.size());
  table_d.upload(to_bf16_bits(table));
  toks_d.upload(toks);
  ASSERT_EQ(launch_embedding(EmbeddingView<bf16>{toks_d.get(), as_bf16(table_d.get()), emb_d.get(), rows, dim, vocab},
                             nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(emb_d.download(), emb);  // bf16 -> fp32 is exact
}

TEST_F(GpuKernels, CublasLinearMatchesReference) {
  std::mt19937 rng(8);
  const int rows = 19, in = 256, out = 384;
  const std::vector<float> x = random_bf16_values(static_cast<std::size_t>(rows * in), rng);
  const std::vector<float> w = random_bf16_values(static_cast<std::size_t>(out * in), rng, gpuref::uniform_scale(in));
  std::vector<float> y(static_cast<std::size_t>(rows * out));
  gpuref::linear(x.data(), rows, in, w.data(), out, y.data(), gpuref::DType::kFp32, false);
  std::vector<float> acc(y.size(), 0.5f);
  gpuref::linear(x.data(), rows, in, w.data(), out, acc.data(), gpuref::DType::kFp32, true);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    Gemm gemm;
    ASSERT_TRUE(gemm.init(stream, 4u << 20).ok());
    DeviceBuffer<std::uint16_t> x_d(x.size()), w_d(w.size()), y_d(y.size());
    DeviceBuffer<float> acc_d(acc.size());
    x_d.upload(to_bf16_bits(x));
    w_d.upload(to_bf16_bits(w));
    acc_d.upload(std::vector<float>(acc.size(), 0.5f));
    ASSERT_EQ(gemm.linear(gpuref::DType::kBf16, x_d.get(), rows, in, w_d.get(), out, y_d.get(), false),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(gemm.linear(gpuref::DType::kBf16, x_d.get(), rows, in, w_d.get(), out, acc_d.get(), true),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    // atol 1e-4: 256 fp32 products of magnitude <= 0.11, summed in another order.
    expect_close_bf16(from_bf16_bits(y_d.download()), y, 1e-4f, "gemm bf16 out");
    const std::vector<float> got = acc_d.download();
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], acc[i], 1e-4f) << "gemm fp32 accumulate " << i;
  }
  cudaStreamDestroy(stream);
}

TEST_F(GpuKernels, SeededWeightsAreBitIdenticalToTheReference) {
  const std::int64_t count = 100003;
  DeviceBuffer<std::uint16_t> w(static_cast<std::size_t>(count));
  const SeededFillView<bf16> v{as_bf16(w.get()), count, 42, 17, 0.0625f, false};
  ASSERT_EQ(launch_seeded_fill(v, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(from_bf16_bits(w.download()), gpuref::seeded_tensor(42, 17, count, 0.0625f, gpuref::DType::kBf16));
}

// Three sequences (a fresh one, a decode whose state an align move copies first, one reading an
// old block and writing a new one) and two padding tokens; states are fp32 in 4 KiB K pages.
// Tolerance: outputs against the unrounded reference within half a bf16 ulp plus 1e-5 (expf
// against the C library over at most 7 steps); states (fp32) within 1e-5 relative plus 1e-6.
TEST_F(GpuKernels, MambaStateCopyAndScanMatchReference) {
  std::mt19937 rng(11);
  const int heads = 8, kv_heads = 2, dim = 64, kv_dim = kv_heads * dim, q_dim = heads * dim;
  const int stride = q_dim + 2 * kv_dim, block_size = 16, num_blocks = 12;
  const std::int64_t page_bytes = std::int64_t{block_size} * kv_dim * 2, page_floats = page_bytes / 4;
  const std::vector<std::int32_t> qsl = {0, 5, 6, 13};
  const std::int32_t n = 15;  // tokens 13, 14: padding
  const std::vector<gpuref::StateStep> steps = {{-1, 3}, {4, 4}, {7, 9}};
  const std::vector<gpuref::StateCopy> moves = {{6, 4}};
  const std::vector<float> qkv = random_bf16_values(static_cast<std::size_t>(n * stride), rng, 2.0f);
  std::vector<float> states(static_cast<std::size_t>(num_blocks * page_floats));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& e : states) e = u(rng);
  const std::vector<float> states0 = states;

  std::vector<float> ref_out(static_cast<std::size_t>(n * q_dim));
  gpuref::copy_states(moves, page_floats, kv_dim, states.data());
  gpuref::MambaScanArgs a;
  a.qkv = qkv.data();
  a.qkv_stride = stride;
  a.k_offset = q_dim;
  a.query_start_loc = &qsl;
  a.steps = &steps;
  a.num_tokens = n;
  a.num_heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = dim;
  a.page_floats = page_floats;
  a.round = gpuref::DType::kFp32;
  gpuref::mamba_scan(a, states.data(), ref_out.data());

  DeviceBuffer<std::uint16_t> qkv_d(qkv.size()), out_d(ref_out.size());
  DeviceBuffer<float> states_d(states0.size());
  DeviceBuffer<std::int32_t> qsl_d(qsl.size()), reads_d(steps.size()), writes_d(steps.size()), moves_d(2);
  qkv_d.upload(to_bf16_bits(qkv));
  states_d.upload(states0);
  qsl_d.upload(qsl);
  reads_d.upload({-1, 4, 7});
  writes_d.upload({3, 4, 9});
  moves_d.upload({6, 4});
  out_d.upload(std::vector<std::uint16_t>(ref_out.size(), gpuref::bf16_bits(-1024.0f)));
  const StatePagesView pages{states_d.get(), page_bytes, kv_dim};
  ASSERT_EQ(launch_state_copy(StateCopyView{pages, moves_d.get(), 1}, nullptr), cudaSuccess);
  const MambaScanView<bf16> view{as_bf16(qkv_d.get()),
                                 stride,
                                 q_dim,
                                 as_bf16(out_d.get()),
                                 n,
                                 qsl_d.get(),
                                 reads_d.get(),
                                 writes_d.get(),
                                 3,
                                 pages,
                                 heads,
                                 kv_heads,
                                 dim};
  ASSERT_EQ(launch_mamba_scan(view, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_close_bf16(from_bf16_bits(out_d.download()), ref_out, 1e-5f, "mamba_scan output");
  const std::vector<float> got = states_d.download();
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - states[i]) <= 1e-5f * std::fabs(states[i]) + 1e-6f) && ++bad <= 5) {
      ADD_FAILURE() << "state value " << i << " (block " << i / static_cast<std::size_t>(page_floats) << ") gpu "
                    << got[i] << " reference " << states[i];
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(got[6 * page_floats], states0[6 * page_floats]);  // a move's source is left as it was
}

TEST_F(GpuKernels, BadViewsReturnErrorCodes) {
  EXPECT_EQ(launch_paged_attention(AttentionView<bf16>{}, nullptr), cudaSuccess);  // zero tokens: nothing to do
  AttentionView<bf16> v;
  v.tokens.num_tokens = 1;  // null pointers
  EXPECT_EQ(launch_paged_attention(v, nullptr), cudaErrorInvalidValue);
  CacheWriteView<bf16> c;
  c.num_tokens = 2;
  EXPECT_EQ(launch_cache_write(c, nullptr), cudaErrorInvalidValue);
  MambaScanView<bf16> m;
  m.num_tokens = 1;
  m.kv_heads = 1;
  m.head_dim = 8;
  m.pages.state_floats = 8;
  m.pages.page_bytes = 16;  // smaller than the state
  EXPECT_EQ(launch_mamba_scan(m, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace kv::gpu
