// The small per-token kernels of the synthetic transformer, each next to its launcher:
// RMSNorm (fp32 residual in, one block per row), rotary embedding (rotate-half pairs, angle
// = position * inv_freq in fp32), SwiGLU (silu(gate) * up), embedding lookup (into the fp32
// residual), row gather (the last token of each sequence, for the LM head), and the seeded
// weight fill (the hash of gpu_backend/reference/seeded_init.h, so the CPU reference sees the
// same weights).
#include <cstdint>

#include "gpu_backend/device_math.cuh"
#include "gpu_backend/kernels.h"
#include "gpu_backend/reference/seeded_init.h"

namespace kv::gpu {

template <typename T>
__global__ void __launch_bounds__(256) rmsnorm_kernel(RmsNormView<T> v) {
  __shared__ float scratch[32];
  const std::int64_t r = blockIdx.x;
  const float* x = v.x + r * v.dim;
  float ss = 0.0f;
  for (int i = static_cast<int>(threadIdx.x); i < v.dim; i += static_cast<int>(blockDim.x)) ss += x[i] * x[i];
  ss = block_sum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(v.dim) + v.eps);
  T* out = v.out + r * v.dim;
  for (int i = static_cast<int>(threadIdx.x); i < v.dim; i += static_cast<int>(blockDim.x)) {
    out[i] = from_float<T>(x[i] * inv * to_float(v.weight[i]));
  }
}

template <typename T>
cudaError_t launch_rmsnorm(const RmsNormView<T>& v, cudaStream_t stream) {
  if (v.rows < 0 || v.dim < 1) return cudaErrorInvalidValue;
  if (v.rows == 0) return cudaSuccess;
  if (!v.x || !v.weight || !v.out) return cudaErrorInvalidValue;
  rmsnorm_kernel<T><<<static_cast<unsigned>(v.rows), 256, 0, stream>>>(v);
  return cudaGetLastError();
}

template <typename T>
__global__ void rotary_kernel(RotaryView<T> v) {
  const int t = static_cast<int>(blockIdx.x);
  const int half = v.head_dim / 2;
  const float pos = static_cast<float>(v.positions[t]);
  T* row = v.qkv + t * v.stride;
  const int pairs = (v.num_heads + v.kv_heads) * half;
  for (int p = static_cast<int>(threadIdx.x); p < pairs; p += static_cast<int>(blockDim.x)) {
    const int h = p / half;
    const int i = p % half;
    float s, c;
    sincosf(pos * v.inv_freq[i], &s, &c);
    T* x = row + static_cast<std::int64_t>(h) * v.head_dim;
    const float x1 = to_float(x[i]);
    const float x2 = to_float(x[i + half]);
    x[i] = from_float<T>(x1 * c - x2 * s);
    x[i + half] = from_float<T>(x2 * c + x1 * s);
  }
}

template <typename T>
cudaError_t launch_rotary(const RotaryView<T>& v, cudaStream_t stream) {
  if (v.num_tokens < 0 || v.head_dim < 2 || v.head_dim % 2 != 0) return cudaErrorInvalidValue;
  if (v.num_tokens == 0) return cudaSuccess;
  if (!v.qkv || !v.positions || !v.inv_freq) return cudaErrorInvalidValue;
  rotary_kernel<T><<<static_cast<unsigned>(v.num_tokens), 256, 0, stream>>>(v);
  return cudaGetLastError();
}

template <typename T>
__global__ void silu_mul_kernel(SiluMulView<T> v) {
  const std::int64_t n = static_cast<std::int64_t>(v.rows) * v.inter;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = e / v.inter;
    const std::int64_t j = e % v.inter;
    const float g = to_float(v.gate_up[r * 2 * v.inter + j]);
    const float u = to_float(v.gate_up[r * 2 * v.inter + v.inter + j]);
    v.out[e] = from_float<T>(g / (1.0f + expf(-g)) * u);
  }
}

