#include "gpu_backend/synthetic_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpu_backend/kernels.h"

namespace kv::gpu {
namespace {

using gpuref::DType;
using gpuref::ModelConfig;
using gpuref::TensorKind;

constexpr std::size_t kCublasWorkspaceBytes = 32u << 20;

// Offsets inside one allocation, each 256-byte aligned.
struct Arena {
  std::size_t size = 0;
  std::size_t take(std::size_t bytes) {
    const std::size_t at = size;
    size += (bytes + 255) / 256 * 256;
    return at;
  }
};

struct WeightLayout {
  std::size_t embedding = 0, final_norm = 0, lm_head = 0, inv_freq = 0;
  std::vector<std::array<std::size_t, 6>> layers;  // attn_norm, qkv, o_proj, mlp_norm, gate_up, down
  std::size_t total = 0;
};

WeightLayout weight_layout(const ModelConfig& c, std::size_t elem) {
  WeightLayout w;
  Arena a;
  const auto h = static_cast<std::size_t>(c.hidden);
  w.embedding = a.take(static_cast<std::size_t>(c.vocab) * h * elem);
  for (int l = 0; l < c.num_layers; ++l) {
    w.layers.push_back({a.take(h * elem), a.take(static_cast<std::size_t>(c.qkv_dim()) * h * elem),
                        a.take(h * static_cast<std::size_t>(c.q_dim()) * elem), a.take(h * elem),
                        a.take(2 * static_cast<std::size_t>(c.intermediate) * h * elem),
                        a.take(h * static_cast<std::size_t>(c.intermediate) * elem)});
  }
  w.final_norm = a.take(h * elem);
  w.lm_head = a.take(static_cast<std::size_t>(c.vocab) * h * elem);
  w.inv_freq = a.take(static_cast<std::size_t>(c.head_dim / 2) * sizeof(float));
  w.total = a.size;
  return w;
}

struct WorkspaceLayout {
  std::size_t token_ids, positions, rows, logit_rows, slots, query_start_loc, state_blocks, residual, x, qkv, attn,
      gate_up, act, gathered, logits, partial_out, partial_max, partial_sum;
  std::size_t total;
};

WorkspaceLayout workspace_layout(const ModelConfig& c, std::size_t elem, const ModelLimits& lim) {
  WorkspaceLayout w{};
  Arena a;
  const auto n = static_cast<std::size_t>(lim.max_tokens);
  const auto s = static_cast<std::size_t>(lim.max_logit_rows);
  const auto p = static_cast<std::size_t>(std::min(lim.max_split_tokens, lim.max_tokens));
  const auto h = static_cast<std::size_t>(c.hidden);
  const auto heads = static_cast<std::size_t>(c.num_heads);
  w.token_ids = a.take(n * 4);
  w.positions = a.take(n * 4);
  w.rows = a.take(n * 4);
  w.logit_rows = a.take(n * 4);
  w.slots = a.take(n * 8 * static_cast<std::size_t>(std::max(1, lim.num_kv_groups)));
  w.query_start_loc = a.take((n + 1) * 4);
  w.state_blocks = a.take(2 * n * 4 * static_cast<std::size_t>(std::max(1, lim.num_kv_groups)));
  w.residual = a.take(n * h * 4);
  w.x = a.take(n * h * elem);
  w.qkv = a.take(n * static_cast<std::size_t>(c.qkv_dim()) * elem);
  w.attn = a.take(n * static_cast<std::size_t>(c.q_dim()) * elem);
  w.gate_up = a.take(n * 2 * static_cast<std::size_t>(c.intermediate) * elem);
  w.act = a.take(n * static_cast<std::size_t>(c.intermediate) * elem);
  w.gathered = a.take(lim.compute_logits ? s * h * elem : 0);
  w.logits = a.take(lim.compute_logits ? s * static_cast<std::size_t>(c.vocab) * elem : 0);
  w.partial_out = a.take(p * heads * kMaxAttentionSplits * static_cast<std::size_t>(c.head_dim) * 4);
  w.partial_max = a.take(p * heads * kMaxAttentionSplits * 4);
  w.partial_sum = a.take(p * heads * kMaxAttentionSplits * 4);
  w.total = a.size;
  return w;
}

template <typename P>
P* at(void* base, std::size_t offset) {
  return reinterpret_cast<P*>(static_cast<char*>(base) + offset);
}

bool ok(cudaError_t e) { return e == cudaSuccess; }
bool ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }
std::string message(cudaError_t e) { return cuda_error_string(e); }
std::string message(cublasStatus_t s) { return cublas_error_string(s); }

}  // namespace

