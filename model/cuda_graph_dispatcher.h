// CudaGraphDispatcher: vLLM v1's CUDA-graph dispatch as pure logic (no CUDA): the
// cudagraph_mode, the capture sizes, the set of captured keys and dispatch(), so the simulator
// models exactly what the GPU backend replays.
// Invariants:
//   1. capture_sizes() is sorted, deduplicated, every size >= 1; max_capture_size() is its
//      last element (0 when the mode is NONE or the list is empty).
//   2. Keys: mixed mode PIECEWISE or FULL -> one key {size, uniform_decode=false} per capture
//      size; decode mode FULL with a separate routine (FULL_DECODE_ONLY, FULL_AND_PIECEWISE)
//      -> one key {size, uniform_decode=true} per capture size in
//      [uniform_decode_query_len, uniform_decode_query_len * max_num_seqs].
//   3. dispatch() never returns a graph mode for a batch above max_capture_size(); a graph
//      mode comes with a descriptor that is a captured key (num_tokens padded up to the next
//      capture size); NONE comes with the unpadded batch.
// Immutable after construction; safe to share between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "model/util/status.h"

namespace kv {

enum class CudaGraphMode { kNone, kPiecewise, kFull, kFullDecodeOnly, kFullAndPiecewise };

const char* to_string(CudaGraphMode mode);  // vLLM's spelling: "FULL_AND_PIECEWISE", ...
std::optional<CudaGraphMode> parse_cuda_graph_mode(std::string_view text);  // any case

// The graph mode a mode uses for uniform-decode batches and for mixed batches.
CudaGraphMode decode_mode(CudaGraphMode mode);
CudaGraphMode mixed_mode(CudaGraphMode mode);

struct BatchDescriptor {
  std::int64_t num_tokens = 0;
  bool uniform_decode = false;  // every request has query length uniform_decode_query_len
  bool operator==(const BatchDescriptor&) const = default;
};

struct CudaGraphConfig {
  CudaGraphMode mode = CudaGraphMode::kFullAndPiecewise;  // vLLM v1's default
  int max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 0;  // clamps the default max capture size; 0 = no clamp
  std::int64_t max_capture_size = 0;        // 0: min(2 * max_num_seqs, 512) as vLLM
  std::vector<std::int64_t> capture_sizes;  // empty: vLLM's default list up to max_capture_size
  int uniform_decode_query_len = 1;         // 1 + num_speculative_tokens
};

// vLLM's default list: [1, 2, 4] + range(8, min(max + 1, 256), 8) + range(256, max + 1, 16).
std::vector<std::int64_t> default_capture_sizes(std::int64_t max_capture_size);

// Bad values (sizes < 1, max_num_seqs < 1, ...) with a message naming the field.
Status validate(const CudaGraphConfig& config);

struct DispatchResult {
  CudaGraphMode runtime_mode = CudaGraphMode::kNone;  // NONE, PIECEWISE or FULL
  BatchDescriptor batch;
};

class CudaGraphDispatcher {
 public:
  explicit CudaGraphDispatcher(const CudaGraphConfig& config);  // KV_CHECKs validate(config)

  CudaGraphMode mode() const { return config_.mode; }
  const std::vector<std::int64_t>& capture_sizes() const { return capture_sizes_; }
  std::int64_t max_capture_size() const { return capture_sizes_.empty() ? 0 : capture_sizes_.back(); }
  // The smallest capture size >= num_tokens, or num_tokens itself above the largest.
  std::int64_t padded_size(std::int64_t num_tokens) const;

  // The captured keys of one runtime mode (PIECEWISE or FULL), sorted by (uniform, tokens).
  std::vector<BatchDescriptor> keys(CudaGraphMode runtime_mode) const;

  // vLLM's dispatch: FULL (exact key, then the mixed key) unless cascade attention is used,
  // then PIECEWISE, else NONE for eager execution.
  DispatchResult dispatch(std::int64_t num_tokens, bool uniform_decode, bool uses_cascade_attention = false) const;

 private:
  static bool contains(const std::vector<std::int64_t>& sorted, std::int64_t value);

  CudaGraphConfig config_;
  std::vector<std::int64_t> capture_sizes_;
  std::vector<std::int64_t> full_mixed_sizes_;   // keys {n, false} of runtime mode FULL
  std::vector<std::int64_t> full_decode_sizes_;  // keys {n, true} of runtime mode FULL
  std::vector<std::int64_t> piecewise_sizes_;    // keys {n, false} of runtime mode PIECEWISE
};

}  // namespace kv
