// Cache write (vLLM's reshape_and_cache_flash): each token's K and V rows go to its slot in
// the [num_blocks, block_size, kv_heads, head_dim] caches; slot -1 (padding) writes nothing.
// One thread block per token, 16-byte copies.
#include <cstdint>

#include "gpu_backend/device_math.cuh"
#include "gpu_backend/kernels.h"

namespace kv::gpu {

template <typename T>
__global__ void cache_write_kernel(CacheWriteView<T> v) {
  const int i = static_cast<int>(blockIdx.x);
  const std::int64_t slot = v.slots[i];
  if (slot < 0) return;
  const int vectors = v.cache.kv_heads * v.cache.head_dim * static_cast<int>(sizeof(T)) / 16;
  const auto* ks = reinterpret_cast<const uint4*>(v.k + i * v.src_stride);
  const auto* vs = reinterpret_cast<const uint4*>(v.v + i * v.src_stride);
  auto* kd = reinterpret_cast<uint4*>(v.cache.k + v.cache.offset(slot, 0));
  auto* vd = reinterpret_cast<uint4*>(v.cache.v + v.cache.offset(slot, 0));
  for (int j = static_cast<int>(threadIdx.x); j < vectors; j += static_cast<int>(blockDim.x)) {
    const uint4 kx = ks[j];
    const uint4 vx = vs[j];
    kd[j] = kx;
    vd[j] = vx;
  }
}

template <typename T>
cudaError_t launch_cache_write(const CacheWriteView<T>& v, cudaStream_t stream) {
  if (v.num_tokens < 0) return cudaErrorInvalidValue;
  if (v.num_tokens == 0) return cudaSuccess;
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const std::int64_t width_bytes = static_cast<std::int64_t>(v.cache.kv_heads) * v.cache.head_dim * sizeof(T);
  if (!v.k || !v.v || !v.slots || !v.cache.k || !v.cache.v || width_bytes % 16 != 0 ||
      (v.src_stride * static_cast<std::int64_t>(sizeof(T))) % 16 != 0 || !aligned(v.k) || !aligned(v.v) ||
      !aligned(v.cache.k) || !aligned(v.cache.v)) {
    return cudaErrorInvalidValue;
  }
  const int vectors = static_cast<int>(width_bytes / 16);
  const int threads = vectors >= 128 ? 128 : ((vectors + 31) / 32) * 32;
  cache_write_kernel<T><<<static_cast<unsigned>(v.num_tokens), threads, 0, stream>>>(v);
  return cudaGetLastError();
}

template cudaError_t launch_cache_write<__nv_bfloat16>(const CacheWriteView<__nv_bfloat16>&, cudaStream_t);
template cudaError_t launch_cache_write<__half>(const CacheWriteView<__half>&, cudaStream_t);

}  // namespace kv::gpu
