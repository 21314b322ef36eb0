#include "model/cuda_graph_dispatcher.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "model/util/check.h"

namespace kv {

const char* to_string(CudaGraphMode mode) {
  switch (mode) {
    case CudaGraphMode::kNone:
      return "NONE";
    case CudaGraphMode::kPiecewise:
      return "PIECEWISE";
    case CudaGraphMode::kFull:
      return "FULL";
    case CudaGraphMode::kFullDecodeOnly:
      return "FULL_DECODE_ONLY";
    case CudaGraphMode::kFullAndPiecewise:
      return "FULL_AND_PIECEWISE";
  }
  return "?";
}

std::optional<CudaGraphMode> parse_cuda_graph_mode(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (CudaGraphMode m : {CudaGraphMode::kNone, CudaGraphMode::kPiecewise, CudaGraphMode::kFull,
                          CudaGraphMode::kFullDecodeOnly, CudaGraphMode::kFullAndPiecewise}) {
    if (upper == to_string(m)) return m;
  }
  return std::nullopt;
}

CudaGraphMode decode_mode(CudaGraphMode mode) {
  switch (mode) {
    case CudaGraphMode::kNone:
      return CudaGraphMode::kNone;
    case CudaGraphMode::kPiecewise:
      return CudaGraphMode::kPiecewise;
    case CudaGraphMode::kFull:
    case CudaGraphMode::kFullDecodeOnly:
    case CudaGraphMode::kFullAndPiecewise:
      return CudaGraphMode::kFull;
  }
  return CudaGraphMode::kNone;
}

CudaGraphMode mixed_mode(CudaGraphMode mode) {
  switch (mode) {
    case CudaGraphMode::kNone:
    case CudaGraphMode::kFullDecodeOnly:
      return CudaGraphMode::kNone;
    case CudaGraphMode::kPiecewise:
    case CudaGraphMode::kFullAndPiecewise:
      return CudaGraphMode::kPiecewise;
    case CudaGraphMode::kFull:
      return CudaGraphMode::kFull;
  }
  return CudaGraphMode::kNone;
}

std::vector<std::int64_t> default_capture_sizes(std::int64_t max_capture_size) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t s : {1, 2, 4}) {
    if (s <= max_capture_size) sizes.push_back(s);
  }
  for (std::int64_t s = 8; s < std::min<std::int64_t>(max_capture_size + 1, 256); s += 8) {
    sizes.push_back(s);
  }
  for (std::int64_t s = 256; s <= max_capture_size; s += 16) sizes.push_back(s);
  return sizes;
}

Status validate(const CudaGraphConfig& config) {
  if (config.max_num_seqs < 1) return Status::error("max_num_seqs must be >= 1");
  if (config.max_num_batched_tokens < 0) {
    return Status::error("max_num_batched_tokens must be >= 0 (0: no limit)");
  }
  if (config.max_capture_size < 0) {
    return Status::error("max_capture_size must be >= 0 (0: vLLM's default)");
  }
  if (config.uniform_decode_query_len < 1) {
    return Status::error("uniform_decode_query_len must be >= 1");
  }
  for (std::size_t i = 0; i < config.capture_sizes.size(); ++i) {
    if (config.capture_sizes[i] < 1) {
      return Status::error("cuda graph capture size #" + std::to_string(i + 1) + " is " +
                           std::to_string(config.capture_sizes[i]) + ", must be >= 1");
    }
  }
  return Status();
}

CudaGraphDispatcher::CudaGraphDispatcher(const CudaGraphConfig& config) : config_(config) {
  Status status = validate(config_);
  KV_CHECK(status.ok(), status.message());
  if (config_.mode == CudaGraphMode::kNone) return;  // eager: nothing is captured

  if (!config_.capture_sizes.empty()) {
    capture_sizes_ = config_.capture_sizes;
    std::sort(capture_sizes_.begin(), capture_sizes_.end());
    capture_sizes_.erase(std::unique(capture_sizes_.begin(), capture_sizes_.end()), capture_sizes_.end());
  } else {
    std::int64_t max_size = config_.max_capture_size > 0
                                ? config_.max_capture_size
                                : std::min<std::int64_t>(2 * std::int64_t{config_.max_num_seqs}, 512);
    if (config_.max_num_batched_tokens > 0) {
      max_size = std::min(max_size, config_.max_num_batched_tokens);
    }
    capture_sizes_ = default_capture_sizes(max_size);
  }

  CudaGraphMode mixed = mixed_mode(config_.mode);
  if (mixed == CudaGraphMode::kFull) full_mixed_sizes_ = capture_sizes_;
  if (mixed == CudaGraphMode::kPiecewise) piecewise_sizes_ = capture_sizes_;
  // A separate decode routine exists when decode and mixed batches use different modes.
  bool separate_decode = decode_mode(config_.mode) == CudaGraphMode::kFull && mixed != CudaGraphMode::kFull;
  if (separate_decode) {
    std::int64_t q = config_.uniform_decode_query_len;
    std::int64_t max_decode_tokens = q * config_.max_num_seqs;
    for (std::int64_t s : capture_sizes_) {
      if (s >= q && s <= max_decode_tokens) full_decode_sizes_.push_back(s);
    }
  }
}

bool CudaGraphDispatcher::contains(const std::vector<std::int64_t>& sorted, std::int64_t value) {
  return std::binary_search(sorted.begin(), sorted.end(), value);
}

std::int64_t CudaGraphDispatcher::padded_size(std::int64_t num_tokens) const {
  auto it = std::lower_bound(capture_sizes_.begin(), capture_sizes_.end(), num_tokens);
  return it == capture_sizes_.end() ? num_tokens : *it;
}

std::vector<BatchDescriptor> CudaGraphDispatcher::keys(CudaGraphMode runtime_mode) const {
  std::vector<BatchDescriptor> out;
  if (runtime_mode == CudaGraphMode::kFull) {
    for (std::int64_t s : full_mixed_sizes_) out.push_back({s, false});
    for (std::int64_t s : full_decode_sizes_) out.push_back({s, true});
  } else if (runtime_mode == CudaGraphMode::kPiecewise) {
    for (std::int64_t s : piecewise_sizes_) out.push_back({s, false});
  }
  return out;
}

DispatchResult CudaGraphDispatcher::dispatch(std::int64_t num_tokens, bool uniform_decode,
                                             bool uses_cascade_attention) const {
  DispatchResult eager{CudaGraphMode::kNone, {num_tokens, uniform_decode}};
  if (num_tokens < 1 || num_tokens > max_capture_size()) return eager;
  std::int64_t padded = padded_size(num_tokens);
  if (!uses_cascade_attention) {
    if (uniform_decode && contains(full_decode_sizes_, padded)) {
      return {CudaGraphMode::kFull, {padded, true}};
    }
    if (contains(full_mixed_sizes_, padded)) return {CudaGraphMode::kFull, {padded, false}};
  }
  if (contains(piecewise_sizes_, padded)) return {CudaGraphMode::kPiecewise, {padded, false}};
  return eager;
}

}  // namespace kv
