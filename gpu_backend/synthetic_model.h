// SyntheticModel: the seeded Llama-shaped transformer on the GPU. Owns the weights (one
// arena, generated on the device from the seed by the counter hash of
// reference/seeded_init.h, so nothing is read from files), the activation workspace sized for
// max_tokens, and the cuBLAS handle; runs one forward pass over the flattened batch that the
// caller put in the input buffers. All pointers are fixed at creation, so a forward pass can
// be captured into a CUDA graph and replayed with new inputs.
// Per layer (names are the profile's kernel names):
//   rmsnorm, qkv_proj, rotary, cache_write, attention, o_proj (+= into the fp32 residual),
//   rmsnorm, gate_up_proj, silu_mul, down_proj (+=); before the layers slot_mapping (once per
//   KV-cache group) and the embedding; after them the final rmsnorm and, for the logit rows,
//   lm_head. A layer writes and reads its KV tensor through its group's block table and slots,
//   with its group's attention window (gpu_backend/reference/kv_layout.h). A Mamba layer runs
//   mamba_scan (reference/mamba_state.h) over its group's state blocks, read from
//   query_start_loc() and state_blocks(g), in place of rotary, cache_write and attention.
// Internal to gpu_backend/. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "gpu_backend/gemm.h"
#include "gpu_backend/kernel_views.h"
#include "gpu_backend/reference/kv_layout.h"
#include "gpu_backend/reference/model_config.h"
#include "gpu_backend/reference/numerics.h"
#include "model/util/status.h"

namespace kv::gpu {

struct ModelLimits {
  std::int32_t max_tokens = 8192;       // per forward pass (max_num_batched_tokens, or graph size)
  std::int32_t max_logit_rows = 256;    // sequences whose last token gets logits (max_num_seqs)
  std::int32_t max_split_tokens = 512;  // split-K attention only for batches up to this size
  std::int32_t num_kv_groups = 1;       // slot mappings kept per pass (one per KV-cache group)
  bool compute_logits = true;
};

struct MemoryPlan {
  std::size_t weight_bytes = 0;
  std::size_t workspace_bytes = 0;  // activations, inputs, attention partials, cuBLAS
};
MemoryPlan plan_memory(const gpuref::ModelConfig& config, gpuref::DType dtype, const ModelLimits& limits);

// The paged KV cache: one K and one V buffer per KV tensor ([num_blocks, block_size, kv_heads,
// head_dim]; a dense model has one per layer), the device block table of each KV-cache group,
// and which group and tensor each layer uses.
struct KvCacheSet {
  std::vector<void*> k;
  std::vector<void*> v;
  std::int64_t num_blocks = 0;
  std::int32_t block_size = 16;
  std::vector<BlockTableView> tables;  // per group
  gpuref::KvLayout layout;
  std::int32_t state_floats = 0;  // a Mamba layer's state: kv_dim fp32 values at the start of a K page
  std::int64_t k_page_bytes = 0;  // one block of one K tensor: block_size * kv_dim * element bytes
  StatePagesView state_pages(std::size_t tensor) const { return StatePagesView{k[tensor], k_page_bytes, state_floats}; }
};

struct ForwardArgs {
  std::int32_t num_tokens = 0;      // rows of the input buffers to process (padding included)
  std::int32_t num_logit_rows = 0;  // rows of logit_rows() to send through the LM head
  std::int32_t num_splits = 1;      // attention split-K factor
  std::int32_t num_state_seqs = 0;  // Mamba layers: sequences in query_start_loc() and state_blocks()
};

// Times the first launch of each kernel name in a forward pass with CUDA events (profiling).
class KernelTimer {
 public:
  explicit KernelTimer(cudaStream_t stream) : stream_(stream) {}
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;
  void reset() { used_ = 0; }
  bool begin(const char* name);  // false when the name was already timed in this pass
  void end();
  // After the stream is synchronized: (name, nanoseconds) in launch order.
  Status read(std::vector<std::pair<std::string, std::int64_t>>* out);

