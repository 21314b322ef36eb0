// Plain-data views handed to the CUDA kernels by value: pointers, sizes and strides, with
// __host__ __device__ accessors. No CUDA header here: T is the element type (__nv_bfloat16 or
// __half in device code). Layouts are the reference's (gpu_backend/reference/kernels.h):
// activations row-major [tokens, features]; per layer K and V caches
// [num_blocks, block_size, kv_heads, head_dim]; block tables dense [rows, row_stride], one per
// KV-cache group. A token with row < 0 is padding: slot -1, nothing written to the cache, zero
// attention. With null_block set (hybrid layouts), an entry holding that block maps to slot -1
// too: the null block is never written, and attention never reaches it (a query at p reads
// positions [attention_begin(window, p), p] only, model/attention_window.h).
#pragma once

#include <cstdint>

#include "gpu_backend/reference/seeded_init.h"  // KVG_HD
#include "model/attention_window.h"
#include "model/slot.h"

namespace kv::gpu {

struct BlockTableView {
  const std::int32_t* table = nullptr;  // [rows, row_stride]
  std::int32_t row_stride = 0;
  std::int32_t block_size = 16;
  std::int32_t null_block = -1;  // the null block's id (0) in hybrid layouts; -1: none
  KVG_HD std::int64_t slot(std::int32_t row, std::int32_t position) const {
    const std::int64_t block = table[static_cast<std::int64_t>(row) * row_stride + block_index(position, block_size)];
    return block == null_block ? kPaddingSlot : slot_in_block(block, block_size, position);
  }
};

struct TokenView {                     // the flattened batch, per token
  const std::int32_t* rows = nullptr;  // block-table row, -1 for padding
  const std::int32_t* positions = nullptr;
  std::int32_t num_tokens = 0;
};

template <typename T>
struct PagedKvView {  // one layer
  T* k = nullptr;
  T* v = nullptr;
  std::int64_t num_blocks = 0;
  std::int32_t block_size = 16;
  std::int32_t kv_heads = 1;
  std::int32_t head_dim = 8;
  KVG_HD std::int64_t offset(std::int64_t slot, std::int32_t head) const { return (slot * kv_heads + head) * head_dim; }
};

struct BlockTableUpdateView {  // (row, column, block) triples
  std::int32_t* table = nullptr;
  std::int32_t row_stride = 0;
  const std::int32_t* updates = nullptr;
  std::int32_t count = 0;
};

struct SlotMappingView {
  TokenView tokens;
  BlockTableView table;
  std::int64_t* slots = nullptr;  // [num_tokens]
};

template <typename T>
struct CacheWriteView {
  const T* k = nullptr;  // row i at k + i * src_stride, kv_heads * head_dim values
  const T* v = nullptr;
  std::int64_t src_stride = 0;
  const std::int64_t* slots = nullptr;
  std::int32_t num_tokens = 0;
  PagedKvView<T> cache;
};

template <typename T>
struct AttentionView {
  const T* q = nullptr;  // head h of token i at q + i * q_stride + h * head_dim
  std::int64_t q_stride = 0;
  T* out = nullptr;  // [num_tokens, num_heads * head_dim]
  TokenView tokens;
  BlockTableView table;
  PagedKvView<T> cache;
  std::int32_t num_heads = 1;
  float scale = 1.0f;
  std::int32_t num_splits = 1;   // split-K over the context; > 1 needs the partial buffers
  float* partial_out = nullptr;  // [num_tokens, num_heads, num_splits, head_dim]
  float* partial_max = nullptr;  // [num_tokens, num_heads, num_splits]
  float* partial_sum = nullptr;  // [num_tokens, num_heads, num_splits]
  std::int64_t window = 0;       // the layer's reach: 0 full, w sliding, -c chunked
};

// A Mamba layer's state blocks: block b's state is state_floats fp32 values at
// base + b * page_bytes (the start of b's K page in the layer's tensor, reference/kv_layout.h).
struct StatePagesView {
  void* base = nullptr;
  std::int64_t page_bytes = 0;
  std::int32_t state_floats = 0;
  KVG_HD float* state(std::int32_t block) const {
    return reinterpret_cast<float*>(static_cast<char*>(base) + static_cast<std::int64_t>(block) * page_bytes);
  }
};

struct StateCopyView {  // align moves: (src, dst) block pairs, run before the step
  StatePagesView pages;
  const std::int32_t* pairs = nullptr;
  std::int32_t count = 0;
};

// The synthetic recurrent layer (reference/mamba_state.h): per sequence s and state element j,
// s_j <- a * s_j + (1 - a) * v[j], a = sigmoid(k[j]), over the sequence's tokens in order,
// starting from read_blocks[s]'s state (-1: zero) and ending in write_blocks[s] (-1: padding
// sequence, nothing written). out gets s broadcast over the query heads (GQA mapping);
// tokens from query_start_loc[num_seqs] on are padding and get zeros.
template <typename T>
struct MambaScanView {
  const T* qkv = nullptr;  // K of token i at qkv + i * qkv_stride + k_offset, V right after it
  std::int64_t qkv_stride = 0;
  std::int64_t k_offset = 0;
  T* out = nullptr;  // [num_tokens, num_heads * head_dim]
  std::int32_t num_tokens = 0;
  const std::int32_t* query_start_loc = nullptr;  // [num_seqs + 1]
  const std::int32_t* read_blocks = nullptr;      // [num_seqs]
  const std::int32_t* write_blocks = nullptr;     // [num_seqs]
  std::int32_t num_seqs = 0;
  StatePagesView pages;  // state_floats = kv_heads * head_dim
  std::int32_t num_heads = 1;
  std::int32_t kv_heads = 1;
  std::int32_t head_dim = 8;
};

template <typename T>
struct RmsNormView {
  const float* x = nullptr;   // fp32 residual stream [rows, dim]
  const T* weight = nullptr;  // [dim]
  T* out = nullptr;           // [rows, dim]
  std::int32_t rows = 0;
  std::int32_t dim = 0;
  float eps = 1e-5f;
};

template <typename T>
struct RotaryView {
  T* qkv = nullptr;  // rotates the first num_heads + kv_heads heads of each row
  std::int64_t stride = 0;
  const std::int32_t* positions = nullptr;
  const float* inv_freq = nullptr;  // [head_dim / 2]
  std::int32_t num_tokens = 0;
  std::int32_t num_heads = 1;
  std::int32_t kv_heads = 1;
  std::int32_t head_dim = 8;
};

template <typename T>
struct SiluMulView {
  const T* gate_up = nullptr;  // [rows, 2 * inter]: gate then up
  T* out = nullptr;            // [rows, inter]
  std::int32_t rows = 0;
  std::int32_t inter = 0;
};

template <typename T>
struct EmbeddingView {
  const std::int32_t* tokens = nullptr;
  const T* table = nullptr;  // [vocab, dim]
  float* out = nullptr;      // fp32 residual [rows, dim]
  std::int32_t rows = 0;
  std::int32_t dim = 0;
  std::int32_t vocab = 0;
};

template <typename T>
struct GatherRowsView {
  const T* src = nullptr;
  T* dst = nullptr;
  const std::int32_t* indices = nullptr;  // dst row i = src row indices[i]
  std::int32_t count = 0;
  std::int32_t dim = 0;
};

template <typename T>
struct SeededFillView {
  T* dst = nullptr;
  std::int64_t count = 0;
  std::uint64_t seed = 0;
  std::uint32_t tensor_id = 0;
  float scale = 0.0f;  // U(-scale, scale); with constant_fill, every value = scale
  bool constant_fill = false;
};

}  // namespace kv::gpu
