#include "gpu_backend/cuda_device.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include <cuda_runtime.h>

#include "gpu_backend/kernels.h"
#include "gpu_backend/reference/block_tables.h"
#include "gpu_backend/reference/flat_batch.h"
#include "gpu_backend/reference/graph_policy.h"
#include "gpu_backend/reference/kernel_profile.h"
#include "gpu_backend/reference/mamba_state.h"
#include "gpu_backend/reference/model_config.h"
#include "gpu_backend/reference/numerics.h"
#include "gpu_backend/synthetic_model.h"
#include "model/attention_window.h"
#include "model/block_table.h"

namespace kv::gpu {
namespace {

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

Status cuda_status(cudaError_t e, const std::string& what) {
  return e == cudaSuccess ? Status() : Status::error(what + ": " + cuda_error_string(e));
}

class CudaDevice final : public Device {
 public:
  static StatusOr<std::unique_ptr<Device>> create(const CudaDeviceOptions& options);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::string name() const override { return description_; }
  StepResult execute(const StepPlan& plan) override;
  std::vector<std::string> finish_run() override {
    const Status s = save_profile();
    return s.ok() ? std::vector<std::string>{} : std::vector<std::string>{s.message()};
  }

 private:
  // The KV cache's size: its blocks and the bytes of one block (K and V, every tensor).
  struct KvCacheSize {
    std::int64_t num_blocks = 0;
    std::size_t block_bytes = 0;
  };

  explicit CudaDevice(const CudaDeviceOptions& options) : options_(options) {}
  // The steps of init(), in order; each reports the first failure as a Status.
  Status init();
  Status check_options();  // model, KV layout, dtype, ranges and graph policy
  Status select_device(cudaDeviceProp* prop, std::size_t* free_bytes);
  StatusOr<ModelLimits> plan_limits();  // also sets max_tokens_, max_blocks_per_row_, max_updates_
  StatusOr<KvCacheSize> size_kv_cache(const ModelLimits& limits, std::size_t free0) const;
  Status create_model(const ModelLimits& limits);  // the stream, its events and the model
  Status allocate_kv_cache(const KvCacheSize& size);
  Status allocate_block_tables(std::int64_t num_blocks);
  Status open_profile();  // only with options_.profile_csv
  Status save_profile();  // the whole CSV, once
  void describe(const cudaDeviceProp& prop, std::int64_t num_blocks);
  Status run_step(const StepPlan& plan, StepResult* result);
  // Mamba groups: stages the batch's state blocks (padded to num_state_seqs sequences for a
  // graph) and the align moves; upload_states copies them and runs the moves' state copies.
  void stage_states(const StepPlan& plan, const gpuref::FlatBatch& batch, std::int32_t num_state_seqs);
  cudaError_t upload_states(std::int32_t num_state_seqs, std::int64_t* launches);
  Status launch_graph(const ForwardArgs& args);
  Status report_hidden_states(const StepPlan& plan, const gpuref::FlatBatch& batch);
  // Keys the attention of every layer reads for the batch's real tokens.
  std::int64_t kv_slots_read(const gpuref::FlatBatch& batch) const;
  Status write_profile(const gpuref::FlatBatch& batch);