std::string cuda_error_string(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

MemoryPlan plan_memory(const ModelConfig& config, DType dtype, const ModelLimits& limits) {
  const auto elem = static_cast<std::size_t>(gpuref::dtype_bytes(dtype));
  return {weight_layout(config, elem).total, workspace_layout(config, elem, limits).total + kCublasWorkspaceBytes};
}

KernelTimer::~KernelTimer() {
  for (Entry& e : entries_) {
    if (e.start) cudaEventDestroy(e.start);
    if (e.stop) cudaEventDestroy(e.stop);
  }
}

bool KernelTimer::begin(const char* name) {
  for (std::size_t i = 0; i < used_; ++i) {
    if (entries_[i].name == name) return false;
  }
  if (used_ == entries_.size()) {
    Entry e;
    if (cudaEventCreate(&e.start) != cudaSuccess || cudaEventCreate(&e.stop) != cudaSuccess) {
      if (e.start) cudaEventDestroy(e.start);
      return false;
    }
    entries_.push_back(e);
  }
  Entry& e = entries_[used_++];
  e.name = name;
  cudaEventRecord(e.start, stream_);
  return true;
}

void KernelTimer::end() { cudaEventRecord(entries_[used_ - 1].stop, stream_); }

Status KernelTimer::read(std::vector<std::pair<std::string, std::int64_t>>* out) {
  for (std::size_t i = 0; i < used_; ++i) {
    float ms = 0.0f;
    if (cudaError_t e = cudaEventElapsedTime(&ms, entries_[i].start, entries_[i].stop); e != cudaSuccess) {
      return Status::error("reading the timing of " + entries_[i].name + ": " + cuda_error_string(e));
    }
    out->emplace_back(entries_[i].name, std::llround(static_cast<double>(ms) * 1e6));
  }
  return Status();
}

StatusOr<std::unique_ptr<SyntheticModel>> SyntheticModel::create(const ModelConfig& config, DType dtype,
                                                                 std::uint64_t seed, const ModelLimits& limits,
                                                                 cudaStream_t stream) {
  if (Status st = config.validate(); !st.ok()) return st;
  if (dtype != DType::kBf16 && dtype != DType::kFp16) {
    return Status::error(std::string("the CUDA model runs in bf16 or fp16, not ") + gpuref::to_string(dtype));
  }
  if (limits.max_tokens < 1 || limits.max_logit_rows < 1 || limits.max_split_tokens < 0 || limits.num_kv_groups < 1) {
    return Status::error("model limits must be positive (max_tokens, max_logit_rows, num_kv_groups)");
  }
  std::unique_ptr<SyntheticModel> m(new SyntheticModel());
  m->config_ = config;
  m->dtype_ = dtype;
  m->limits_ = limits;
  m->limits_.max_logit_rows = std::min(limits.max_logit_rows, limits.max_tokens);
  m->stream_ = stream;
  m->memory_ = plan_memory(config, dtype, m->limits_);
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) == cudaSuccess && cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    m->num_sms_ = prop.multiProcessorCount;
  }
  const auto elem = static_cast<std::size_t>(gpuref::dtype_bytes(dtype));
  const WeightLayout wl = weight_layout(config, elem);
  const WorkspaceLayout ws = workspace_layout(config, elem, m->limits_);
  if (cudaError_t e = cudaMalloc(&m->weight_arena_, wl.total); e != cudaSuccess) {
    m->weight_arena_ = nullptr;
    return Status::error("allocating " + std::to_string(wl.total) + " bytes of weights for model '" + config.name +
                         "' failed: " + cuda_error_string(e));
  }
  if (cudaError_t e = cudaMalloc(&m->workspace_arena_, ws.total); e != cudaSuccess) {
    m->workspace_arena_ = nullptr;
    return Status::error("allocating the " + std::to_string(ws.total) +
                         "-byte activation workspace failed: " + cuda_error_string(e));
  }
  void* w = m->weight_arena_;
  m->embedding_ = at<char>(w, wl.embedding);
  for (const auto& l : wl.layers) {
    m->layers_.push_back({at<char>(w, l[0]), at<char>(w, l[1]), at<char>(w, l[2]), at<char>(w, l[3]), at<char>(w, l[4]),
                          at<char>(w, l[5])});
  }
  m->final_norm_ = at<char>(w, wl.final_norm);
  m->lm_head_ = at<char>(w, wl.lm_head);
  m->inv_freq_ = at<float>(w, wl.inv_freq);
  void* a = m->workspace_arena_;
  m->token_ids_ = at<std::int32_t>(a, ws.token_ids);
  m->positions_ = at<std::int32_t>(a, ws.positions);
  m->rows_ = at<std::int32_t>(a, ws.rows);
  m->logit_rows_ = at<std::int32_t>(a, ws.logit_rows);
  m->slots_ = at<std::int64_t>(a, ws.slots);
  m->query_start_loc_ = at<std::int32_t>(a, ws.query_start_loc);
  m->state_blocks_ = at<std::int32_t>(a, ws.state_blocks);
  m->residual_ = at<float>(a, ws.residual);
  m->x_ = at<char>(a, ws.x);
  m->qkv_ = at<char>(a, ws.qkv);
  m->attn_ = at<char>(a, ws.attn);
  m->gate_up_ = at<char>(a, ws.gate_up);
  m->act_ = at<char>(a, ws.act);
  m->gathered_ = at<char>(a, ws.gathered);
  m->logits_ = at<char>(a, ws.logits);
  m->partial_out_ = at<float>(a, ws.partial_out);
  m->partial_max_ = at<float>(a, ws.partial_max);
  m->partial_sum_ = at<float>(a, ws.partial_sum);
  if (Status st = m->gemm_.init(stream, kCublasWorkspaceBytes); !st.ok()) return st;
  // Zero the inputs once: rows of -1 would be safer for stray reads, but every pass only reads
  // the rows it was given.
  if (cudaError_t e = cudaMemsetAsync(a, 0, ws.total, stream); e != cudaSuccess) {
    return Status::error("clearing the workspace failed: " + cuda_error_string(e));
  }
  Status st = dtype == DType::kBf16 ? m->generate_weights<__nv_bfloat16>(seed) : m->generate_weights<__half>(seed);
  if (!st.ok()) return st;
  const std::vector<float> inv = gpuref::rope_inv_freq(config);
  if (cudaError_t e =
          cudaMemcpyAsync(m->inv_freq_, inv.data(), inv.size() * sizeof(float), cudaMemcpyHostToDevice, stream);
      e != cudaSuccess) {
    return Status::error("uploading rotary frequencies failed: " + cuda_error_string(e));
  }
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return Status::error("generating the weights of model '" + config.name + "' failed: " + cuda_error_string(e));
  }
  return m;
}

