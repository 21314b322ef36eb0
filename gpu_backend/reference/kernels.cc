#include "gpu_backend/reference/kernels.h"

#include "model/attention_window.h"
#include "model/slot.h"
#include "model/util/check.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kv::gpuref {

RefKvCache::RefKvCache(std::int64_t blocks, int bs, int heads, int dim, float fill)
    : num_blocks(blocks),
      block_size(bs),
      kv_heads(heads),
      head_dim(dim),
      k(static_cast<std::size_t>(blocks * bs * heads * dim), fill),
      v(static_cast<std::size_t>(blocks * bs * heads * dim), fill) {}

std::vector<std::int64_t> slot_mapping(const std::vector<std::int32_t>& rows,
                                       const std::vector<std::int32_t>& positions, const RefBlockTable& table,
                                       int block_size, bool null_block) {
  std::vector<std::int64_t> slots(rows.size(), -1);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0) continue;
    const std::int64_t block = table.at(rows[i], static_cast<int>(block_index(positions[i], block_size)));
    if (null_block && block == 0) continue;
    slots[i] = slot_in_block(block, block_size, positions[i]);
  }
  return slots;
}

void cache_write(const float* k_src, const float* v_src, std::int64_t src_stride,
                 const std::vector<std::int64_t>& slots, RefKvCache* cache) {
  const std::size_t width = static_cast<std::size_t>(cache->kv_heads * cache->head_dim);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] < 0) continue;
    const std::size_t dst = cache->offset(slots[i], 0);
    const auto src = static_cast<std::size_t>(static_cast<std::int64_t>(i) * src_stride);
    std::copy(k_src + src, k_src + src + width, cache->k.begin() + static_cast<std::ptrdiff_t>(dst));
    std::copy(v_src + src, v_src + src + width, cache->v.begin() + static_cast<std::ptrdiff_t>(dst));
  }
}

namespace {

// Softmax-weighted sum over keys [0, len) fetched through key_at/value_at: two passes in a
// fixed order (max, then exp-sum and accumulate).
template <typename KeyAt, typename ValueAt>
void attend_one(const float* q, int len, int head_dim, float scale, KeyAt key_at, ValueAt value_at, float* out) {
  std::vector<float> scores(static_cast<std::size_t>(len));
  float m = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < len; ++j) {
    const float* k = key_at(j);
    float s = 0.0f;
    for (int d = 0; d < head_dim; ++d) s += q[d] * k[d];
    scores[static_cast<std::size_t>(j)] = s * scale;
    m = std::max(m, scores[static_cast<std::size_t>(j)]);
  }
  std::vector<float> acc(static_cast<std::size_t>(head_dim), 0.0f);
  float l = 0.0f;
  for (int j = 0; j < len; ++j) {
    const float p = std::exp(scores[static_cast<std::size_t>(j)] - m);
    l += p;
    const float* v = value_at(j);
    for (int d = 0; d < head_dim; ++d) acc[static_cast<std::size_t>(d)] += p * v[d];
  }
  for (int d = 0; d < head_dim; ++d) out[d] = acc[static_cast<std::size_t>(d)] / l;
}

}  // namespace

void paged_attention(const float* q, std::int64_t q_stride, const std::vector<std::int32_t>& rows,
                     const std::vector<std::int32_t>& positions, const RefBlockTable& table, const RefKvCache& cache,
                     int num_heads, float scale, DType round, float* out, AttentionMask mask) {
  const int d = cache.head_dim;
  const int group = num_heads / cache.kv_heads;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    float* o = out + static_cast<std::int64_t>(i) * num_heads * d;
    if (rows[i] < 0) {
      std::fill(o, o + num_heads * d, 0.0f);
      continue;
    }
    const int row = rows[i];
    const int p = positions[i];
    const auto first = static_cast<int>(attention_begin(mask.window, p));
    auto slot_of = [&](int j) {  // key j of the window: position first + j
      const int pos = first + j;
      KV_CHECK(pos >= first && pos <= p,
               "attention of position " << p << " reads position " << pos << " outside its window " << mask.window);
      const std::int32_t block = table.at(row, pos / cache.block_size);
      KV_CHECK(!mask.null_block || block != 0, "attention of position " << p << " (row " << row << ") reads position "
                                                                        << pos << " through the null block");
      return static_cast<std::int64_t>(block) * cache.block_size + pos % cache.block_size;
    };
    for (int h = 0; h < num_heads; ++h) {
      const int kvh = h / group;
      attend_one(
          q + static_cast<std::int64_t>(i) * q_stride + h * d, p + 1 - first, d, scale,
          [&](int j) { return cache.k.data() + cache.offset(slot_of(j), kvh); },
          [&](int j) { return cache.v.data() + cache.offset(slot_of(j), kvh); }, o + h * d);
      for (int x = 0; x < d; ++x) o[h * d + x] = round_to(round, o[h * d + x]);
    }
  }
}

