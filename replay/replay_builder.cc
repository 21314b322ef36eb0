#include "replay/replay_builder.h"

#include <algorithm>
#include <cmath>

#include "model/util/check.h"
#include "replay/arrivals.h"
#include "replay/pool_sizing.h"
#include "sim/sim_device.h"
#include "traces/replay_source.h"
#ifdef KVSIM_HAVE_CUDA
#include "gpu_backend/cuda_device.h"
#endif

namespace kv::replay {

namespace {

// The mode the CUDA backend runs: FULL graphs for uniform-decode batches, or none at all.
CudaGraphMode gpu_graph_mode(const ReplayConfig& c) {
  return c.device.cuda_graphs == CudaGraphMode::kNone ? CudaGraphMode::kNone : CudaGraphMode::kFullDecodeOnly;
}

#ifdef KVSIM_HAVE_CUDA
StatusOr<std::unique_ptr<Device>> make_gpu_device(const ReplayConfig& c, std::int64_t num_blocks) {
  std::string why;
  if (!gpu::cuda_device_available(&why)) return Status::error("--device gpu: " + why);
  gpu::CudaDeviceOptions g;
  g.model = c.device.model.name;
  if (c.hybrid_kv_cache()) {
    auto groups = c.kv_cache_groups();  // validate() checked it
    if (!groups.ok()) return groups.status().with_context("--model: ");
    g.kv_cache_groups = std::move(*groups);
  }
  g.seed = c.run.seed + 1;
  g.block_size = c.block_size();
  g.num_gpu_blocks = num_blocks;
  g.gpu_memory_utilization = c.device.gpu_memory_utilization;
  g.max_num_seqs = c.scheduler.max_num_seqs;
  g.max_num_batched_tokens = c.scheduler.max_num_batched_tokens;
  g.max_model_len = c.scheduler.cache.max_model_len;
  g.cudagraph_mode = to_string(gpu_graph_mode(c));
  g.profile_csv = c.device.gpu_profile_out;
  auto dev = gpu::make_cuda_device(g);
  if (!dev.ok()) return dev.status().with_context("--device gpu: ");
  return std::move(*dev);
}
#endif

// The device and, beside real hardware, the predictor.
Status make_device(const ReplayConfig& c, std::int64_t num_blocks, ReplayRun& run) {
  const DeviceOptions& d = c.device;
  if (d.kind == DeviceKind::kSim) {
    if (d.inject_fault) {
      auto inner = sim::SimDevice::create(sim_options(c, d.cuda_graphs, d.verify));
      if (!inner.ok()) return inner.status();
      auto faulty = std::make_unique<sim::FaultInjectingDevice>(std::move(*inner));
      faulty->inject(*d.inject_fault);
      run.faults = faulty.get();
      run.device = std::move(faulty);
      return {};
    }
    auto dev = sim::make_sim_device(sim_options(c, d.cuda_graphs, d.verify));
    if (!dev.ok()) return dev.status();
    run.device = std::move(*dev);
    return {};
  }
#ifdef KVSIM_HAVE_CUDA
  auto dev = make_gpu_device(c, num_blocks);
  if (!dev.ok()) return dev.status();
  run.device = std::move(*dev);
  auto pred = sim::CostPredictor::create(sim_options(c, gpu_graph_mode(c), sim::VerifyMode::kOff));
  if (!pred.ok()) return pred.status();
  run.predictor = std::move(*pred);
  return {};
#else
  (void)num_blocks;
  return Status::error(
      "--device: this kvsim was built without CUDA (no nvcc found at configure time); "
      "use --device sim, or build on a machine with the CUDA toolkit");
#endif
}

std::vector<std::pair<std::string, std::string>> describe_run(const ReplayConfig& c, const ReplayRun& run,
                                                              std::int64_t blocks, const std::string& sizing,
                                                              const std::string& hash_seed,
                                                              const std::string& trace_source) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto [key, value] : describe(c)) {
    if (c.fleet.single_engine() && fleet_option_names().count(key)) continue;  // a fleet describes itself
    if (key == "no-chunked-prefill") {
      key = "chunked_prefill";
      value = c.scheduler.enable_chunked_prefill ? "on" : "off";
    }
    for (char& ch : key) ch = ch == '-' ? '_' : ch;
    if (key == "device") value = run.device->name();
    if (key == "profile" && value.empty()) value = "(roofline)";
    if (key == "inject_fault" && value.empty()) value = "none";
    if (key == "cuda_graphs" && c.device.kind == DeviceKind::kGpu) value = to_string(gpu_graph_mode(c));
    if (key == "block_size") value = std::to_string(c.block_size());  // a Mamba model's raised block
    if (key == "num_blocks") value = std::to_string(blocks) + " (" + sizing + ")";
    if (key == "kv_cache_tokens") value = std::to_string((blocks - 1) * c.block_size());
    out.emplace_back(key, value);
  }
  out.emplace_back("hash_seed", hash_seed);
  out.emplace_back("trace_source", trace_source);
  return out;
}

}  // namespace