  CudaDeviceOptions options_;
  gpuref::ModelConfig config_;
  gpuref::KvLayout layout_;
  gpuref::DType dtype_ = gpuref::DType::kBf16;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  std::unique_ptr<SyntheticModel> model_;
  KvCacheSet kv_;
  std::unique_ptr<gpuref::BlockTables> tables_;
  std::int32_t* table_dev_ = nullptr;    // [groups, max_num_seqs, max_blocks_per_row]
  std::int32_t* updates_dev_ = nullptr;  // (row, column, block) triples of one step
  std::int32_t* pinned_ = nullptr;       // host staging: 4 * max_tokens inputs, then the updates
  // Mamba groups only: host staging of query_start_loc (max_tokens + 1), each group's read and
  // write blocks (2 * max_tokens), then the align moves' (src, dst) pairs; their device copy.
  std::int32_t* state_pinned_ = nullptr;
  std::int32_t* moves_dev_ = nullptr;      // [2 * groups * max_tokens] (src, dst) pairs
  std::vector<std::int32_t> move_counts_;  // per group: pairs staged this step
  std::int64_t max_tokens_ = 0;
  std::int64_t max_updates_ = 0;
  int max_blocks_per_row_ = 0;
  std::unique_ptr<gpuref::GraphPolicy> graph_policy_;
  std::map<std::int64_t, cudaGraphExec_t> graphs_;  // key: padded number of tokens
  std::unique_ptr<KernelTimer> timer_;              // profiling only
  gpuref::KernelProfile profile_;                   // written whole by finish_run (or the destructor)
  bool profile_written_ = false;
  std::vector<gpuref::BlockTableUpdate> updates_;
};

StatusOr<std::unique_ptr<Device>> CudaDevice::create(const CudaDeviceOptions& options) {
  std::unique_ptr<CudaDevice> d(new CudaDevice(options));
  if (Status st = d->init(); !st.ok()) return st;
  std::unique_ptr<Device> base = std::move(d);
  return base;
}

Status CudaDevice::init() {
  if (Status st = check_options(); !st.ok()) return st;
  cudaDeviceProp prop{};
  std::size_t free0 = 0;
  if (Status st = select_device(&prop, &free0); !st.ok()) return st;
  StatusOr<ModelLimits> limits = plan_limits();
  if (!limits.ok()) return limits.status();
  StatusOr<KvCacheSize> size = size_kv_cache(*limits, free0);
  if (!size.ok()) return size.status();
  if (Status st = create_model(*limits); !st.ok()) return st;
  if (Status st = allocate_kv_cache(*size); !st.ok()) return st;
  if (Status st = allocate_block_tables(size->num_blocks); !st.ok()) return st;
  if (Status st = open_profile(); !st.ok()) return st;
  describe(prop, size->num_blocks);
  return Status();
}

Status CudaDevice::check_options() {
  const CudaDeviceOptions& o = options_;
  StatusOr<gpuref::ModelConfig> config = gpuref::model_preset(o.model);
  if (!config.ok()) return config.status();
  config_ = *config;
  StatusOr<gpuref::KvLayout> layout = gpuref::make_kv_layout(o.kv_cache_groups, config_.num_layers);
  if (!layout.ok()) return layout.status().with_context("model '" + o.model + "': ");
  layout_ = std::move(*layout);
  for (const KvCacheGroupSpec& g : o.kv_cache_groups) {
    if (g.spec.type == AttentionType::kMamba) continue;  // a Mamba group may cover more tokens per block
    if (g.spec.block_size != o.block_size) {
      return Status::error("the KV-cache groups have block size " + std::to_string(g.spec.block_size) +
                           ", the device " + std::to_string(o.block_size));
    }
    break;
  }
  if (!gpuref::parse_dtype(o.dtype, &dtype_) || dtype_ == gpuref::DType::kFp32) {
    return Status::error("dtype '" + o.dtype + "' is not bf16 or fp16");
  }
  if (layout_.has_mamba() && o.block_size * gpuref::dtype_bytes(dtype_) < 4) {
    return Status::error("a Mamba state (" + std::to_string(config_.kv_dim()) +
                         " fp32 values) does not fit a K page of block size " + std::to_string(o.block_size) +
                         "; use a block size of at least 2");
  }
  if (o.block_size < 1 || o.max_num_seqs < 1 || o.max_num_batched_tokens < 1 || o.max_model_len < 1 ||
      o.num_gpu_blocks < 0 || !(o.gpu_memory_utilization > 0.0 && o.gpu_memory_utilization <= 1.0)) {
    return Status::error(
        "CUDA device options: block_size, max_num_seqs, max_num_batched_tokens and max_model_len "
        "must be >= 1, num_gpu_blocks >= 0 and gpu_memory_utilization in (0, 1]");
  }
  const std::int64_t max_capture = o.max_cudagraph_capture_size > 0 ? o.max_cudagraph_capture_size
                                                                    : std::min<std::int64_t>(2LL * o.max_num_seqs, 512);
  StatusOr<std::unique_ptr<gpuref::GraphPolicy>> policy = gpuref::make_graph_policy(
      o.profile_csv.empty() ? o.cudagraph_mode : "NONE", o.cudagraph_capture_sizes, max_capture, o.max_num_seqs);
  if (!policy.ok()) return policy.status();
  graph_policy_ = std::move(policy.value());
  return Status();
}

Status CudaDevice::select_device(cudaDeviceProp* prop, std::size_t* free_bytes) {
  const CudaDeviceOptions& o = options_;
  std::string why;
  if (!cuda_device_available(&why)) return Status::error(why);
  if (Status st = cuda_status(cudaSetDevice(o.device_index), "selecting CUDA device " + std::to_string(o.device_index));
      !st.ok()) {
    return st;
  }
  if (Status st = cuda_status(cudaGetDeviceProperties(prop, o.device_index), "reading device properties"); !st.ok())
    return st;
  std::size_t total = 0;
  return cuda_status(cudaMemGetInfo(free_bytes, &total), "cudaMemGetInfo");
}

StatusOr<ModelLimits> CudaDevice::plan_limits() {
  const CudaDeviceOptions& o = options_;
  const std::int64_t graph_max = graph_policy_->capture_sizes().empty() ? 0 : graph_policy_->capture_sizes().back();
  max_tokens_ = std::max(o.max_num_batched_tokens, graph_max);
  if (max_tokens_ > (1 << 30)) return Status::error("max_num_batched_tokens is too large");
  ModelLimits limits;
  limits.max_tokens = static_cast<std::int32_t>(max_tokens_);
  limits.max_logit_rows = static_cast<std::int32_t>(std::max<std::int64_t>(o.max_num_seqs, graph_max));
  limits.max_split_tokens = static_cast<std::int32_t>(std::min<std::int64_t>(512, max_tokens_));
  limits.compute_logits = o.compute_logits;
  limits.num_kv_groups = layout_.num_groups();
  max_blocks_per_row_ = static_cast<int>((o.max_model_len + o.block_size - 1) / o.block_size);
  max_updates_ = static_cast<std::int64_t>(layout_.num_groups()) * o.max_num_seqs * max_blocks_per_row_;
  return limits;
}

StatusOr<CudaDevice::KvCacheSize> CudaDevice::size_kv_cache(const ModelLimits& limits, std::size_t free0) const {
  const CudaDeviceOptions& o = options_;
  const MemoryPlan mem = plan_memory(config_, dtype_, limits);
  const std::size_t tables_bytes = static_cast<std::size_t>(max_updates_) * 4 * 4;
  const std::size_t fixed = mem.weight_bytes + mem.workspace_bytes + tables_bytes;
  const std::size_t elem = static_cast<std::size_t>(gpuref::dtype_bytes(dtype_));
  const std::size_t block_bytes = 2 * static_cast<std::size_t>(layout_.num_tensors) *
                                  static_cast<std::size_t>(o.block_size) * static_cast<std::size_t>(config_.kv_dim()) *
                                  elem;
  std::int64_t num_blocks = o.num_gpu_blocks;
  if (num_blocks > 0) {
    const double need = static_cast<double>(num_blocks) * static_cast<double>(block_bytes);
    if (need + static_cast<double>(fixed) > static_cast<double>(free0)) {
      return Status::error("KV cache of " + std::to_string(num_blocks) + " blocks needs " + gib(need) + " (" +
                           std::to_string(block_bytes) + " bytes per block) but only " +
                           gib(static_cast<double>(free0)) + " of GPU memory is free, of which weights take " +
                           gib(static_cast<double>(mem.weight_bytes)) + " and the workspace " +
                           gib(static_cast<double>(fixed - mem.weight_bytes)));
    }
  } else {
    const double budget = static_cast<double>(free0) * o.gpu_memory_utilization - static_cast<double>(fixed);
    num_blocks = budget > 0 ? static_cast<std::int64_t>(budget / static_cast<double>(block_bytes)) : 0;
    if (num_blocks < 1) {
      return Status::error("no room for a KV cache: " + gib(static_cast<double>(free0)) + " free * " +
                           std::to_string(o.gpu_memory_utilization) + " is less than weights " +
                           gib(static_cast<double>(mem.weight_bytes)) + " + workspace " +
                           gib(static_cast<double>(fixed - mem.weight_bytes)) + " + one block of " +
                           std::to_string(block_bytes) + " bytes");
    }
  }
  return KvCacheSize{num_blocks, block_bytes};
}

Status CudaDevice::create_model(const ModelLimits& limits) {
  if (Status st = cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
      !st.ok()) {
    return st;
  }
  if (Status st = cuda_status(cudaEventCreate(&start_), "creating an event"); !st.ok()) return st;
  if (Status st = cuda_status(cudaEventCreate(&stop_), "creating an event"); !st.ok()) return st;
  StatusOr<std::unique_ptr<SyntheticModel>> model =
      SyntheticModel::create(config_, dtype_, options_.seed, limits, stream_);
  if (!model.ok()) return model.status();
  model_ = std::move(model.value());
  return Status();
}

Status CudaDevice::allocate_kv_cache(const KvCacheSize& size) {
  kv_.num_blocks = size.num_blocks;
  kv_.block_size = options_.block_size;
  kv_.layout = layout_;
  kv_.state_floats = config_.kv_dim();
  kv_.k_page_bytes = static_cast<std::int64_t>(options_.block_size) * config_.kv_dim() * gpuref::dtype_bytes(dtype_);
  const std::size_t layer_bytes =
      size.block_bytes / 2 / static_cast<std::size_t>(layout_.num_tensors) * static_cast<std::size_t>(size.num_blocks);
  for (int l = 0; l < layout_.num_tensors; ++l) {
    void* k = nullptr;
    void* v = nullptr;
    cudaError_t e = cudaMalloc(&k, layer_bytes);
    if (e == cudaSuccess) kv_.k.push_back(k);
    if (e == cudaSuccess) e = cudaMalloc(&v, layer_bytes);
    if (e == cudaSuccess) kv_.v.push_back(v);
    if (e != cudaSuccess) {
      return Status::error("allocating the KV cache tensor " + std::to_string(l) + " (2 x " +
                           gib(static_cast<double>(layer_bytes)) + ") failed: " + cuda_error_string(e));
    }
  }
  return Status();
}

Status CudaDevice::allocate_block_tables(std::int64_t num_blocks) {
  const CudaDeviceOptions& o = options_;
  const std::size_t table_entries = static_cast<std::size_t>(max_updates_);
  if (Status st = cuda_status(cudaMalloc(&table_dev_, table_entries * 4), "allocating block tables"); !st.ok())
    return st;
  if (Status st = cuda_status(cudaMemset(table_dev_, 0, table_entries * 4), "clearing block tables"); !st.ok())
    return st;
  if (Status st = cuda_status(cudaMalloc(&updates_dev_, table_entries * 12), "allocating block-table updates");
      !st.ok()) {
    return st;
  }
  const std::size_t pinned_ints = 4 * static_cast<std::size_t>(max_tokens_) + 3 * table_entries;
  if (Status st = cuda_status(cudaMallocHost(&pinned_, pinned_ints * 4), "allocating pinned staging memory");
      !st.ok()) {
    return st;
  }
  tables_ = std::make_unique<gpuref::BlockTables>(o.max_num_seqs, max_blocks_per_row_, num_blocks,
                                                  layout_.group_windows, layout_.group_state_block_sizes);
  if (layout_.has_mamba()) {
    const std::size_t per_group = 2 * static_cast<std::size_t>(max_tokens_);
    const std::size_t groups = static_cast<std::size_t>(layout_.num_groups());
    const std::size_t staged = static_cast<std::size_t>(max_tokens_) + 1 + 2 * groups * per_group;
    if (Status st = cuda_status(cudaMallocHost(&state_pinned_, staged * 4), "allocating Mamba state staging");
        !st.ok()) {
      return st;
    }
    if (Status st = cuda_status(cudaMalloc(&moves_dev_, groups * per_group * 4), "allocating Mamba state moves");
        !st.ok()) {
      return st;
    }
  }
  for (int g = 0; g < layout_.num_groups(); ++g) {  // group g's rows start at g * max_num_seqs
    const std::int32_t null_block = layout_.plain() ? -1 : static_cast<std::int32_t>(kNullBlock);
    kv_.tables.push_back(
        BlockTableView{table_dev_ + static_cast<std::ptrdiff_t>(g) * o.max_num_seqs * max_blocks_per_row_,
                       max_blocks_per_row_, o.block_size, null_block});
  }
  return Status();
}

Status CudaDevice::open_profile() {
  const CudaDeviceOptions& o = options_;
  if (o.profile_csv.empty()) return Status();
  const bool fresh = !std::ifstream(o.profile_csv).good() || std::ifstream(o.profile_csv).peek() == EOF;
  if (!fresh) {
    return Status::error(o.profile_csv +
                         ": the profile CSV already exists and is not empty; remove it or choose "
                         "another path (a profile is written whole, one row per kernel shape)");
  }
  if (!std::ofstream(o.profile_csv)) return Status::error(o.profile_csv + ": cannot open the profile CSV for writing");
  timer_ = std::make_unique<KernelTimer>(stream_);
  return Status();
}

void CudaDevice::describe(const cudaDeviceProp& prop, std::int64_t num_blocks) {
  const CudaDeviceOptions& o = options_;
  description_ = std::string("cuda:") + prop.name + " model=" + config_.name + " dtype=" + gpuref::to_string(dtype_) +
                 " blocks=" + std::to_string(num_blocks) + " block_size=" + std::to_string(o.block_size) +
                 " cudagraph=" + (o.profile_csv.empty() ? o.cudagraph_mode : std::string("NONE (profiling)")) +
                 (layout_.plain() ? std::string() : " kv_groups=" + std::to_string(layout_.num_groups()));
}

CudaDevice::~CudaDevice() {
  (void)save_profile();  // a run that never reached finish_run still leaves its profile
  if (stream_) cudaStreamSynchronize(stream_);
  for (auto& [size, exec] : graphs_) cudaGraphExecDestroy(exec);
  timer_.reset();
  model_.reset();
  for (void* p : kv_.k) cudaFree(p);
  for (void* p : kv_.v) cudaFree(p);
  if (table_dev_) cudaFree(table_dev_);
  if (updates_dev_) cudaFree(updates_dev_);
  if (pinned_) cudaFreeHost(pinned_);
  if (state_pinned_) cudaFreeHost(state_pinned_);
  if (moves_dev_) cudaFree(moves_dev_);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (stream_) cudaStreamDestroy(stream_);
}

StepResult CudaDevice::execute(const StepPlan& plan) {
  StepResult result;
  for (const ScheduledRequest& r : plan.requests) {
    if (r.samples) result.sampled.emplace_back(r.id, r.next_token);
  }
  if (Status st = run_step(plan, &result); !st.ok()) {
    result.violations.push_back("step " + std::to_string(plan.step) + ": " + st.message());
  }
  const std::int64_t measured = std::max<std::int64_t>(result.measured_ns, 0);
  result.duration_ns = options_.duration_ns ? options_.duration_ns(plan, result.measured_ns) : measured;
  return result;
}

Status CudaDevice::run_step(const StepPlan& plan, StepResult* result) {
  if (plan.block_size != options_.block_size) {
    return Status::error("plan block_size " + std::to_string(plan.block_size) + " differs from the device's " +
                         std::to_string(options_.block_size));
  }
  std::int64_t scheduled = 0;
  for (const ScheduledRequest& r : plan.requests) scheduled += static_cast<std::int64_t>(r.token_ids.size());
  if (scheduled > options_.max_num_batched_tokens) {
    return Status::error(std::to_string(scheduled) + " tokens scheduled, more than max_num_batched_tokens " +
                         std::to_string(options_.max_num_batched_tokens));
  }
  updates_.clear();
  if (Status st = tables_->apply(plan, &updates_); !st.ok()) return st;
  StatusOr<gpuref::FlatBatch> flat = gpuref::build_flat_batch(plan, *tables_, config_.vocab);
  if (!flat.ok()) return flat.status();
  gpuref::FlatBatch& batch = flat.value();
  const gpuref::GraphDecision decision = graph_policy_->dispatch(batch.num_tokens(), batch.uniform_decode());
  const bool use_graph = decision.mode == gpuref::GraphRuntimeMode::kFull && batch.num_tokens() > 0;
  if (use_graph) gpuref::pad_flat_batch(&batch, decision.padded_tokens);
  const auto n = static_cast<std::int32_t>(batch.num_tokens());

  ForwardArgs args;
  args.num_tokens = n;
  std::int32_t* host_tokens = pinned_;
  std::int32_t* host_positions = pinned_ + max_tokens_;
  std::int32_t* host_rows = pinned_ + 2 * max_tokens_;
  std::int32_t* host_logit_rows = pinned_ + 3 * max_tokens_;
  std::int32_t* host_updates = pinned_ + 4 * max_tokens_;
  std::copy(batch.token_ids.begin(), batch.token_ids.end(), host_tokens);
  std::copy(batch.positions.begin(), batch.positions.end(), host_positions);
  std::copy(batch.rows.begin(), batch.rows.end(), host_rows);
  if (options_.compute_logits) {
    if (use_graph) {  // uniform decode: token i is sequence i; padding rows point at themselves
      for (std::int32_t i = 0; i < n; ++i) host_logit_rows[i] = i;
      args.num_logit_rows = n;
    } else {
      std::copy(batch.last_token.begin(), batch.last_token.end(), host_logit_rows);
      args.num_logit_rows = static_cast<std::int32_t>(batch.last_token.size());
    }
  }
  args.num_splits = model_->choose_splits(n, use_graph ? 0 : batch.max_seq_len);
  if (layout_.has_mamba()) {
    args.num_state_seqs = use_graph ? n : static_cast<std::int32_t>(batch.num_seqs());
    stage_states(plan, batch, args.num_state_seqs);
  }
  for (std::size_t i = 0; i < updates_.size(); ++i) {
    host_updates[3 * i] = updates_[i].group * options_.max_num_seqs + updates_[i].row;
    host_updates[3 * i + 1] = updates_[i].column;
    host_updates[3 * i + 2] = updates_[i].block;
  }
  const auto up = static_cast<std::int32_t>(updates_.size());

  std::int64_t launches = 0;
  if (Status st = cuda_status(cudaEventRecord(start_, stream_), "recording the start event"); !st.ok()) return st;
  const std::size_t bytes = static_cast<std::size_t>(n) * 4;
  cudaError_t e = cudaSuccess;
  if (n > 0) {
    e = cudaMemcpyAsync(model_->token_ids(), host_tokens, bytes, cudaMemcpyHostToDevice, stream_);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(model_->positions(), host_positions, bytes, cudaMemcpyHostToDevice, stream_);
    if (e == cudaSuccess) e = cudaMemcpyAsync(model_->rows(), host_rows, bytes, cudaMemcpyHostToDevice, stream_);
    if (e == cudaSuccess && args.num_logit_rows > 0) {
      e = cudaMemcpyAsync(model_->logit_rows(), host_logit_rows, static_cast<std::size_t>(args.num_logit_rows) * 4,
                          cudaMemcpyHostToDevice, stream_);
    }
  }
  if (e == cudaSuccess && up > 0) {
    e = cudaMemcpyAsync(updates_dev_, host_updates, static_cast<std::size_t>(up) * 12, cudaMemcpyHostToDevice, stream_);
    if (e == cudaSuccess) {
      e = launch_block_table_update(BlockTableUpdateView{table_dev_, max_blocks_per_row_, updates_dev_, up}, stream_);
      ++launches;
    }
  }
  if (e == cudaSuccess && layout_.has_mamba()) e = upload_states(args.num_state_seqs, &launches);
  if (Status st = cuda_status(e, "uploading the step's inputs"); !st.ok()) return st;
  if (n > 0) {
    if (use_graph) {
      if (Status st = launch_graph(args); !st.ok()) return st;
      launches += 1;
    } else {
      if (timer_) timer_->reset();
      if (Status st = model_->forward(args, kv_, timer_.get(), &launches); !st.ok()) return st;
    }
  }
  if (Status st = cuda_status(cudaEventRecord(stop_, stream_), "recording the stop event"); !st.ok()) return st;
  if (Status st = cuda_status(cudaEventSynchronize(stop_), "running the step"); !st.ok()) return st;
  float ms = 0.0f;
  if (Status st = cuda_status(cudaEventElapsedTime(&ms, start_, stop_), "timing the step"); !st.ok()) return st;
  result->measured_ns = static_cast<std::int64_t>(static_cast<double>(ms) * 1e6 + 0.5);
  result->counters.tokens_computed = batch.num_real_tokens;
  result->counters.prompt_tokens_computed = batch.prompt_tokens;
  result->counters.kv_slots_read = kv_slots_read(batch);
  result->counters.kernels = launches;
  if (timer_ && n > 0) {
    if (Status st = write_profile(batch); !st.ok()) return st;
  }
  if (options_.on_hidden_state && batch.num_real_tokens > 0) return report_hidden_states(plan, batch);
  return Status();
}

void CudaDevice::stage_states(const StepPlan& plan, const gpuref::FlatBatch& batch, std::int32_t num_state_seqs) {
  const gpuref::MambaStatePlan states = gpuref::plan_mamba_states(plan, *tables_, layout_);
  const auto real = static_cast<std::int32_t>(batch.num_seqs());
  std::int32_t* qsl = state_pinned_;
  std::copy(batch.query_start_loc.begin(), batch.query_start_loc.end(), qsl);
  std::fill(qsl + real + 1, qsl + num_state_seqs + 1, static_cast<std::int32_t>(batch.num_real_tokens));
  move_counts_.assign(static_cast<std::size_t>(layout_.num_groups()), 0);
  for (int g = 0; g < layout_.num_groups(); ++g) {
    if (!layout_.is_state_group(g)) continue;
    const auto gi = static_cast<std::size_t>(g);
    std::int32_t* reads = state_pinned_ + max_tokens_ + 1 + 2 * gi * static_cast<std::size_t>(max_tokens_);
    std::int32_t* writes = reads + max_tokens_;
    for (std::int32_t i = 0; i < num_state_seqs; ++i) {  // padding sequences: no state
      const bool has = i < real;
      reads[i] = has ? states.steps[gi][static_cast<std::size_t>(i)].read_block : -1;
      writes[i] = has ? states.steps[gi][static_cast<std::size_t>(i)].write_block : -1;
    }
    std::int32_t* moves = state_pinned_ + max_tokens_ + 1 +
                          2 * static_cast<std::size_t>(layout_.num_groups()) * static_cast<std::size_t>(max_tokens_) +
                          2 * gi * static_cast<std::size_t>(max_tokens_);
    for (const gpuref::StateCopy& c : states.copies[gi]) {
      moves[2 * move_counts_[gi]] = c.src;
      moves[2 * move_counts_[gi] + 1] = c.dst;
      ++move_counts_[gi];
    }
  }
}

cudaError_t CudaDevice::upload_states(std::int32_t num_state_seqs, std::int64_t* launches) {
  const std::size_t n = static_cast<std::size_t>(num_state_seqs);
  const std::size_t stride = 2 * static_cast<std::size_t>(max_tokens_);
  const std::size_t groups = static_cast<std::size_t>(layout_.num_groups());
  cudaError_t e =
      cudaMemcpyAsync(model_->query_start_loc(), state_pinned_, (n + 1) * 4, cudaMemcpyHostToDevice, stream_);
  for (std::size_t g = 0; g < groups && e == cudaSuccess; ++g) {
    if (!layout_.is_state_group(static_cast<int>(g))) continue;
    const std::int32_t* reads = state_pinned_ + max_tokens_ + 1 + g * stride;
    e = cudaMemcpyAsync(model_->state_blocks(g), reads, n * 4, cudaMemcpyHostToDevice, stream_);
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(model_->state_blocks(g) + max_tokens_, reads + max_tokens_, n * 4, cudaMemcpyHostToDevice,
                          stream_);
    }
    const std::int32_t count = move_counts_[g];
    if (e != cudaSuccess || count == 0) continue;
    std::int32_t* moves_dev = moves_dev_ + g * stride;
    e = cudaMemcpyAsync(moves_dev, state_pinned_ + max_tokens_ + 1 + groups * stride + g * stride,
                        static_cast<std::size_t>(count) * 8, cudaMemcpyHostToDevice, stream_);
    for (int l = 0; l < config_.num_layers && e == cudaSuccess; ++l) {  // the move, in every layer of the group
      if (layout_.layer_group[static_cast<std::size_t>(l)] != static_cast<int>(g)) continue;
      const auto t = static_cast<std::size_t>(layout_.layer_tensor[static_cast<std::size_t>(l)]);
      e = launch_state_copy(StateCopyView{kv_.state_pages(t), moves_dev, count}, stream_);
      ++*launches;
    }
  }
  return e;
}

Status CudaDevice::launch_graph(const ForwardArgs& args) {
  auto it = graphs_.find(args.num_tokens);
  if (it == graphs_.end()) {
    // Warm-up pass first, as vLLM does before capturing: loads every kernel and lets cuBLAS
    // settle outside the capture. It computes this step's batch (the replay below writes the
    // same K/V again), so the first step of each size is timed with two passes. A Mamba layer
    // updates its state in place (an align move's new block, mode none's one block), so a
    // second pass would apply the step's tokens twice: with Mamba groups the warm-up pass is
    // the step and the fresh graph is only captured, not replayed.
    if (Status st = model_->forward(args, kv_, nullptr, nullptr); !st.ok()) return st;
    cudaGraph_t graph = nullptr;
    if (Status st =
            cuda_status(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "beginning graph capture");
        !st.ok()) {
      return st;
    }
    Status forward = model_->forward(args, kv_, nullptr, nullptr);
    const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
    if (!forward.ok()) {
      if (graph) cudaGraphDestroy(graph);
      return Status::error("capturing the CUDA graph of " + std::to_string(args.num_tokens) +
                           " tokens: " + forward.message());
    }
    if (Status st = cuda_status(end, "ending graph capture"); !st.ok()) return st;
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (Status st = cuda_status(inst, "instantiating the CUDA graph"); !st.ok()) return st;
    it = graphs_.emplace(args.num_tokens, exec).first;
    if (layout_.has_mamba()) return Status();
  }
  return cuda_status(cudaGraphLaunch(it->second, stream_), "launching the CUDA graph");
}

std::int64_t CudaDevice::kv_slots_read(const gpuref::FlatBatch& batch) const {
  std::int64_t total = 0;
  for (int l = 0; l < config_.num_layers; ++l) {
    if (layout_.is_mamba_layer(l)) continue;  // reads one state per sequence, no key slots
    const std::int64_t window = layout_.layer_window(l);
    for (std::int64_t i = 0; i < batch.num_real_tokens; ++i) {
      const std::int64_t p = batch.positions[static_cast<std::size_t>(i)];
      total += p + 1 - attention_begin(window, p);
    }
  }
  return total;
}

Status CudaDevice::report_hidden_states(const StepPlan& plan, const gpuref::FlatBatch& batch) {
  const std::size_t h = static_cast<std::size_t>(config_.hidden);
  const std::size_t count = static_cast<std::size_t>(batch.num_real_tokens) * h;
  std::vector<std::uint16_t> raw(count);
  if (Status st = cuda_status(cudaMemcpy(raw.data(), model_->final_hidden(), count * 2, cudaMemcpyDeviceToHost),
                              "reading hidden states");
      !st.ok()) {
    return st;
  }
  std::size_t t = 0;
  std::vector<float> hidden(h);
  for (const ScheduledRequest& r : plan.requests) {
    for (std::size_t j = 0; j < r.token_ids.size(); ++j, ++t) {
      for (std::size_t i = 0; i < h; ++i) {
        const std::uint16_t bits = raw[t * h + i];
        hidden[i] = dtype_ == gpuref::DType::kBf16 ? gpuref::bf16_from_bits(bits) : gpuref::fp16_from_bits(bits);
      }
      options_.on_hidden_state(r.id, r.num_computed_tokens + static_cast<std::int64_t>(j), hidden);
    }
  }
  return Status();
}

Status CudaDevice::write_profile(const gpuref::FlatBatch& batch) {
  std::vector<std::pair<std::string, std::int64_t>> times;
  if (Status st = timer_->read(&times); !st.ok()) return st;
  for (const auto& [kernel, ns] : times) {
    profile_.add(kernel, batch.num_real_tokens, batch.num_seqs(), batch.context_tokens, ns);
  }
  return Status();
}

Status CudaDevice::save_profile() {
  if (options_.profile_csv.empty() || profile_written_) return Status();
  profile_written_ = true;
  std::ofstream out(options_.profile_csv, std::ios::trunc);
  out << profile_.csv();
  out.close();
  if (!out) return Status::error(options_.profile_csv + ": writing the profile CSV failed");
  return Status();
}

}  // namespace

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why) *why = std::string("no CUDA device: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device: the driver reports 0 devices";
    return false;
  }
  return true;
}

StatusOr<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& options) {
  return CudaDevice::create(options);
}

}  // namespace kv::gpu
