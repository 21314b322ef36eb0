// The Mamba state path of the synthetic model: the state copies of align-mode moves and the
// gated recurrence over each sequence's tokens (the CPU oracle is
// reference/mamba_state.{h,cc}). One thread owns one state element of one sequence and walks
// that sequence's tokens in order, so the state is updated in fp32 exactly as the reference
// does (up to expf).
#include "gpu_backend/device_math.cuh"
#include "gpu_backend/kernels.h"

namespace kv::gpu {
namespace {

constexpr int kStateThreads = 128;

__global__ void state_copy_kernel(StateCopyView v) {
  const int pair = static_cast<int>(blockIdx.x);
  const float* src = v.pages.state(v.pairs[2 * pair]);
  float* dst = v.pages.state(v.pairs[2 * pair + 1]);
  for (int j = static_cast<int>(threadIdx.x); j < v.pages.state_floats; j += blockDim.x) dst[j] = src[j];
}

template <typename T>
__global__ void mamba_scan_kernel(MambaScanView<T> v) {
  const int seq = static_cast<int>(blockIdx.x);
  const int j = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x);
  const int kv_dim = v.kv_heads * v.head_dim;
  const int q_dim = v.num_heads * v.head_dim;
  const int per_kv = v.num_heads / v.kv_heads;
  if (j >= kv_dim) return;
  const int kvh = j / v.head_dim, d = j % v.head_dim;
  if (seq == v.num_seqs) {  // padding tokens: zero output
    for (int t = v.query_start_loc[v.num_seqs]; t < v.num_tokens; ++t) {
      for (int r = 0; r < per_kv; ++r)
        v.out[static_cast<std::int64_t>(t) * q_dim + (kvh * per_kv + r) * v.head_dim + d] = from_float<T>(0.0f);
    }
    return;
  }
  const std::int32_t read = v.read_blocks[seq];
  const std::int32_t write = v.write_blocks[seq];
  float s = read >= 0 ? v.pages.state(read)[j] : 0.0f;
  for (int t = v.query_start_loc[seq]; t < v.query_start_loc[seq + 1]; ++t) {
    const T* k = v.qkv + static_cast<std::int64_t>(t) * v.qkv_stride + v.k_offset;
    const float gate = 1.0f / (1.0f + expf(-to_float(k[j])));
    s = gate * s + (1.0f - gate) * to_float(k[kv_dim + j]);
    const T y = from_float<T>(s);
    for (int r = 0; r < per_kv; ++r)
      v.out[static_cast<std::int64_t>(t) * q_dim + (kvh * per_kv + r) * v.head_dim + d] = y;
  }
  if (write >= 0) v.pages.state(write)[j] = s;
}

}  // namespace

cudaError_t launch_state_copy(const StateCopyView& v, cudaStream_t stream) {
  if (v.count < 0 || v.pages.state_floats < 1 || v.pages.page_bytes < 4LL * v.pages.state_floats) {
    return cudaErrorInvalidValue;
  }
  if (v.count == 0) return cudaSuccess;
  if (!v.pages.base || !v.pairs) return cudaErrorInvalidValue;
  state_copy_kernel<<<v.count, kStateThreads, 0, stream>>>(v);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_mamba_scan(const MambaScanView<T>& v, cudaStream_t stream) {
  if (v.num_tokens < 0 || v.num_seqs < 0 || v.kv_heads < 1 || v.head_dim < 1 || v.num_heads % v.kv_heads != 0 ||
      v.pages.state_floats != v.kv_heads * v.head_dim || v.pages.page_bytes < 4LL * v.pages.state_floats) {
    return cudaErrorInvalidValue;
  }
  if (v.num_tokens == 0) return cudaSuccess;
  if (!v.qkv || !v.out || !v.query_start_loc || !v.pages.base ||
      (v.num_seqs > 0 && (!v.read_blocks || !v.write_blocks))) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned>(v.num_seqs + 1),
                  static_cast<unsigned>(ceil_div(v.pages.state_floats, kStateThreads)));
  mamba_scan_kernel<T><<<grid, kStateThreads, 0, stream>>>(v);
  return cudaGetLastError();
}

template cudaError_t launch_mamba_scan<__nv_bfloat16>(const MambaScanView<__nv_bfloat16>&, cudaStream_t);
template cudaError_t launch_mamba_scan<__half>(const MambaScanView<__half>&, cudaStream_t);

}  // namespace kv::gpu
