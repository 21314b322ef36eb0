// The CPU reference of every GPU kernel, in fp32, over the same layouts the GPU uses:
//   activations row-major [tokens, features]; the KV cache of one layer is K and V, each
//   [num_blocks, block_size, kv_heads, head_dim]; block tables are dense [rows, row_stride].
// `round` emulates the storage type of a kernel's output (DType::kFp32: none). Every loop runs
// in a fixed order, so a row's result depends only on that row's inputs: the same token gives
// bit-identical values whatever else is in the batch. That is what makes the prefix-cache
// equivalence exact on the reference (GPU kernels only promise a tolerance).
#pragma once

#include <cstdint>
#include <vector>

#include "gpu_backend/reference/numerics.h"

namespace kv::gpuref {

struct RefKvCache {  // one layer
  std::int64_t num_blocks = 0;
  int block_size = 16;
  int kv_heads = 1;
  int head_dim = 8;
  std::vector<float> k;  // [num_blocks, block_size, kv_heads, head_dim]
  std::vector<float> v;

  RefKvCache() = default;
  RefKvCache(std::int64_t blocks, int bs, int heads, int dim, float fill = 0.0f);
  std::size_t offset(std::int64_t slot, int head) const {
    return static_cast<std::size_t>((slot * kv_heads + head) * head_dim);
  }
};

// Dense block table: table[row * row_stride + i] is the row's i-th physical block.
struct RefBlockTable {
  std::vector<std::int32_t> table;
  int row_stride = 0;
  std::int32_t at(int row, std::int64_t i) const {
    return table[static_cast<std::size_t>(row * static_cast<std::int64_t>(row_stride) + i)];
  }
};

// Which keys a query of a layer reads, and whether block 0 is the null block (hybrid layouts,
// gpu_backend/reference/kv_layout.h).
struct AttentionMask {
  std::int64_t window = 0;  // model/attention_window.h: 0 full, w > 0 sliding, -c chunked
  bool null_block = false;  // block 0 is the null block: slot -1, and reading it aborts
};

// slot = table[row][pos / B] * B + pos % B; -1 where row < 0 (padding) and, with null_block,
// where the entry is block 0.
std::vector<std::int64_t> slot_mapping(const std::vector<std::int32_t>& rows,
                                       const std::vector<std::int32_t>& positions, const RefBlockTable& table,
                                       int block_size, bool null_block = false);

// Copies each token's K and V (kv_heads * head_dim values at k_src + i * src_stride) to its
// slot; skips slot -1.
void cache_write(const float* k_src, const float* v_src, std::int64_t src_stride,
                 const std::vector<std::int64_t>& slots, RefKvCache* cache);

// Causal paged attention: query token i (row rows[i], position p = positions[i]) attends to
// positions [attention_begin(mask.window, p), p] of its row (model/attention_window.h; [0, p]
// for full attention), read through the block table; blocks wholly before the window are never
// looked at. q is [n, q_stride] with heads at h * head_dim; GQA maps head h to kv head
// h / (num_heads / kv_heads). out is [n, num_heads * head_dim]; padding tokens (row < 0) get
// zeros. Aborts (KV_CHECK) if it ever reads a position outside the window or, with
// mask.null_block, a slot of block 0.
void paged_attention(const float* q, std::int64_t q_stride, const std::vector<std::int32_t>& rows,
                     const std::vector<std::int32_t>& positions, const RefBlockTable& table, const RefKvCache& cache,
                     int num_heads, float scale, DType round, float* out, AttentionMask mask = {});

// Plain causal attention over dense q [len, num_heads, head_dim], k/v [len, kv_heads, head_dim].
std::vector<float> dense_causal_attention(const std::vector<float>& q, const std::vector<float>& k,
                                          const std::vector<float>& v, int len, int num_heads, int kv_heads,
                                          int head_dim, float scale);

// The same with an explicit mask: query t attends to the keys j (ascending) with
// allowed[t * len + j] != 0; a query with no allowed key gets zeros.
std::vector<float> dense_masked_attention(const std::vector<float>& q, const std::vector<float>& k,
                                          const std::vector<float>& v, int len, int num_heads, int kv_heads,
                                          int head_dim, float scale, const std::vector<std::uint8_t>& allowed);

// out[r] = round(x[r] / sqrt(mean(x[r]^2) + eps) * weight).
void rmsnorm(const float* x, std::int64_t rows, int dim, const float* weight, float eps, DType round, float* out);

// Rotary embedding (rotate-half pairing i, i + head_dim/2) on the first num_heads + kv_heads
// heads of every row of qkv, angle = position * inv_freq[i] in fp32.
void rotary(float* qkv, std::int64_t stride, const std::vector<std::int32_t>& positions, int num_heads, int kv_heads,
            int head_dim, const std::vector<float>& inv_freq, DType round);

// out[r][j] = round(silu(gu[r][j]) * gu[r][inter + j]).
void silu_mul(const float* gate_up, std::int64_t rows, int inter, DType round, float* out);

// out[r] = table[tokens[r]] (fp32 residual stream).
void embedding(const std::vector<std::int32_t>& tokens, const float* table, int dim, float* out);

// y[r] = x[r] W^T (W is [out_dim, in_dim]); accumulate: y += x W^T (fp32), else round(x W^T).
void linear(const float* x, std::int64_t rows, int in_dim, const float* w, int out_dim, float* y, DType round,
            bool accumulate);

}  // namespace kv::gpuref