SyntheticModel::~SyntheticModel() {
  if (weight_arena_) cudaFree(weight_arena_);
  if (workspace_arena_) cudaFree(workspace_arena_);
}

template <typename T>
Status SyntheticModel::generate_weights(std::uint64_t seed) {
  const ModelConfig& c = config_;
  const std::int64_t h = c.hidden;
  auto fill = [&](void* dst, std::int64_t count, TensorKind kind, int layer, float scale, bool constant) -> Status {
    const SeededFillView<T> v{static_cast<T*>(dst), count, seed, gpuref::tensor_id(kind, layer), scale, constant};
    if (cudaError_t e = launch_seeded_fill(v, stream_); e != cudaSuccess) {
      return Status::error("seeded weight fill failed: " + cuda_error_string(e));
    }
    return Status();
  };
  Status st = fill(embedding_, c.vocab * h, TensorKind::kEmbedding, 0, gpuref::kEmbeddingScale, false);
  for (int l = 0; l < c.num_layers && st.ok(); ++l) {
    const Layer& w = layers_[static_cast<std::size_t>(l)];
    if (st.ok()) st = fill(w.attn_norm, h, TensorKind::kAttnNorm, l, 1.0f, true);
    if (st.ok()) st = fill(w.qkv, c.qkv_dim() * h, TensorKind::kQkv, l, gpuref::uniform_scale(c.hidden), false);
    if (st.ok()) st = fill(w.o_proj, h * c.q_dim(), TensorKind::kOProj, l, gpuref::uniform_scale(c.q_dim()), false);
    if (st.ok()) st = fill(w.mlp_norm, h, TensorKind::kMlpNorm, l, 1.0f, true);
    if (st.ok()) {
      st = fill(w.gate_up, 2LL * c.intermediate * h, TensorKind::kGateUp, l, gpuref::uniform_scale(c.hidden), false);
    }
    if (st.ok())
      st = fill(w.down, h * c.intermediate, TensorKind::kDown, l, gpuref::uniform_scale(c.intermediate), false);
  }
  if (st.ok()) st = fill(final_norm_, h, TensorKind::kFinalNorm, 0, 1.0f, true);
  if (st.ok()) st = fill(lm_head_, c.vocab * h, TensorKind::kLmHead, 0, gpuref::uniform_scale(c.hidden), false);
  return st;
}

