// gpu_bench: figures of the CUDA backend on the GPU it runs on, printed as a table.
//   1. cache write bandwidth vs cudaMemcpy device-to-device of the same bytes, same run;
//   2. decode paged attention bandwidth (batch >= 32, context >= 4k), split-K off and on;
//   3. prefill paged attention throughput (causal, one 4k sequence and eight 1k sequences);
//   4. decode step time of the whole model, CUDA graph replay vs eager.
// Usage: gpu_bench [--model PRESET] (default llama3-8b shapes for 1-3, small for 4)
// Without a GPU it prints why and exits with status 2.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "gpu_backend/cuda_device.h"
#include "gpu_backend/kernels.h"
#include "gpu_backend/reference/model_config.h"

namespace {

using bf16 = __nv_bfloat16;
using kv::gpu::kMaxAttentionSplits;

#define BENCH_CHECK(expr)                                                                        \
  do {                                                                                           \
    const cudaError_t bench_err_ = (expr);                                                       \
    if (bench_err_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "gpu_bench: %s failed: %s\n", #expr, cudaGetErrorString(bench_err_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

template <typename T>
T* device_alloc(std::size_t count) {
  void* p = nullptr;
  BENCH_CHECK(cudaMalloc(&p, count * sizeof(T)));
  BENCH_CHECK(cudaMemset(p, 0, count * sizeof(T)));
  return static_cast<T*>(p);
}

template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* d = device_alloc<T>(host.size());
  BENCH_CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// Mean time of fn over `iters` launches after 3 warm-up launches, in milliseconds.
template <typename F>
double time_ms(F fn, int iters = 20) {
  for (int i = 0; i < 3; ++i) BENCH_CHECK(fn());
  cudaEvent_t a, b;
  BENCH_CHECK(cudaEventCreate(&a));
  BENCH_CHECK(cudaEventCreate(&b));
  BENCH_CHECK(cudaEventRecord(a));
  for (int i = 0; i < iters; ++i) BENCH_CHECK(fn());
  BENCH_CHECK(cudaEventRecord(b));
  BENCH_CHECK(cudaEventSynchronize(b));
  float ms = 0.0f;
  BENCH_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return static_cast<double>(ms) / iters;
}

void bench_cache_write(const kv::gpuref::ModelConfig& c) {
  const int tokens = 65536, block_size = 16;
  const std::int64_t num_blocks = tokens / block_size * 2;
  const int width = c.kv_dim();
  std::vector<std::int64_t> slots(tokens);
  std::vector<std::int64_t> all(static_cast<std::size_t>(num_blocks * block_size));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), std::mt19937(1));
  std::copy_n(all.begin(), tokens, slots.begin());
  std::int64_t* slots_d = device_copy(slots);
  bf16* src = device_alloc<bf16>(static_cast<std::size_t>(tokens) * 2 * width);
  bf16* k = device_alloc<bf16>(static_cast<std::size_t>(num_blocks) * block_size * width);
  bf16* v = device_alloc<bf16>(static_cast<std::size_t>(num_blocks) * block_size * width);
  const kv::gpu::CacheWriteView<bf16> view{
      src, src + width, 2 * width, slots_d, tokens, {k, v, num_blocks, block_size, c.num_kv_heads, c.head_dim}};
  const double bytes = 2.0 * tokens * width * sizeof(bf16);  // K and V rows, each read once and written once
  const double write_ms = time_ms([&] { return kv::gpu::launch_cache_write(view, nullptr); });
  const double copy_ms =
      time_ms([&] { return cudaMemcpyAsync(k, src, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice); });
  std::printf("cache_write  %d tokens x %d B (K+V, random slots): %.3f ms, %.0f GB/s (read+write)\n", tokens,
              static_cast<int>(2 * width * sizeof(bf16)), write_ms, 2 * bytes / write_ms / 1e6);
  std::printf("cudaMemcpy   device-to-device, same %.0f MB:          %.3f ms, %.0f GB/s (read+write)\n", bytes / 1e6,
              copy_ms, 2 * bytes / copy_ms / 1e6);
  std::printf("cache_write / memcpy bandwidth: %.2f\n\n", copy_ms / write_ms);
  cudaFree(slots_d);
  cudaFree(src);
  cudaFree(k);
  cudaFree(v);
}

struct AttentionSetup {
  std::vector<std::int32_t> rows, positions, table;
  int row_stride = 0;
  std::int64_t num_blocks = 0;
  double kv_bytes = 0.0, flops = 0.0;
};

// Sequences of lengths `lens`; `query_tail` tokens of each are queries (1: decode).
AttentionSetup make_attention(const kv::gpuref::ModelConfig& c, const std::vector<int>& lens, int query_tail, int bs) {
  AttentionSetup s;
  const int max_len = *std::max_element(lens.begin(), lens.end());
  s.row_stride = (max_len + bs - 1) / bs;
  std::int64_t next = 1;
  for (std::size_t r = 0; r < lens.size(); ++r) {
    for (int i = 0; i < s.row_stride; ++i) s.table.push_back(static_cast<std::int32_t>(next++));
    const int len = lens[r];
    for (int p = len - std::min(query_tail, len); p < len; ++p) {
      s.rows.push_back(static_cast<std::int32_t>(r));
      s.positions.push_back(p);
      s.flops += 4.0 * c.num_heads * c.head_dim * (p + 1);
    }
    s.kv_bytes += 2.0 * len * c.kv_dim() * sizeof(bf16);
  }
  s.num_blocks = next;
  std::shuffle(s.table.begin(), s.table.end(), std::mt19937(2));  // scattered blocks
  return s;
}

double run_attention(const kv::gpuref::ModelConfig& c, const AttentionSetup& s, int splits, int bs) {
  const auto n = static_cast<std::int32_t>(s.rows.size());
  std::int32_t* rows = device_copy(s.rows);
  std::int32_t* pos = device_copy(s.positions);
  std::int32_t* table = device_copy(s.table);
  bf16* q = device_alloc<bf16>(static_cast<std::size_t>(n) * c.qkv_dim());
  bf16* out = device_alloc<bf16>(static_cast<std::size_t>(n) * c.q_dim());
  const std::size_t cache = static_cast<std::size_t>(s.num_blocks) * bs * c.kv_dim();
  bf16* k = device_alloc<bf16>(cache);
  bf16* v = device_alloc<bf16>(cache);
  const std::size_t partial = splits > 1 ? static_cast<std::size_t>(n) * c.num_heads * kMaxAttentionSplits : 1;
  float* p_out = device_alloc<float>(partial * static_cast<std::size_t>(c.head_dim));
  float* p_max = device_alloc<float>(partial);
  float* p_sum = device_alloc<float>(partial);
  const kv::gpu::AttentionView<bf16> view{q,
                                          c.qkv_dim(),
                                          out,
                                          {rows, pos, n},
                                          {table, s.row_stride, bs},
                                          {k, v, s.num_blocks, bs, c.num_kv_heads, c.head_dim},
                                          c.num_heads,
                                          0.088f,
                                          splits,
                                          p_out,
                                          p_max,
                                          p_sum};
  const double ms = time_ms([&] { return kv::gpu::launch_paged_attention(view, nullptr); }, 10);
  for (void* p : {static_cast<void*>(rows), static_cast<void*>(pos), static_cast<void*>(table), static_cast<void*>(q),
                  static_cast<void*>(out), static_cast<void*>(k), static_cast<void*>(v), static_cast<void*>(p_out),
                  static_cast<void*>(p_max), static_cast<void*>(p_sum)}) {
    cudaFree(p);
  }
  return ms;
}

void bench_attention(const kv::gpuref::ModelConfig& c) {
  const int bs = 16;
  for (int batch : {32, 64}) {
    const AttentionSetup s = make_attention(c, std::vector<int>(static_cast<std::size_t>(batch), 4096), 1, bs);
    for (int splits : {1, 4, 8}) {
      const double ms = run_attention(c, s, splits, bs);
      std::printf("decode attention  batch %d, context 4096, splits %d: %.3f ms, %.0f GB/s of K/V\n", batch, splits, ms,
                  s.kv_bytes / ms / 1e6);
    }
  }
  for (const auto& lens : {std::vector<int>{4096}, std::vector<int>(8, 1024)}) {
    const AttentionSetup s = make_attention(c, lens, 1 << 30, bs);
    const double ms = run_attention(c, s, 1, bs);
    std::printf("prefill attention %zu x %d tokens, causal: %.3f ms, %.1f TFLOP/s\n", lens.size(), lens[0], ms,
                s.flops / ms / 1e9);
  }
  std::printf("\n");
}

kv::StepPlan decode_plan(std::int64_t step, int batch, int context, int bs, bool first) {
  kv::StepPlan p;
  p.step = step;
  p.block_size = bs;
  const int blocks = (context + 64 + bs - 1) / bs;
  for (int r = 0; r < batch; ++r) {
    kv::ScheduledRequest s;
    s.id = std::to_string(r);
    s.id.insert(0, 1, 'r');  // not "r" + ...: GCC 12 -O3 warns falsely (-Wrestrict)
    s.is_new = first;
    if (first) {
      for (int b = 0; b < blocks; ++b) s.block_ids.push_back(1 + r * blocks + b);
      s.num_computed_tokens = 0;
      for (int t = 0; t < context; ++t) s.token_ids.push_back((r * 131 + t) % 1000);
    } else {
      s.num_computed_tokens = context + step - 1;
      s.token_ids.push_back(step);
    }
    s.num_prompt_tokens = context;
    s.samples = true;
    p.requests.push_back(s);
    p.total_tokens += static_cast<std::int64_t>(s.token_ids.size());
  }
  return p;
}

void bench_graphs(const std::string& model) {
  const int batch = 32, context = 512, bs = 16, steps = 50;
  double mean[2] = {0.0, 0.0};
  for (int graphs = 0; graphs < 2; ++graphs) {
    kv::gpu::CudaDeviceOptions o;
    o.model = model;
    o.block_size = bs;
    o.max_num_batched_tokens = batch * context;
    o.max_model_len = 1024;
    o.max_num_seqs = batch;
    o.num_gpu_blocks = 1 + batch * ((context + 64 + bs - 1) / bs);
    o.cudagraph_mode = graphs ? "FULL_DECODE_ONLY" : "NONE";
    auto d = kv::gpu::make_cuda_device(o);
    if (!d.ok()) {
      std::printf("decode step: %s\n", d.status().message().c_str());
      return;
    }
    (*d)->execute(decode_plan(0, batch, context, bs, true));
    std::int64_t total = 0;
    for (int s = 1; s <= steps + 2; ++s) {
      const kv::StepResult r = (*d)->execute(decode_plan(s, batch, context, bs, false));
      if (!r.violations.empty()) std::printf("violation: %s\n", r.violations.front().c_str());
      if (s > 2) total += r.measured_ns;  // the first replay includes capture
    }
    mean[graphs] = static_cast<double>(total) / steps / 1e3;
  }
  std::printf("decode step, model %s, batch %d, context %d: eager %.1f us, CUDA graph %.1f us (%.2fx)\n", model.c_str(),
              batch, context, mean[0], mean[1], mean[0] / mean[1]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes = "llama3-8b", step_model = "small";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      shapes = step_model = argv[++i];
    } else {
      std::fprintf(stderr, "usage: gpu_bench [--model PRESET]\n");
      return 1;
    }
  }
  std::string why;
  if (!kv::gpu::cuda_device_available(&why)) {
    std::fprintf(stderr, "gpu_bench: %s; nothing measured\n", why.c_str());
    return 2;
  }
  auto config = kv::gpuref::model_preset(shapes);
  if (!config.ok()) {
    std::fprintf(stderr, "gpu_bench: %s\n", config.status().message().c_str());
    return 1;
  }
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("gpu_bench on %s (%d SMs), kernel shapes of %s, bf16\n\n", prop.name, prop.multiProcessorCount,
              shapes.c_str());
  bench_cache_write(*config);
  bench_attention(*config);
  bench_graphs(step_model);
  return 0;
}
