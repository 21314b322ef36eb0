// ReplaySetup: turns command-line options into a scheduler, a device and (for real hardware)
// a predictor device, for `kvsim replay` and `kvsim sweep`. Validates every option and names
// the bad one in its Status. Defaults follow vLLM's (max_num_batched_tokens 8192,
// max_num_seqs 256, block size 16, chunked prefill on, FCFS, gpu_memory_utilization 0.9).
#pragma once

#include <boost/program_options/options_description.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "model/device.h"
#include "model/scheduler.h"
#include "model/status.h"
#include "reports/run_folder.h"
#include "traces/trace.h"

namespace kv::cli {

struct ReplaySetupOptions {
  std::string device = "sim";
  std::string model = "llama3-8b";
  std::string gpu = "h100-sxm";
  std::string gpu_preset_file;        // a preset file (sim/hardware_specs.h); sets gpu to its name
  std::string profile;
  std::string gpu_profile_out;
  std::string clock = "virtual";
  std::string verify = "fast";
  std::string cuda_graphs = "FULL_AND_PIECEWISE";
  std::string prefix_caching_text = "on";
  bool prefix_caching = true;
  std::string policy = "fcfs";
  std::string free_order = "classic";
  std::string hash = "sha256_cbor";
  int block_size = 16;
  std::int64_t num_blocks = 0;        // 0: from kv_cache_tokens, else from GPU memory
  std::int64_t kv_cache_tokens = 0;
  double gpu_memory_utilization = 0.9;
  std::int64_t max_num_batched_tokens = 8192;
  int max_num_seqs = 256;
  std::int64_t max_model_len = 131072;
  bool no_chunked_prefill = false;
  std::int64_t long_prefill_token_threshold = 0;
  int lookahead = 0;
  std::string full_sequence_gate = "on";
  std::uint64_t seed = 0;
  std::int64_t limit = 0;
  std::int64_t max_steps = 0;
  bool check_invariants = false;
};

void add_replay_setup_options(boost::program_options::options_description& opts, ReplaySetupOptions& o);

struct ReplaySetup {
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Device> device;
  std::unique_ptr<Device> predictor;  // the simulator beside a real device (virtual clock)
  reports::RunConfig config;          // every effective setting, for the run folder
};

StatusOr<ReplaySetup> make_replay_setup(ReplaySetupOptions& o, const trace::TraceHeader& header);

// Loads and registers the GPU preset of --gpu-preset-file, or of --gpu NAME when NAME is not
// built in (NAME.gpu in $KVSIM_GPU_PRESET_PATH or ./presets); sets o.gpu to the preset's name.
Status resolve_gpu_preset(ReplaySetupOptions& o);

// Blocks that fit the KV cache of `model` on `gpu` at the given memory utilization, as vLLM
// sizes it (memory * utilization - weights - activation workspace) / bytes per block.
StatusOr<std::int64_t> blocks_from_gpu_memory(const std::string& model, const std::string& gpu,
                                              double utilization, int block_size,
                                              std::int64_t max_num_batched_tokens);

}  // namespace kv::cli