std::int32_t SyntheticModel::choose_splits(std::int32_t num_tokens, std::int32_t max_seq_len) const {
  if (num_tokens < 1 || num_tokens > limits_.max_split_tokens) return 1;
  const std::int64_t blocks = static_cast<std::int64_t>(num_tokens) * config_.num_heads;
  std::int64_t splits = (2LL * num_sms_ + blocks - 1) / blocks;  // fill the GPU twice over
  if (max_seq_len > 0) splits = std::min<std::int64_t>(splits, (max_seq_len + 255) / 256);
  return static_cast<std::int32_t>(std::clamp<std::int64_t>(splits, 1, kMaxAttentionSplits));
}

Status SyntheticModel::forward(const ForwardArgs& args, const KvCacheSet& kv, KernelTimer* timer,
                               std::int64_t* launches) {
  const gpuref::KvLayout& layout = kv.layout;
  if (args.num_tokens < 0 || args.num_tokens > limits_.max_tokens || args.num_logit_rows < 0 ||
      args.num_logit_rows > args.num_tokens || (args.num_logit_rows > 0 && !limits_.compute_logits) ||
      args.num_logit_rows > limits_.max_logit_rows || args.num_splits < 1 || args.num_splits > kMaxAttentionSplits ||
      (args.num_splits > 1 && args.num_tokens > limits_.max_split_tokens) ||
      layout.num_layers() != config_.num_layers || layout.num_groups() < 1 ||
      layout.num_groups() > limits_.num_kv_groups ||
      kv.tables.size() != static_cast<std::size_t>(layout.num_groups()) ||
      kv.k.size() != static_cast<std::size_t>(layout.num_tensors) || kv.v.size() != kv.k.size() ||
      (layout.has_mamba() &&
       (args.num_state_seqs < 0 || args.num_state_seqs > args.num_tokens || kv.state_floats != config_.kv_dim()))) {
    return Status::error("forward pass: bad arguments (tokens " + std::to_string(args.num_tokens) + " of at most " +
                         std::to_string(limits_.max_tokens) + ", logit rows " + std::to_string(args.num_logit_rows) +
                         ", splits " + std::to_string(args.num_splits) + ", KV groups " +
                         std::to_string(kv.tables.size()) + ", KV tensors " + std::to_string(kv.k.size()) +
                         ", state sequences " + std::to_string(args.num_state_seqs) + ")");
  }
  return dtype_ == DType::kBf16 ? forward_t<__nv_bfloat16>(args, kv, timer, launches)
                                : forward_t<__half>(args, kv, timer, launches);
}

