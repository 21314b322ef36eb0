// The keys one query reads back from the KV cache, in one place: a query at position p of a
// layer with reach `window` (the StepPlan::group_windows convention) attends to positions
// [attention_begin(window, p), p].
//   window == 0: full attention, [0, p];
//   window == w > 0: sliding window of w tokens, itself included, [max(0, p - w + 1), p]
//     (vLLM's convention: FlashAttention window_size = (w - 1, 0));
//   window == -c < 0: chunked local attention, [floor(p / c) * c, p].
// The shadow memory's reach, the CUDA kernels and their CPU reference use the same rule.
// C++17 and constexpr on purpose: the CUDA kernels call it from device code.
#pragma once

#include <cstdint>

namespace kv {

constexpr std::int64_t attention_begin(std::int64_t window, std::int64_t position) {
  if (window > 0) return position - window + 1 > 0 ? position - window + 1 : 0;
  if (window < 0) return position / -window * -window;
  return 0;
}

}  // namespace kv