template <typename T>
cudaError_t launch_silu_mul(const SiluMulView<T>& v, cudaStream_t stream) {
  if (v.rows < 0 || v.inter < 1) return cudaErrorInvalidValue;
  if (v.rows == 0) return cudaSuccess;
  if (!v.gate_up || !v.out) return cudaErrorInvalidValue;
  const std::int64_t n = static_cast<std::int64_t>(v.rows) * v.inter;
  const unsigned blocks = static_cast<unsigned>(n / 256 + 1 < 65536 ? n / 256 + 1 : 65536);
  silu_mul_kernel<T><<<blocks, 256, 0, stream>>>(v);
  return cudaGetLastError();
}

template <typename T>
__global__ void embedding_kernel(EmbeddingView<T> v) {
  const std::int64_t r = blockIdx.x;
  const std::int32_t tok = v.tokens[r];
  float* out = v.out + r * v.dim;
  const bool valid = tok >= 0 && tok < v.vocab;
  for (int i = static_cast<int>(threadIdx.x); i < v.dim; i += static_cast<int>(blockDim.x)) {
    out[i] = valid ? to_float(v.table[static_cast<std::int64_t>(tok) * v.dim + i]) : 0.0f;
  }
}

template <typename T>
cudaError_t launch_embedding(const EmbeddingView<T>& v, cudaStream_t stream) {
  if (v.rows < 0 || v.dim < 1) return cudaErrorInvalidValue;
  if (v.rows == 0) return cudaSuccess;
  if (!v.tokens || !v.table || !v.out) return cudaErrorInvalidValue;
  embedding_kernel<T><<<static_cast<unsigned>(v.rows), 256, 0, stream>>>(v);
  return cudaGetLastError();
}

template <typename T>
__global__ void gather_rows_kernel(GatherRowsView<T> v) {
  const std::int64_t r = blockIdx.x;
  const T* src = v.src + static_cast<std::int64_t>(v.indices[r]) * v.dim;
  T* dst = v.dst + r * v.dim;
  for (int i = static_cast<int>(threadIdx.x); i < v.dim; i += static_cast<int>(blockDim.x)) dst[i] = src[i];
}

template <typename T>
cudaError_t launch_gather_rows(const GatherRowsView<T>& v, cudaStream_t stream) {
  if (v.count < 0 || v.dim < 1) return cudaErrorInvalidValue;
  if (v.count == 0) return cudaSuccess;
  if (!v.src || !v.dst || !v.indices) return cudaErrorInvalidValue;
  gather_rows_kernel<T><<<static_cast<unsigned>(v.count), 256, 0, stream>>>(v);
  return cudaGetLastError();
}

template <typename T>
__global__ void seeded_fill_kernel(SeededFillView<T> v) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < v.count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float w =
        v.constant_fill ? v.scale : gpuref::seeded_weight(v.seed, v.tensor_id, static_cast<std::uint64_t>(i), v.scale);
    v.dst[i] = from_float<T>(w);
  }
}

template <typename T>
cudaError_t launch_seeded_fill(const SeededFillView<T>& v, cudaStream_t stream) {
  if (v.count < 0) return cudaErrorInvalidValue;
  if (v.count == 0) return cudaSuccess;
  if (!v.dst) return cudaErrorInvalidValue;
  const std::int64_t blocks = v.count / 256 + 1;
  seeded_fill_kernel<T><<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(v);
  return cudaGetLastError();
}

#define KV_GPU_INSTANTIATE(T)                                                         \
  template cudaError_t launch_rmsnorm<T>(const RmsNormView<T>&, cudaStream_t);        \
  template cudaError_t launch_rotary<T>(const RotaryView<T>&, cudaStream_t);          \
  template cudaError_t launch_silu_mul<T>(const SiluMulView<T>&, cudaStream_t);       \
  template cudaError_t launch_embedding<T>(const EmbeddingView<T>&, cudaStream_t);    \
  template cudaError_t launch_gather_rows<T>(const GatherRowsView<T>&, cudaStream_t); \
  template cudaError_t launch_seeded_fill<T>(const SeededFillView<T>&, cudaStream_t);
KV_GPU_INSTANTIATE(__nv_bfloat16)
KV_GPU_INSTANTIATE(__half)
#undef KV_GPU_INSTANTIATE

}  // namespace kv::gpu