template <typename T>
Status SyntheticModel::forward_t(const ForwardArgs& args, const KvCacheSet& kv, KernelTimer* timer,
                                 std::int64_t* launches) {
  const ModelConfig& c = config_;
  const std::int32_t n = args.num_tokens;
  int layer = -1;
  auto step = [&](const char* name, bool timed, auto&& launch) -> Status {
    const bool timing = timed && timer && timer->begin(name);
    const auto result = launch();
    if (timing) timer->end();
    if (launches) ++*launches;
    if (!ok(result)) {
      return Status::error(std::string("kernel ") + name +
                           (layer >= 0 ? " (layer " + std::to_string(layer) + ")" : "") +
                           " failed: " + message(result));
    }
    return Status();
  };
  T* x = static_cast<T*>(x_);
  T* qkv = static_cast<T*>(qkv_);
  T* attn = static_cast<T*>(attn_);
  T* gate_up = static_cast<T*>(gate_up_);
  T* act = static_cast<T*>(act_);
  const TokenView tokens{rows_, positions_, n};
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  const gpuref::KvLayout& layout = kv.layout;
  auto group_slots = [&](std::size_t g) { return slots_ + g * static_cast<std::size_t>(limits_.max_tokens); };
  Status st;
  for (std::size_t g = 0; g < kv.tables.size() && st.ok(); ++g) {
    if (layout.is_state_group(static_cast<int>(g))) continue;  // states, not per-token slots
    st = step("slot_mapping", true, [&] {
      return launch_slot_mapping(SlotMappingView{tokens, kv.tables[g], group_slots(g)}, stream_);
    });
  }
  if (!st.ok()) return st;
  st = step("embedding", false, [&] {
    return launch_embedding(
        EmbeddingView<T>{token_ids_, static_cast<const T*>(embedding_), residual_, n, c.hidden, c.vocab}, stream_);
  });
  if (!st.ok()) return st;
  for (layer = 0; layer < c.num_layers; ++layer) {
    const Layer& w = layers_[static_cast<std::size_t>(layer)];
    const auto g = static_cast<std::size_t>(layout.layer_group[static_cast<std::size_t>(layer)]);
    const auto t = static_cast<std::size_t>(layout.layer_tensor[static_cast<std::size_t>(layer)]);
    const PagedKvView<T> cache{
        static_cast<T*>(kv.k[t]), static_cast<T*>(kv.v[t]), kv.num_blocks, kv.block_size, c.num_kv_heads, c.head_dim};
    const std::int64_t* slots = group_slots(g);
    st = step("rmsnorm", true, [&] {
      return launch_rmsnorm(RmsNormView<T>{residual_, static_cast<const T*>(w.attn_norm), x, n, c.hidden, c.rms_eps},
                            stream_);
    });
    if (st.ok()) {
      st = step("qkv_proj", true, [&] { return gemm_.linear(dtype_, x, n, c.hidden, w.qkv, c.qkv_dim(), qkv, false); });
    }
    if (st.ok() && layout.is_mamba_layer(layer)) {
      st = step("mamba_scan", true, [&] {
        return launch_mamba_scan(
            MambaScanView<T>{qkv, c.qkv_dim(), c.q_dim(), attn, n, query_start_loc_, state_blocks(g),
                             state_blocks(g) + limits_.max_tokens, args.num_state_seqs, kv.state_pages(t), c.num_heads,
                             c.num_kv_heads, c.head_dim},
            stream_);
      });
    }
    if (st.ok() && !layout.is_mamba_layer(layer)) {
      st = step("rotary", true, [&] {
        return launch_rotary(
            RotaryView<T>{qkv, c.qkv_dim(), positions_, inv_freq_, n, c.num_heads, c.num_kv_heads, c.head_dim},
            stream_);
      });
    }
    if (st.ok() && !layout.is_mamba_layer(layer)) {
      st = step("cache_write", true, [&] {
        return launch_cache_write(
            CacheWriteView<T>{qkv + c.q_dim(), qkv + c.q_dim() + c.kv_dim(), c.qkv_dim(), slots, n, cache}, stream_);
      });
    }
    if (st.ok() && !layout.is_mamba_layer(layer)) {
      st = step("attention", true, [&] {
        return launch_paged_attention(
            AttentionView<T>{qkv, c.qkv_dim(), attn, tokens, kv.tables[g], cache, c.num_heads, scale, args.num_splits,
                             partial_out_, partial_max_, partial_sum_, layout.group_windows[g]},
            stream_);
      });
    }
    if (st.ok()) {
      st = step("o_proj", true,
                [&] { return gemm_.linear(dtype_, attn, n, c.q_dim(), w.o_proj, c.hidden, residual_, true); });
    }
    if (st.ok()) {
      st = step("rmsnorm", true, [&] {
        return launch_rmsnorm(RmsNormView<T>{residual_, static_cast<const T*>(w.mlp_norm), x, n, c.hidden, c.rms_eps},
                              stream_);
      });
    }
    if (st.ok()) {
      st = step("gate_up_proj", true,
                [&] { return gemm_.linear(dtype_, x, n, c.hidden, w.gate_up, 2 * c.intermediate, gate_up, false); });
    }
    if (st.ok()) {
      st = step("silu_mul", true, [&] {
        return launch_silu_mul(SiluMulView<T>{gate_up, act, n, c.intermediate}, stream_);
      });
    }
    if (st.ok()) {
      st = step("down_proj", true,
                [&] { return gemm_.linear(dtype_, act, n, c.intermediate, w.down, c.hidden, residual_, true); });
    }
    if (!st.ok()) return st;
  }
  layer = -1;
  st = step("rmsnorm", true, [&] {
    return launch_rmsnorm(RmsNormView<T>{residual_, static_cast<const T*>(final_norm_), x, n, c.hidden, c.rms_eps},
                          stream_);
  });
  if (!st.ok() || args.num_logit_rows == 0) return st;
  T* gathered = static_cast<T*>(gathered_);
  st = step("gather", false, [&] {
    return launch_gather_rows(GatherRowsView<T>{x, gathered, logit_rows_, args.num_logit_rows, c.hidden}, stream_);
  });
  if (!st.ok()) return st;
  return step("lm_head", true, [&] {
    return gemm_.linear(dtype_, gathered, args.num_logit_rows, c.hidden, lm_head_, c.vocab, logits_, false);
  });
}

}  // namespace kv::gpu