sim::SimOptions sim_options(const ReplayConfig& c, CudaGraphMode mode, sim::VerifyMode verify) {
  sim::SimOptions so;
  so.model = c.effective_model();
  so.gpu = c.effective_gpu();
  so.async_scheduling = c.device.async_scheduling;
  so.profile_path = c.device.profile;
  so.cuda_graph_mode = mode;
  so.max_num_seqs = c.scheduler.max_num_seqs;
  so.max_num_batched_tokens = c.scheduler.max_num_batched_tokens;
  so.verify = verify;
  so.tier = c.tiers.cost(c.device.model.kv_bytes_per_token() * c.block_size());
  so.speculative = c.scheduler.speculative;
  so.seed = static_cast<std::uint64_t>(c.run.seed);
  return so;
}

std::unique_ptr<KvConnector> make_tier_connector(const ReplayConfig& c) {
  if (!c.tiers_enabled()) return nullptr;
  return std::make_unique<TierConnector>(
      c.tiers.connector(c.block_size(), c.device.model.kv_bytes_per_token() * c.block_size()));
}

SchedulerConfig scheduler_config(const ReplayConfig& c, std::int64_t num_blocks, const std::string& hash_seed) {
  SchedulerConfig sc = c.scheduler;      // the options as set; what follows completes it
  sc.cache.block_size = c.block_size();  // a Mamba model's attention block (vLLM's page rule)
  sc.cache.num_blocks = static_cast<int>(num_blocks);
  sc.hash_seed = hash_seed.empty() ? std::string(kDefaultHashSeed) : hash_seed;
  sc.cache.enable_kv_events = c.kv_events_enabled();
  if (c.hybrid_kv_cache()) {
    auto groups = c.kv_cache_groups();  // validate() checked it
    KV_CHECK(groups.ok(), groups.status().message());
    sc.cache.groups = std::move(*groups);
  }
  // An encoder-decoder model: vLLM's SchedulerConfig turns chunked prefill (and the long-prefill
  // threshold) off, whatever was asked, and its encoder budget (compute_encoder_budget) is the
  // encoder length: one audio input per step for Whisper.
  if (c.effective_model().cross_attention) {
    sc.enable_chunked_prefill = false;
    sc.long_prefill_token_threshold = 0;
    sc.max_num_encoder_input_tokens = c.effective_model().encoder_tokens;
  }
  return sc;
}

StatusOr<std::pair<std::int64_t, std::string>> pool_blocks(const ReplayConfig& c) {
  const std::int64_t num_blocks = c.scheduler.cache.num_blocks;
  if (num_blocks > 0) {
    if (Status s = check_pool_fits_host(num_blocks, "--num-blocks"); !s.ok()) return s;
    return std::make_pair(num_blocks, std::string("--num-blocks"));
  }
  const DeviceOptions& d = c.device;
  std::int64_t blocks = 0;
  std::string sizing = "--kv-cache-tokens";
  if (d.kv_cache_tokens > 0) {
    blocks = blocks_for_tokens(d.kv_cache_tokens, c.block_size());
  } else if (c.hybrid_kv_cache()) {
    const ModelShape model = c.effective_model();
    auto groups = c.kv_cache_groups();
    if (!groups.ok()) return groups.status().with_context("--model: ");
    auto fit = hybrid_blocks_from_gpu_memory(model, *groups, d.gpu, d.gpu_memory_utilization,
                                             c.scheduler.max_num_batched_tokens);
    if (!fit.ok()) return fit.status();
    blocks = *fit;  // the null block included (docs/hybrid-groups.md, "Pool size")
    sizing = "gpu memory";
  } else {
    auto fit = blocks_from_gpu_memory(c.effective_model(), d.gpu, d.gpu_memory_utilization, c.block_size(),
                                      c.scheduler.max_num_batched_tokens);
    if (!fit.ok()) return fit.status();
    blocks = *fit + 1;
    sizing = "gpu memory";
  }
  if (blocks < 2) return Status::error("--" + sizing.substr(2) + ": the pool needs at least 2 blocks");
  if (blocks > (1LL << 30)) {
    return Status::error(sizing + ": " + std::to_string(blocks) + " blocks; at most 2^30 (raise --block-size)");
  }
  if (Status s = check_pool_fits_host(blocks, sizing); !s.ok()) return s;
  return std::make_pair(blocks, sizing);
}