std::vector<float> dense_causal_attention(const std::vector<float>& q, const std::vector<float>& k,
                                          const std::vector<float>& v, int len, int num_heads, int kv_heads,
                                          int head_dim, float scale) {
  std::vector<std::uint8_t> allowed(static_cast<std::size_t>(len) * static_cast<std::size_t>(len), 0);
  for (int t = 0; t < len; ++t) {
    for (int j = 0; j <= t; ++j)
      allowed[static_cast<std::size_t>(t) * static_cast<std::size_t>(len) + static_cast<std::size_t>(j)] = 1;
  }
  return dense_masked_attention(q, k, v, len, num_heads, kv_heads, head_dim, scale, allowed);
}

std::vector<float> dense_masked_attention(const std::vector<float>& q, const std::vector<float>& k,
                                          const std::vector<float>& v, int len, int num_heads, int kv_heads,
                                          int head_dim, float scale, const std::vector<std::uint8_t>& allowed) {
  std::vector<float> out(static_cast<std::size_t>(len * num_heads * head_dim), 0.0f);
  const int group = num_heads / kv_heads;
  for (int t = 0; t < len; ++t) {
    std::vector<int> keys;
    for (int j = 0; j < len; ++j) {
      if (allowed[static_cast<std::size_t>(t) * static_cast<std::size_t>(len) + static_cast<std::size_t>(j)])
        keys.push_back(j);
    }
    if (keys.empty()) continue;
    for (int h = 0; h < num_heads; ++h) {
      const int kvh = h / group;
      auto at = [&](const std::vector<float>& x, int j) {
        return x.data() + (static_cast<std::size_t>(keys[static_cast<std::size_t>(j)]) * kv_heads + kvh) * head_dim;
      };
      attend_one(
          q.data() + (static_cast<std::size_t>(t) * num_heads + h) * head_dim, static_cast<int>(keys.size()), head_dim,
          scale, [&](int j) { return at(k, j); }, [&](int j) { return at(v, j); },
          out.data() + (static_cast<std::size_t>(t) * num_heads + h) * head_dim);
    }
  }
  return out;
}

void rmsnorm(const float* x, std::int64_t rows, int dim, const float* weight, float eps, DType round, float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float ss = 0.0f;
    for (int i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    for (int i = 0; i < dim; ++i) out[r * dim + i] = round_to(round, xr[i] * inv * weight[i]);
  }
}

void rotary(float* qkv, std::int64_t stride, const std::vector<std::int32_t>& positions, int num_heads, int kv_heads,
            int head_dim, const std::vector<float>& inv_freq, DType round) {
  const int half = head_dim / 2;
  for (std::size_t t = 0; t < positions.size(); ++t) {
    float* row = qkv + static_cast<std::int64_t>(t) * stride;
    for (int h = 0; h < num_heads + kv_heads; ++h) {
      float* x = row + h * head_dim;
      for (int i = 0; i < half; ++i) {
        const float angle = static_cast<float>(positions[t]) * inv_freq[static_cast<std::size_t>(i)];
        const float c = std::cos(angle);
        const float s = std::sin(angle);
        const float x1 = x[i];
        const float x2 = x[i + half];
        x[i] = round_to(round, x1 * c - x2 * s);
        x[i + half] = round_to(round, x2 * c + x1 * s);
      }
    }
  }
}

void silu_mul(const float* gate_up, std::int64_t rows, int inter, DType round, float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* g = gate_up + r * 2 * inter;
    for (int j = 0; j < inter; ++j) {
      const float silu = g[j] / (1.0f + std::exp(-g[j]));
      out[r * inter + j] = round_to(round, silu * g[inter + j]);
    }
  }
}

void embedding(const std::vector<std::int32_t>& tokens, const float* table, int dim, float* out) {
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    std::copy(table + static_cast<std::int64_t>(tokens[t]) * dim,
              table + static_cast<std::int64_t>(tokens[t] + 1) * dim, out + static_cast<std::int64_t>(t) * dim);
  }
}

void linear(const float* x, std::int64_t rows, int in_dim, const float* w, int out_dim, float* y, DType round,
            bool accumulate) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * in_dim;
    for (int o = 0; o < out_dim; ++o) {
      const float* wo = w + static_cast<std::int64_t>(o) * in_dim;
      float s = 0.0f;
      for (int i = 0; i < in_dim; ++i) s += xr[i] * wo[i];
      float& dst = y[r * out_dim + o];
      dst = accumulate ? dst + s : round_to(round, s);
    }
  }
}

}  // namespace kv::gpuref
