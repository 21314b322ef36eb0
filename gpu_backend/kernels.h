// Host launchers of the CUDA kernels. Each takes a plain-data view (kernel_views.h) by value
// and a stream, validates the view, launches, and returns the error code (cudaSuccess,
// cudaErrorInvalidValue for a bad view, or the launch error); none aborts, none synchronizes.
// Element types: __nv_bfloat16 and __half (explicit instantiations in the .cu files).
// Internal to gpu_backend/: never included by the core or the simulator.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "gpu_backend/kernel_views.h"

namespace kv::gpu {

// Maximum attention splits (split-K) a launch may ask for.
inline constexpr int kMaxAttentionSplits = 16;

cudaError_t launch_slot_mapping(const SlotMappingView& view, cudaStream_t stream);
cudaError_t launch_block_table_update(const BlockTableUpdateView& view, cudaStream_t stream);

template <typename T>
cudaError_t launch_cache_write(const CacheWriteView<T>& view, cudaStream_t stream);

// Prefill and decode paged attention in one kernel: grid (tokens, heads, splits). With
// num_splits > 1 each split handles a contiguous share of the context and a combine kernel
// merges the partial softmax states; the shares follow each token's own context length, so a
// launch shape works for any batch (what CUDA graphs need).
template <typename T>
cudaError_t launch_paged_attention(const AttentionView<T>& view, cudaStream_t stream);

// Mamba state path (mamba_state.cu): the align moves' copies, then the recurrence; grid
// (num_seqs + 1, state chunks), the last row of blocks zeroing the padding tokens' output.
cudaError_t launch_state_copy(const StateCopyView& view, cudaStream_t stream);
template <typename T>
cudaError_t launch_mamba_scan(const MambaScanView<T>& view, cudaStream_t stream);

template <typename T>
cudaError_t launch_rmsnorm(const RmsNormView<T>& view, cudaStream_t stream);
template <typename T>
cudaError_t launch_rotary(const RotaryView<T>& view, cudaStream_t stream);
template <typename T>
cudaError_t launch_silu_mul(const SiluMulView<T>& view, cudaStream_t stream);
template <typename T>
cudaError_t launch_embedding(const EmbeddingView<T>& view, cudaStream_t stream);
template <typename T>
cudaError_t launch_gather_rows(const GatherRowsView<T>& view, cudaStream_t stream);
template <typename T>
cudaError_t launch_seeded_fill(const SeededFillView<T>& view, cudaStream_t stream);

}  // namespace kv::gpu
