// Slot mapping (slot = block_table[row][pos / B] * B + pos % B, -1 for padding) and the
// block-table update scatter that applies a step's (row, column, block) deltas.
#include "gpu_backend/device_math.cuh"
#include "gpu_backend/kernels.h"

namespace kv::gpu {

__global__ void slot_mapping_kernel(SlotMappingView v) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= v.tokens.num_tokens) return;
  const std::int32_t row = v.tokens.rows[i];
  v.slots[i] = row < 0 ? -1 : v.table.slot(row, v.tokens.positions[i]);
}

cudaError_t launch_slot_mapping(const SlotMappingView& v, cudaStream_t stream) {
  if (v.tokens.num_tokens < 0 || v.table.block_size < 1) return cudaErrorInvalidValue;
  if (v.tokens.num_tokens == 0) return cudaSuccess;
  if (!v.tokens.rows || !v.tokens.positions || !v.table.table || !v.slots) return cudaErrorInvalidValue;
  slot_mapping_kernel<<<ceil_div(v.tokens.num_tokens, 256), 256, 0, stream>>>(v);
  return cudaGetLastError();
}

__global__ void block_table_update_kernel(BlockTableUpdateView v) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= v.count) return;
  const std::int32_t row = v.updates[3 * i];
  const std::int32_t column = v.updates[3 * i + 1];
  v.table[static_cast<std::int64_t>(row) * v.row_stride + column] = v.updates[3 * i + 2];
}

cudaError_t launch_block_table_update(const BlockTableUpdateView& v, cudaStream_t stream) {
  if (v.count < 0) return cudaErrorInvalidValue;
  if (v.count == 0) return cudaSuccess;
  if (!v.table || !v.updates) return cudaErrorInvalidValue;
  block_table_update_kernel<<<ceil_div(v.count, 256), 256, 0, stream>>>(v);
  return cudaGetLastError();
}

}  // namespace kv::gpu
