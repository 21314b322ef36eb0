#include "cli/replay_setup.h"

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>

#include "sim/hardware_specs.h"
#include "sim/sim_device.h"
#ifdef KVSIM_HAVE_CUDA
#include "gpu_backend/cuda_device.h"
#endif

namespace po = boost::program_options;

namespace kv::cli {

#ifdef KVSIM_HAVE_CUDA
namespace {
// The CUDA device for a replay: the same pool size as the scheduler's, the same limits.
StatusOr<std::unique_ptr<Device>> make_gpu_device_for_replay(const ReplaySetupOptions& o,
                                                             const SchedulerConfig& sc) {
  std::string why;
  if (!gpu::cuda_device_available(&why)) return Status::error("--device gpu: " + why);
  gpu::CudaDeviceOptions g;
  g.model = o.model;
  g.seed = o.seed + 1;
  g.block_size = o.block_size;
  g.num_gpu_blocks = sc.cache.num_blocks;
  g.gpu_memory_utilization = o.gpu_memory_utilization;
  g.max_num_seqs = o.max_num_seqs;
  g.max_num_batched_tokens = o.max_num_batched_tokens;
  g.max_model_len = o.max_model_len;
  g.cudagraph_mode = o.cuda_graphs == "NONE" ? "NONE" : "FULL_DECODE_ONLY";
  g.profile_csv = o.gpu_profile_out;
  auto dev = gpu::make_cuda_device(g);
  if (!dev.ok()) return Status::error("--device gpu: " + dev.status().message());
  return std::move(*dev);
}
}  // namespace
#endif

void add_replay_setup_options(po::options_description& opts, ReplaySetupOptions& o) {
  po::options_description d("Device and model");
  d.add_options()
      ("device", po::value(&o.device)->default_value(o.device), "sim | gpu")
      ("model", po::value(&o.model)->default_value(o.model), "model preset: tiny, llama3-8b, llama3-70b")
      ("gpu", po::value(&o.gpu)->default_value(o.gpu), "GPU preset of the simulator: h100-sxm, h200")
      ("gpu-preset-file", po::value(&o.gpu_preset_file),
       "GPU preset file (kvsim calibrate writes one); --gpu NAME also finds NAME.gpu in the "
       "directories of $KVSIM_GPU_PRESET_PATH (colon-separated) and ./presets")
      ("profile", po::value(&o.profile), "per-kernel profile CSV for the cost model (sim/profile_format.md)")
      ("clock", po::value(&o.clock)->default_value(o.clock),
       "virtual: the cost model's step time drives the clock on every device; wall: measured time")
      ("verify", po::value(&o.verify)->default_value(o.verify), "shadow-KV verification: off | fast | full")
      ("cuda-graphs", po::value(&o.cuda_graphs)->default_value(o.cuda_graphs),
       "NONE | PIECEWISE | FULL | FULL_DECODE_ONLY | FULL_AND_PIECEWISE")
      ("gpu-profile-out", po::value(&o.gpu_profile_out),
       "--device gpu: write a per-kernel profile CSV (runs eagerly) for kvsim calibrate");
  po::options_description c("KV cache");
  c.add_options()
      ("prefix-caching", po::value(&o.prefix_caching_text)->default_value(o.prefix_caching_text), "on | off")
      ("block-size", po::value(&o.block_size)->default_value(o.block_size), "tokens per KV block")
      ("num-blocks", po::value(&o.num_blocks)->default_value(0),
       "KV blocks including the null block (0: from --kv-cache-tokens or GPU memory)")
      ("kv-cache-tokens", po::value(&o.kv_cache_tokens)->default_value(0), "KV cache size in tokens")
      ("gpu-memory-utilization", po::value(&o.gpu_memory_utilization)->default_value(o.gpu_memory_utilization),
       "fraction of GPU memory for weights, activations and KV cache (sizes the pool by default)")
      ("free-order", po::value(&o.free_order)->default_value(o.free_order), "classic | unhashed_first")
      ("hash", po::value(&o.hash)->default_value(o.hash), "sha256_cbor | xxhash_cbor");
  po::options_description s("Scheduler");
  s.add_options()
      ("max-num-batched-tokens", po::value(&o.max_num_batched_tokens)->default_value(o.max_num_batched_tokens),
       "token budget per step")
      ("max-num-seqs", po::value(&o.max_num_seqs)->default_value(o.max_num_seqs), "requests per step")
      ("max-model-len", po::value(&o.max_model_len)->default_value(o.max_model_len), "longest sequence")
      ("no-chunked-prefill", po::bool_switch(&o.no_chunked_prefill), "a prompt must fit one step's budget")
      ("long-prefill-token-threshold", po::value(&o.long_prefill_token_threshold)->default_value(0),
       "cap on one request's tokens per step (0: none)")
      ("policy", po::value(&o.policy)->default_value(o.policy), "fcfs | priority")
      ("lookahead", po::value(&o.lookahead)->default_value(0), "slots reserved per step for speculative tokens")
      ("full-sequence-gate", po::value(&o.full_sequence_gate)->default_value(o.full_sequence_gate),
       "on: admit a request only if its whole prompt's blocks are free")
      ("seed", po::value(&o.seed)->default_value(0), "seed of generated output tokens")
      ("max-steps", po::value(&o.max_steps)->default_value(0), "stop with an error after N steps (0: no limit)")
      ("check-invariants", po::bool_switch(&o.check_invariants), "check every core invariant after every step");
  opts.add(d).add(c).add(s);
}

StatusOr<std::int64_t> blocks_from_gpu_memory(const std::string& model_name, const std::string& gpu_name,
                                              double utilization, int block_size,
                                              std::int64_t max_num_batched_tokens) {
  auto model = sim::find_model_spec(model_name);
  if (!model.ok()) return model.status();
  auto gpu = sim::find_gpu_spec(gpu_name);
  if (!gpu.ok()) return gpu.status();
  const sim::ModelSpec& m = *model;
  const std::int64_t params = m.num_params();
  const std::int64_t weights = params * m.dtype_bytes;
  // Activation workspace of the largest step: the MLP's gate/up output dominates.
  const std::int64_t activations = max_num_batched_tokens * (2LL * m.intermediate + 4LL * m.hidden) * 4;
  const auto budget = static_cast<std::int64_t>(static_cast<double>(gpu->memory_bytes) * utilization);
  const std::int64_t per_block = m.kv_bytes_per_token() * block_size;
  const std::int64_t free = budget - weights - activations;
  if (free < per_block * 2) {
    return Status::error("model " + model_name + " (" + std::to_string(weights >> 20) + " MiB of weights) leaves no "
                         "room for a KV cache in " + std::to_string(budget >> 20) + " MiB of " + gpu_name +
                         " at --gpu-memory-utilization " + std::to_string(utilization));
  }
  return free / per_block;
}

Status resolve_gpu_preset(ReplaySetupOptions& o) {
  std::string path = o.gpu_preset_file;
  if (path.empty()) {
    if (sim::find_gpu_spec(o.gpu).ok()) return {};
    std::string dirs = std::getenv("KVSIM_GPU_PRESET_PATH") != nullptr ? std::getenv("KVSIM_GPU_PRESET_PATH") : "";
    dirs += dirs.empty() ? "presets" : ":presets";
    for (std::size_t start = 0; start <= dirs.size();) {
      const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
      const std::string candidate = dirs.substr(start, colon - start) + "/" + o.gpu + ".gpu";
      if (std::FILE* f = std::fopen(candidate.c_str(), "rb")) {
        std::fclose(f);
        path = candidate;
        break;
      }
      start = colon + 1;
    }
    if (path.empty()) return sim::find_gpu_spec(o.gpu).status().with_context("--gpu: ");
  }
  auto spec = sim::load_gpu_spec_file(path);
  if (!spec.ok()) return spec.status().with_context("--gpu-preset-file: ");
  if (o.gpu_preset_file.empty() && spec->name != o.gpu) {
    return Status::error("--gpu: " + path + " names its preset '" + spec->name + "', not '" + o.gpu + "'");
  }
  if (Status s = sim::register_gpu_spec(*spec); !s.ok()) return s.with_context("--gpu-preset-file: ");
  o.gpu = spec->name;
  o.gpu_preset_file = path;
  return {};
}

StatusOr<ReplaySetup> make_replay_setup(ReplaySetupOptions& o, const trace::TraceHeader& header) {
  ReplaySetup out;
  if (Status s = resolve_gpu_preset(o); !s.ok()) return s;
  auto bad = [](const std::string& opt, const std::string& why) { return Status::error("--" + opt + ": " + why); };
  if (o.device != "sim" && o.device != "gpu") return bad("device", "must be sim or gpu, got '" + o.device + "'");
  if (o.clock != "virtual" && o.clock != "wall") return bad("clock", "must be virtual or wall, got '" + o.clock + "'");
  if (o.prefix_caching_text != "on" && o.prefix_caching_text != "off") {
    return bad("prefix-caching", "must be on or off, got '" + o.prefix_caching_text + "'");
  }
  o.prefix_caching = o.prefix_caching_text == "on";
  if (o.full_sequence_gate != "on" && o.full_sequence_gate != "off") {
    return bad("full-sequence-gate", "must be on or off, got '" + o.full_sequence_gate + "'");
  }
  if (o.block_size < 1 || o.block_size > 1024) return bad("block-size", "must be 1..1024");
  if (o.max_num_batched_tokens < 1) return bad("max-num-batched-tokens", "must be positive");
  if (o.max_num_seqs < 1) return bad("max-num-seqs", "must be positive");
  if (o.max_model_len < 2) return bad("max-model-len", "must be at least 2");
  if (o.long_prefill_token_threshold < 0) return bad("long-prefill-token-threshold", "must be >= 0");
  if (o.lookahead < 0) return bad("lookahead", "must be >= 0");
  if (o.num_blocks < 0 || o.kv_cache_tokens < 0) return bad("num-blocks", "sizes must be >= 0");
  if (!(o.gpu_memory_utilization > 0 && o.gpu_memory_utilization <= 1)) {
    return bad("gpu-memory-utilization", "must be in (0, 1]");
  }

  SchedulerConfig sc;
  sc.cache.block_size = o.block_size;
  sc.cache.enable_caching = o.prefix_caching;
  if (!parse_free_order(o.free_order, &sc.cache.free_order)) {
    return bad("free-order", "must be classic or unhashed_first, got '" + o.free_order + "'");
  }
  auto algo = parse_hash_algo(o.hash);
  if (!algo) return bad("hash", "must be sha256_cbor or xxhash_cbor, got '" + o.hash + "'");
  sc.hash_algo = *algo;
  sc.hash_seed = header.hash_seed.empty() ? "0" : header.hash_seed;
  sc.cache.max_model_len = o.max_model_len;
  sc.max_num_batched_tokens = o.max_num_batched_tokens;
  sc.max_num_seqs = o.max_num_seqs;
  sc.enable_chunked_prefill = !o.no_chunked_prefill;
  sc.long_prefill_token_threshold = o.long_prefill_token_threshold;
  sc.num_lookahead_tokens = o.lookahead;
  sc.full_sequence_gate = o.full_sequence_gate == "on";
  if (o.policy == "fcfs") sc.policy = SchedulingPolicy::kFcfs;
  else if (o.policy == "priority") sc.policy = SchedulingPolicy::kPriority;
  else return bad("policy", "must be fcfs or priority, got '" + o.policy + "'");

  std::int64_t blocks = o.num_blocks;
  std::string sizing = "--num-blocks";
  if (blocks == 0 && o.kv_cache_tokens > 0) {
    blocks = (o.kv_cache_tokens + o.block_size - 1) / o.block_size + 1;
    sizing = "--kv-cache-tokens";
  }
  if (blocks == 0) {
    auto fit = blocks_from_gpu_memory(o.model, o.gpu, o.gpu_memory_utilization, o.block_size, o.max_num_batched_tokens);
    if (!fit.ok()) return fit.status();
    blocks = *fit + 1;
    sizing = "gpu memory";
  }
  if (blocks < 2) return bad("num-blocks", "the pool needs at least 2 blocks (the null block and one more)");
  if (blocks > (1LL << 30)) return bad("num-blocks", "at most 2^30 blocks");
  sc.cache.num_blocks = static_cast<int>(blocks);

  auto verify = sim::parse_verify_mode(o.verify);
  if (!verify) return bad("verify", "must be off, fast or full, got '" + o.verify + "'");
  auto mode = parse_cuda_graph_mode(o.cuda_graphs);
  if (!mode) return bad("cuda-graphs", "unknown mode '" + o.cuda_graphs + "'");
  sim::SimOptions so;
  so.model = o.model;
  so.gpu = o.gpu;
  so.profile_path = o.profile;
  so.cuda_graph_mode = *mode;
  so.max_num_seqs = o.max_num_seqs;
  so.max_num_batched_tokens = o.max_num_batched_tokens;
  so.verify = *verify;

  if (o.device == "sim") {
    auto dev = sim::make_sim_device(so);
    if (!dev.ok()) return dev.status();
    out.device = std::move(*dev);
  } else {
#ifdef KVSIM_HAVE_CUDA
    auto dev = make_gpu_device_for_replay(o, sc);
    if (!dev.ok()) return dev.status();
    out.device = std::move(*dev);
    so.verify = sim::VerifyMode::kOff;  // the predictor only predicts
    auto pred = sim::make_sim_device(so);
    if (!pred.ok()) return pred.status();
    out.predictor = std::move(*pred);
#else
    return bad("device", "this kvsim was built without CUDA (no nvcc found at configure time); "
                         "use --device sim, or build on a machine with the CUDA toolkit");
#endif
  }
  out.scheduler = std::make_unique<Scheduler>(sc);

  out.config = {
      {"device", out.device->name()},
      {"model", o.model},
      {"gpu", o.gpu},
      {"profile", o.profile.empty() ? "(roofline)" : o.profile},
      {"clock", o.clock},
      {"verify", o.verify},
      {"cuda_graphs", to_string(*mode)},
      {"prefix_caching", o.prefix_caching_text},
      {"block_size", std::to_string(o.block_size)},
      {"num_blocks", std::to_string(blocks) + " (" + sizing + ")"},
      {"kv_cache_tokens", std::to_string((blocks - 1) * o.block_size)},
      {"free_order", o.free_order},
      {"hash", o.hash},
      {"hash_seed", sc.hash_seed},
      {"max_num_batched_tokens", std::to_string(o.max_num_batched_tokens)},
      {"max_num_seqs", std::to_string(o.max_num_seqs)},
      {"max_model_len", std::to_string(o.max_model_len)},
      {"chunked_prefill", o.no_chunked_prefill ? "off" : "on"},
      {"long_prefill_token_threshold", std::to_string(o.long_prefill_token_threshold)},
      {"policy", o.policy},
      {"lookahead", std::to_string(o.lookahead)},
      {"full_sequence_gate", o.full_sequence_gate},
      {"seed", std::to_string(o.seed)},
      {"trace_source", header.source},
  };
  if (!o.gpu_preset_file.empty()) out.config.emplace_back("gpu_preset_file", o.gpu_preset_file);
  return out;
}

}  // namespace kv::cli
