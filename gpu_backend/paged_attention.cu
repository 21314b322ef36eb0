// Paged attention for prefill (variable-length, causal, over cached context) and decode, read
// through the block table, with GQA (query head h reads kv head h / (heads / kv_heads)).
// One thread block per (query token, head, split). Keys are processed in tiles of kThreads:
// each thread scores one key (16-byte loads of its K row), the tile's softmax is merged
// online (running max m and sum l), and thread d accumulates output dimension d from the V
// rows (coalesced across the warp). A token at position p attends to positions [f, p] with
// f = attention_begin(window, p) (model/attention_window.h: 0 for full attention, p - w + 1
// for a sliding window w, the start of p's chunk for chunked local attention), so the causal
// and window masks are the loop bounds and blocks wholly before f are never read (a windowed
// group's null block included). Split s of n covers [f + s * c, min(p + 1, f + (s + 1) * c))
// with c = ceil((p + 1 - f) / n): the shares follow each token's own context, which keeps one
// launch shape valid for every batch of a CUDA graph. Splits write (acc, m, l) and a combine
// kernel merges them.
#include <cstdint>

#include "gpu_backend/device_math.cuh"
#include "gpu_backend/kernels.h"

namespace kv::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerThread = kMaxHeadDim / kThreads;

template <typename T>
__device__ __forceinline__ float dot_row(const float* q, const T* k, int head_dim) {
  float s = 0.0f;
  const auto* k16 = reinterpret_cast<const uint4*>(k);
  for (int c = 0; c < head_dim / 8; ++c) {
    const uint4 raw = k16[c];
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int x = 0; x < 8; ++x) s += q[c * 8 + x] * to_float(e[x]);
  }
  return s;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) paged_attention_kernel(AttentionView<T> v) {
  __shared__ float q_s[kMaxHeadDim];
  __shared__ float p_s[kThreads];
  __shared__ std::int64_t slot_s[kThreads];
  __shared__ float scratch[32];

  const int token = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int split = static_cast<int>(blockIdx.z);
  const int tid = static_cast<int>(threadIdx.x);
  const int dim = v.cache.head_dim;
  const std::int32_t row = v.tokens.rows[token];
  const int position = row < 0 ? -1 : v.tokens.positions[token];
  const int first = row < 0 ? 0 : static_cast<int>(attention_begin(v.window, position));
  const int context = position + 1 - first;  // keys [first, position]; 0 for padding
  const int share = (context + v.num_splits - 1) / v.num_splits;
  const int begin = first + split * share;
  const int end = min(first + context, begin + share);
  const int kv_head = head / (v.num_heads / v.cache.kv_heads);

  for (int d = tid; d < dim; d += kThreads) {
    q_s[d] = to_float(v.q[token * v.q_stride + static_cast<std::int64_t>(head) * dim + d]);
  }
  __syncthreads();

  float m = -INFINITY;
  float l = 0.0f;
  float acc[kDimsPerThread];
#pragma unroll
  for (int c = 0; c < kDimsPerThread; ++c) acc[c] = 0.0f;

  for (int base = begin; base < end; base += kThreads) {
    const int j = base + tid;
    float s = -INFINITY;
    if (j < end) {
      const std::int64_t slot = v.table.slot(row, j);
      slot_s[tid] = slot;
      s = dot_row(q_s, v.cache.k + v.cache.offset(slot, kv_head), dim) * v.scale;
    }
    const float tile_max = block_max(s, scratch);  // finite: key `base` is always valid
    const float new_m = fmaxf(m, tile_max);
    const float p = j < end ? expf(s - new_m) : 0.0f;
    p_s[tid] = p;
    const float tile_sum = block_sum(p, scratch);  // its barriers publish p_s and slot_s
    const float correction = expf(m - new_m);      // 0 on the first tile (m = -inf)
    l = l * correction + tile_sum;
    const int n = min(kThreads, end - base);
#pragma unroll
    for (int c = 0; c < kDimsPerThread; ++c) {
      const int d = tid + c * kThreads;
      if (d < dim) {
        float a = acc[c] * correction;
        for (int jj = 0; jj < n; ++jj) {
          a += p_s[jj] * to_float(v.cache.v[v.cache.offset(slot_s[jj], kv_head) + d]);
        }
        acc[c] = a;
      }
    }
    m = new_m;
    __syncthreads();  // the next tile overwrites p_s and slot_s
  }

  if (v.num_splits == 1) {
    T* out = v.out + static_cast<std::int64_t>(token) * v.num_heads * dim + static_cast<std::int64_t>(head) * dim;
#pragma unroll
    for (int c = 0; c < kDimsPerThread; ++c) {
      const int d = tid + c * kThreads;
      if (d < dim) out[d] = from_float<T>(l > 0.0f ? acc[c] / l : 0.0f);
    }
  } else {
    const std::int64_t idx = (static_cast<std::int64_t>(token) * v.num_heads + head) * v.num_splits + split;
#pragma unroll
    for (int c = 0; c < kDimsPerThread; ++c) {
      const int d = tid + c * kThreads;
      if (d < dim) v.partial_out[idx * dim + d] = acc[c];
    }
    if (tid == 0) {
      v.partial_max[idx] = m;
      v.partial_sum[idx] = l;
    }
  }
}

