#include "gpu_backend/reference/graph_policy.h"

#include <algorithm>

#include "model/cuda_graph_dispatcher.h"

namespace kv::gpuref {

std::vector<std::int64_t> vllm_default_capture_sizes(std::int64_t max_capture_size) {
  return default_capture_sizes(max_capture_size);
}

namespace {

// The core's CudaGraphDispatcher in FULL_DECODE_ONLY mode (or NONE): the decisions the
// simulator models are the ones the GPU executes. Mixed and prefill batches run eager.
class DispatcherPolicy final : public GraphPolicy {
 public:
  explicit DispatcherPolicy(const CudaGraphConfig& config) : dispatcher_(config) {}
  GraphDecision dispatch(std::int64_t num_tokens, bool uniform_decode) const override {
    const DispatchResult r = dispatcher_.dispatch(num_tokens, uniform_decode);
    if (r.runtime_mode == CudaGraphMode::kFull) return {GraphRuntimeMode::kFull, r.batch.num_tokens};
    return {GraphRuntimeMode::kNone, num_tokens};
  }
  const std::vector<std::int64_t>& capture_sizes() const override { return dispatcher_.capture_sizes(); }

 private:
  CudaGraphDispatcher dispatcher_;
};

}  // namespace

StatusOr<std::unique_ptr<GraphPolicy>> make_graph_policy(const std::string& mode, std::vector<std::int64_t> sizes,
                                                         std::int64_t max_capture_size, int max_num_seqs) {
  CudaGraphConfig config;
  if (mode == "NONE") {
    config.mode = CudaGraphMode::kNone;
  } else if (mode == "FULL_DECODE_ONLY" || mode == "FULL_AND_PIECEWISE" || mode == "FULL") {
    config.mode = CudaGraphMode::kFullDecodeOnly;  // the modes this backend implements
  } else {
    return Status::error("cudagraph_mode '" + mode +
                         "' is not one of NONE, FULL_DECODE_ONLY, FULL_AND_PIECEWISE, FULL");
  }
  if (sizes.empty() && max_capture_size < 1) return Status::error("max_cudagraph_capture_size must be >= 1");
  config.capture_sizes = std::move(sizes);
  config.max_capture_size = max_capture_size;
  // Full decode graphs exist for batches of up to max_num_seqs requests (vLLM); 0: no limit
  // besides the capture sizes.
  config.max_num_seqs = max_num_seqs > 0 ? max_num_seqs : 1 << 30;
  if (Status s = validate(config); !s.ok()) return Status::error("cudagraph capture sizes: " + s.message());
  std::unique_ptr<GraphPolicy> p = std::make_unique<DispatcherPolicy>(config);
  return p;
}

}  // namespace kv::gpuref
