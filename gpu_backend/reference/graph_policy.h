// GraphPolicy: which steps the CUDA device replays as a CUDA graph, as vLLM v1's dispatcher
// decides for the runtime modes this backend implements: FULL graphs for uniform-decode
// batches (every request has one new token) padded up to the next capture size, eager
// execution (NONE) for every other batch and above the largest capture size. PIECEWISE is not
// implemented on the GPU and falls back to NONE. Pure logic, no CUDA: the implementation is the
// core's CudaGraphDispatcher (model/cuda_graph_dispatcher.h) in FULL_DECODE_ONLY mode, the
// same one the simulator's cost model consults.
// Invariants:
//   1. capture_sizes() is sorted, deduplicated, every size >= 1.
//   2. A kFull decision's padded_tokens is a capture size >= num_tokens; a kNone decision's
//      padded_tokens == num_tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/util/status.h"

namespace kv::gpuref {

enum class GraphRuntimeMode { kNone, kFull };

struct GraphDecision {
  GraphRuntimeMode mode = GraphRuntimeMode::kNone;
  std::int64_t padded_tokens = 0;  // the graph key (== padded number of requests for decode)
};

class GraphPolicy {
 public:
  virtual ~GraphPolicy() = default;
  virtual GraphDecision dispatch(std::int64_t num_tokens, bool uniform_decode) const = 0;
  virtual const std::vector<std::int64_t>& capture_sizes() const = 0;
};

// vLLM's default capture list: [1, 2, 4] + range(8, min(max + 1, 256), 8) + range(256, max + 1, 16).
std::vector<std::int64_t> vllm_default_capture_sizes(std::int64_t max_capture_size);

// mode: "NONE" (never a graph) or "FULL_DECODE_ONLY"; "FULL_AND_PIECEWISE" and "FULL" are
// accepted and behave as FULL_DECODE_ONLY here (mixed batches run eager). Empty sizes: vLLM's
// default list up to max_capture_size.
// max_num_seqs > 0 limits full decode graphs to batches of that many requests, as vLLM.
StatusOr<std::unique_ptr<GraphPolicy>> make_graph_policy(const std::string& mode, std::vector<std::int64_t> sizes,
                                                         std::int64_t max_capture_size, int max_num_seqs = 0);

}  // namespace kv::gpuref