// Merges the splits of one (token, head): out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M).
template <typename T>
__global__ void __launch_bounds__(kThreads) attention_combine_kernel(AttentionView<T> v) {
  const int token = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int dim = v.cache.head_dim;
  const std::int64_t first = (static_cast<std::int64_t>(token) * v.num_heads + head) * v.num_splits;
  float big = -INFINITY;
  for (int s = 0; s < v.num_splits; ++s) big = fmaxf(big, v.partial_max[first + s]);
  float total = 0.0f;
  if (big > -INFINITY) {
    for (int s = 0; s < v.num_splits; ++s) {
      const float ms = v.partial_max[first + s];
      if (ms > -INFINITY) total += v.partial_sum[first + s] * expf(ms - big);
    }
  }
  T* out = v.out + static_cast<std::int64_t>(token) * v.num_heads * dim + static_cast<std::int64_t>(head) * dim;
  for (int d = static_cast<int>(threadIdx.x); d < dim; d += kThreads) {
    float a = 0.0f;
    if (total > 0.0f) {
      for (int s = 0; s < v.num_splits; ++s) {
        const float ms = v.partial_max[first + s];
        if (ms > -INFINITY) a += v.partial_out[(first + s) * dim + d] * expf(ms - big);
      }
      a /= total;
    }
    out[d] = from_float<T>(a);
  }
}

}  // namespace

template <typename T>
cudaError_t launch_paged_attention(const AttentionView<T>& v, cudaStream_t stream) {
  if (v.tokens.num_tokens < 0) return cudaErrorInvalidValue;
  if (v.tokens.num_tokens == 0) return cudaSuccess;
  const int dim = v.cache.head_dim;
  if (!v.q || !v.out || !v.tokens.rows || !v.tokens.positions || !v.table.table || !v.cache.k || !v.cache.v ||
      dim % 8 != 0 || dim < 8 || dim > kMaxHeadDim || v.num_heads < 1 || v.cache.kv_heads < 1 ||
      v.num_heads % v.cache.kv_heads != 0 || v.num_splits < 1 || v.num_splits > kMaxAttentionSplits ||
      v.num_heads > 65535 || reinterpret_cast<std::uintptr_t>(v.cache.k) % 16 != 0) {
    return cudaErrorInvalidValue;
  }
  if (v.num_splits > 1 && (!v.partial_out || !v.partial_max || !v.partial_sum)) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(v.tokens.num_tokens), static_cast<unsigned>(v.num_heads),
                  static_cast<unsigned>(v.num_splits));
  paged_attention_kernel<T><<<grid, kThreads, 0, stream>>>(v);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess || v.num_splits == 1) return err;
  const dim3 grid2(static_cast<unsigned>(v.tokens.num_tokens), static_cast<unsigned>(v.num_heads));
  attention_combine_kernel<T><<<grid2, kThreads, 0, stream>>>(v);
  return cudaGetLastError();
}

template cudaError_t launch_paged_attention<__nv_bfloat16>(const AttentionView<__nv_bfloat16>&, cudaStream_t);
template cudaError_t launch_paged_attention<__half>(const AttentionView<__half>&, cudaStream_t);

}  // namespace kv::gpu