 private:
  struct Entry {
    std::string name;
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
  };
  cudaStream_t stream_;
  std::vector<Entry> entries_;
  std::size_t used_ = 0;
};

class SyntheticModel {
 public:
  static StatusOr<std::unique_ptr<SyntheticModel>> create(const gpuref::ModelConfig& config, gpuref::DType dtype,
                                                          std::uint64_t seed, const ModelLimits& limits,
                                                          cudaStream_t stream);
  ~SyntheticModel();
  SyntheticModel(const SyntheticModel&) = delete;
  SyntheticModel& operator=(const SyntheticModel&) = delete;

  // Input buffers (device), each of max_tokens entries; the caller fills them before forward().
  std::int32_t* token_ids() const { return token_ids_; }
  std::int32_t* positions() const { return positions_; }
  std::int32_t* rows() const { return rows_; }
  std::int32_t* logit_rows() const { return logit_rows_; }  // token index of each logit row
  // Mamba layers: per sequence + 1 query start offsets (max_tokens + 1 entries), and per
  // KV-cache group the read blocks then the write blocks (max_tokens each) of each sequence.
  std::int32_t* query_start_loc() const { return query_start_loc_; }
  std::int32_t* state_blocks(std::size_t g) const {
    return state_blocks_ + 2 * g * static_cast<std::size_t>(limits_.max_tokens);
  }

  // One forward pass on the stream. timer (may be null) times the first launch of each kernel
  // name; *launches (may be null) is increased by the number of kernels launched.
  Status forward(const ForwardArgs& args, const KvCacheSet& kv, KernelTimer* timer, std::int64_t* launches);

  // Attention split-K for a batch (eager: bounded by the longest context; graphs pass 0).
  std::int32_t choose_splits(std::int32_t num_tokens, std::int32_t max_seq_len) const;

  const void* final_hidden() const { return x_; }  // [num_tokens, hidden] of the last pass
  const void* logits() const { return logits_; }   // [num_logit_rows, vocab]
  const MemoryPlan& memory() const { return memory_; }
  const gpuref::ModelConfig& config() const { return config_; }
  gpuref::DType dtype() const { return dtype_; }
  const ModelLimits& limits() const { return limits_; }

 private:
  SyntheticModel() = default;
  template <typename T>
  Status generate_weights(std::uint64_t seed);
  template <typename T>
  Status forward_t(const ForwardArgs& args, const KvCacheSet& kv, KernelTimer* timer, std::int64_t* launches);

  gpuref::ModelConfig config_;
  gpuref::DType dtype_ = gpuref::DType::kBf16;
  ModelLimits limits_;
  MemoryPlan memory_;
  cudaStream_t stream_ = nullptr;
  int num_sms_ = 132;
  Gemm gemm_;

  void* weight_arena_ = nullptr;
  void* workspace_arena_ = nullptr;
  struct Layer {
    void* attn_norm;
    void* qkv;
    void* o_proj;
    void* mlp_norm;
    void* gate_up;
    void* down;
  };
  void* embedding_ = nullptr;
  std::vector<Layer> layers_;
  void* final_norm_ = nullptr;
  void* lm_head_ = nullptr;
  float* inv_freq_ = nullptr;

  std::int32_t* token_ids_ = nullptr;
  std::int32_t* positions_ = nullptr;
  std::int32_t* rows_ = nullptr;
  std::int32_t* logit_rows_ = nullptr;
  std::int64_t* slots_ = nullptr;  // [num_kv_groups, max_tokens]
  std::int32_t* query_start_loc_ = nullptr;
  std::int32_t* state_blocks_ = nullptr;  // [num_kv_groups, 2, max_tokens]
  float* residual_ = nullptr;
  void* x_ = nullptr;
  void* qkv_ = nullptr;
  void* attn_ = nullptr;
  void* gate_up_ = nullptr;
  void* act_ = nullptr;
  void* gathered_ = nullptr;
  void* logits_ = nullptr;
  float* partial_out_ = nullptr;
  float* partial_max_ = nullptr;
  float* partial_sum_ = nullptr;
};

std::string cuda_error_string(cudaError_t e);

}  // namespace kv::gpu
