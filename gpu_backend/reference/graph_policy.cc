#include "gpu_backend/reference/graph_policy.h"

#include <algorithm>

namespace kv::gpuref {

std::vector<std::int64_t> vllm_default_capture_sizes(std::int64_t max_capture_size) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t s : {1, 2, 4}) {
    if (s <= max_capture_size) sizes.push_back(s);
  }
  for (std::int64_t s = 8; s < std::min<std::int64_t>(max_capture_size + 1, 256); s += 8) sizes.push_back(s);
  for (std::int64_t s = 256; s <= max_capture_size; s += 16) sizes.push_back(s);
  return sizes;
}

namespace {

class DecodeOnlyPolicy final : public GraphPolicy {
 public:
  DecodeOnlyPolicy(std::vector<std::int64_t> sizes, bool enabled)
      : sizes_(std::move(sizes)), enabled_(enabled) {}
  GraphDecision dispatch(std::int64_t num_tokens, bool uniform_decode) const override {
    if (enabled_ && uniform_decode && num_tokens >= 1) {
      auto it = std::lower_bound(sizes_.begin(), sizes_.end(), num_tokens);
      if (it != sizes_.end()) return {GraphRuntimeMode::kFull, *it};
    }
    return {GraphRuntimeMode::kNone, num_tokens};
  }
  const std::vector<std::int64_t>& capture_sizes() const override { return sizes_; }

 private:
  std::vector<std::int64_t> sizes_;
  bool enabled_;
};

}  // namespace

StatusOr<std::unique_ptr<GraphPolicy>> make_graph_policy(const std::string& mode,
                                                         std::vector<std::int64_t> sizes,
                                                         std::int64_t max_capture_size) {
  bool enabled;
  if (mode == "NONE") {
    enabled = false;
  } else if (mode == "FULL_DECODE_ONLY" || mode == "FULL_AND_PIECEWISE" || mode == "FULL") {
    enabled = true;
  } else {
    return Status::error("cudagraph_mode '" + mode +
                         "' is not one of NONE, FULL_DECODE_ONLY, FULL_AND_PIECEWISE, FULL");
  }
  if (sizes.empty()) {
    if (max_capture_size < 1) return Status::error("max_cudagraph_capture_size must be >= 1");
    sizes = vllm_default_capture_sizes(max_capture_size);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.front() < 1) return Status::error("cudagraph capture sizes must be >= 1");
  std::unique_ptr<GraphPolicy> p = std::make_unique<DecodeOnlyPolicy>(std::move(sizes), enabled);
  return p;
}

}  // namespace kv::gpuref