StatusOr<std::unique_ptr<KvEventSink>> make_event_sink(const ReplayConfig& c) {
  std::vector<std::unique_ptr<KvEventSink>> sinks;
  if (!c.events.file.empty()) {
    auto jsonl = make_jsonl_event_sink(c.events.file, c.events.overwrite_file);
    if (!jsonl.ok()) return jsonl.status();
    sinks.push_back(std::move(*jsonl));
  }
  if (!c.events.zmq.endpoint.empty()) {
    auto zmq = make_zmq_event_sink(c.events.zmq);
    if (!zmq.ok()) return zmq.status();
    sinks.push_back(std::move(*zmq));
  }
  if (sinks.empty()) return std::unique_ptr<KvEventSink>();
  if (sinks.size() == 1) return std::move(sinks.front());
  return make_fanout_event_sink(std::move(sinks));
}

std::vector<std::string> cached_block_hashes(const BlockPool& pool, bool with_group) {
  std::vector<std::string> out;
  for (BlockId id = 1; id < pool.num_blocks(); ++id) {
    const Block& b = pool.block(id);
    if (b.hash.empty()) continue;
    out.push_back(with_group ? b.hash.hex() + " " + std::to_string(b.group) : b.hash.hex());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> cached_block_hashes(const Scheduler& scheduler) {
  const KvCacheManager& kv = scheduler.kv_cache();
  return cached_block_hashes(kv.pool(), /*with_group=*/kv.tables_per_group());
}

ReplayOptions ReplayRun::replay_options(const ReplayConfig& config) const {
  ReplayOptions o = config.run.replay;
  const ModelShape& model = config.effective_model();
  if (model.cross_attention) o.encoder_tokens_per_request = model.encoder_tokens;  // Whisper: 1500
  return o;
}

std::unique_ptr<Replayer> ReplayRun::make_replayer(const ReplayConfig& config) {
  auto replayer = std::make_unique<Replayer>(*scheduler, *device, *source, replay_options(config), predictor.get());
  replayer->set_event_sink(events.get());
  return replayer;
}

StatusOr<ReplayRun> build_replay(const ReplayConfig& config, std::unique_ptr<RequestSource> source,
                                 const std::string& hash_seed, const std::string& trace_source) {
  if (Status s = config.validate(); !s.ok()) return s;
  if (!config.fleet.single_engine()) {
    return Status::error(
        "--replicas, --router, --router-params, --event-delay-ms and --event-loss describe a fleet: "
        "run it with kvsim fleet (kvsim sweep and kvsim capacity run fleets too)");
  }
  auto pool = pool_blocks(config);
  if (!pool.ok()) return pool.status();
  const auto [blocks, sizing] = *pool;
  ReplayRun run;
  ArrivalOptions arrivals = config.arrivals;
  arrivals.seed = config.run.seed;  // --seed drives the gaps too
  if (arrivals.rewrites()) source = std::make_unique<ArrivalSource>(std::move(source), arrivals);
  run.source = std::move(source);
  if (Status s = make_device(config, blocks, run); !s.ok()) return s;
  const SchedulerConfig sc = scheduler_config(config, blocks, hash_seed);
  run.scheduler = std::make_unique<Scheduler>(sc);
  if (config.tiers_enabled()) run.scheduler->set_connector(make_tier_connector(config));
  run.description = describe_run(config, run, blocks, sizing, sc.hash_seed, trace_source);
  auto sink = make_event_sink(config);
  if (!sink.ok()) return sink.status();
  run.events = std::move(*sink);
  return run;
}

StatusOr<ReplayRun> build_replay(const ReplayConfig& config, const std::string& trace_path) {
  trace::ReplaySourceOptions so;
  so.seed = config.run.seed;
  so.limit = config.run.limit;
  auto source = trace::TraceRequestSource::open(trace_path, so);
  if (!source.ok()) return source.status();
  const trace::TraceHeader header = (*source)->header();
  return build_replay(config, std::move(source).value(), header.hash_seed, header.source);
}

}  // namespace kv::replay
