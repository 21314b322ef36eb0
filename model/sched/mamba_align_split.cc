#include "model/sched/mamba_align_split.h"

#include <algorithm>

namespace kv {

std::int64_t mamba_align_split(const AlignSplitInput& in) {
  const std::int64_t b = in.block_size;
  const std::int64_t start = in.start;
  if (start >= std::max(in.num_prompt_tokens, in.num_tokens - 1)) return in.num_new_tokens;
  // The last position whose state may be cached: the last block end, one block earlier with
  // eagle (whose drafter recomputes the last block).
  const std::int64_t last_state = std::max<std::int64_t>(in.num_tokens / b * b - (in.use_eagle ? b : 0), 0);
  std::int64_t end = start + in.num_new_tokens;
  if (end < last_state) end = end / b * b;
  // The chunk stops at the first allowed position strictly inside (start, end).
  std::int64_t cut = end;
  const auto stop_at = [&](std::int64_t pos) {
    if (pos > start && pos < cut) cut = pos;
  };
  const std::int64_t next_boundary = (start / b + 1) * b;
  if (start % b != 0 && next_boundary <= last_state) stop_at(next_boundary);
  stop_at(last_state);
  const std::int64_t junction = in.shared_prefix_boundary;
  if (junction > start && junction < end) stop_at(start + (junction - start) / b * b);
  return std::max<std::int64_t>(cut - start, 0);
}

}  // namespace kv
