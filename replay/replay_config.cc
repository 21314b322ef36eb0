#include "replay/replay_config.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace kv::replay {

namespace {

Status bad(std::string_view option, const std::string& why) {
  return Status::error("--" + std::string(option) + ": " + why);
}

// Whole-string integer in [lo, hi].
Status read_int(std::string_view option, const std::string& text, std::int64_t lo, std::int64_t hi,
                std::int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return bad(option, "'" + text + "' is not an integer");
  if (v < lo || v > hi) {
    return bad(option, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + text);
  }
  *out = v;
  return {};
}

Status read_on_off(std::string_view option, const std::string& text, bool* out) {
  if (text == "on" || text == "true") *out = true;
  else if (text == "off" || text == "false") *out = false;
  else return bad(option, "must be on or off, got '" + text + "'");
  return {};
}

std::string on_off(bool b) { return b ? "on" : "off"; }

// Shortest text that reads back to the same double (0.9, not 0.90000000000000002).
std::string shortest(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

template <typename Field>
ConfigOption int_option(std::string_view name, std::string_view group, std::string_view help, Field field,
                        std::int64_t lo, std::int64_t hi) {
  return {name, group, help, false,
          [=](ReplayConfig& c, const std::string& t) {
            std::int64_t v = 0;
            if (Status s = read_int(name, t, lo, hi, &v); !s.ok()) return s;
            c.*field = static_cast<std::remove_reference_t<decltype(c.*field)>>(v);
            return Status();
          },
          [=](const ReplayConfig& c) { return std::to_string(c.*field); }};
}

ConfigOption bool_option(std::string_view name, std::string_view group, std::string_view help,
                         bool ReplayConfig::*field, bool is_switch = false, bool inverted = false) {
  return {name, group, help, is_switch,
          [=](ReplayConfig& c, const std::string& t) {
            bool v = false;
            if (Status s = read_on_off(name, t, &v); !s.ok()) return s;
            c.*field = v != inverted;
            return Status();
          },
          [=](const ReplayConfig& c) { return on_off(c.*field != inverted); }};
}

ConfigOption text_option(std::string_view name, std::string_view group, std::string_view help,
                         std::string ReplayConfig::*field) {
  return {name, group, help, false,
          [=](ReplayConfig& c, const std::string& t) {
            c.*field = t;
            return Status();
          },
          [=](const ReplayConfig& c) { return c.*field; }};
}

// An option whose value is one of a fixed set of names.
template <typename Enum>
ConfigOption enum_option(std::string_view name, std::string_view group, std::string_view help,
                         Enum ReplayConfig::*field, std::vector<std::pair<std::string, Enum>> names) {
  return {name, group, help, false,
          [=](ReplayConfig& c, const std::string& t) {
            std::string valid;
            for (const auto& [text, value] : names) {
              if (text == t) {
                c.*field = value;
                return Status();
              }
              valid += (valid.empty() ? "" : ", ") + text;
            }
            return bad(name, "must be one of " + valid + ", got '" + t + "'");
          },
          [=](const ReplayConfig& c) {
            for (const auto& [text, value] : names) {
              if (value == c.*field) return text;
            }
            return std::string("?");
          }};
}

Status set_model(ReplayConfig& c, const std::string& name) {
  auto shape = find_model_shape(name);
  if (!shape.ok()) return shape.status().with_context("--model: ");
  c.model = *shape;
  return {};
}

Status set_gpu(ReplayConfig& c, const std::string& name) {
  std::string file;
  auto gpu = find_gpu(name, c.gpu_search_path, &file);
  if (!gpu.ok()) return gpu.status().with_context("--gpu: ");
  c.gpu = *gpu;
  c.gpu_preset_file = file;
  return {};
}

Status set_gpu_file(ReplayConfig& c, const std::string& path) {
  auto gpu = sim::load_gpu_spec_file(path);
  if (!gpu.ok()) return gpu.status().with_context("--gpu-preset-file: ");
  c.gpu = *gpu;
  c.gpu_preset_file = path;
  return {};
}

Status set_utilization(ReplayConfig& c, const std::string& t) {
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !(v > 0 && v <= 1)) {
    return bad("gpu-memory-utilization", "must be a number in (0, 1], got '" + t + "'");
  }
  c.gpu_memory_utilization = v;
  return {};
}

Status set_fault(ReplayConfig& c, const std::string& t) {
  auto spec = sim::parse_fault_spec(t);
  if (!spec.ok()) return spec.status().with_context("--inject-fault: ");
  c.inject_fault = *spec;
  return {};
}

// The rows of the "Scheduler" and "Run" groups.
void add_scheduler_and_run_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view sch = "Scheduler", run = "Run";
  t.push_back(int_option("max-num-batched-tokens", sch, "token budget per step", &C::max_num_batched_tokens, 1,
                         1LL << 30));
  t.push_back(int_option("max-num-seqs", sch, "requests per step", &C::max_num_seqs, 1, 1 << 20));
  t.push_back(int_option("max-model-len", sch, "longest sequence", &C::max_model_len, 2, 1LL << 30));
  t.push_back(bool_option("no-chunked-prefill", sch, "a prompt must fit one step's budget", &C::chunked_prefill,
                          true, true));
  t.push_back(int_option("long-prefill-token-threshold", sch, "cap on one request's tokens per step (0: none)",
                         &C::long_prefill_token_threshold, 0, 1LL << 30));
  t.push_back(enum_option("policy", sch, "fcfs | priority", &C::policy,
                          std::vector<std::pair<std::string, SchedulingPolicy>>{
                              {"fcfs", SchedulingPolicy::kFcfs}, {"priority", SchedulingPolicy::kPriority}}));
  t.push_back(int_option("lookahead", sch, "slots reserved per step for speculative tokens", &C::lookahead, 0, 1024));
  t.push_back(bool_option("full-sequence-gate", sch, "on: admit a request only if its whole prompt's blocks are free",
                          &C::full_sequence_gate));
  t.push_back(int_option("seed", run, "seed of generated output tokens", &C::seed, 0,
                         std::numeric_limits<std::int64_t>::max()));
  t.push_back(int_option("limit", run, "replay only the first N requests (0 = all)", &C::limit, 0,
                         std::numeric_limits<std::int64_t>::max()));
  t.push_back(int_option("max-steps", run, "stop with an error after N steps (0: no limit)", &C::max_steps, 0,
                         std::numeric_limits<std::int64_t>::max()));
  t.push_back(bool_option("check-invariants", run, "check every core invariant after every step",
                          &C::check_invariants, true));
  t.push_back({"inject-fault", run,
               "KIND@STEP[:REQUEST]: plant a fault in the simulator's KV memory to test the verifier; KIND is "
               "overwrite (a stray store into the request's position 0), drop (its first write of the step is "
               "skipped), misdirect (that write lands in slot 0), swap (its first and last table entries); it "
               "fires at the first step >= STEP with a target (default request: the step's first)",
               false, set_fault, [](const C& c) { return c.inject_fault ? c.inject_fault->to_string() : ""; }});
}

std::vector<ConfigOption> make_table() {
  using C = ReplayConfig;
  const std::string_view dev = "Device and model", kv = "KV cache";
  std::vector<ConfigOption> t;
  t.push_back(enum_option(
      "device", dev, "sim | gpu", &C::device,
      std::vector<std::pair<std::string, DeviceKind>>{{"sim", DeviceKind::kSim}, {"gpu", DeviceKind::kGpu}}));
  t.push_back({"model", dev, "model preset (see model/model_shape.h: tiny, small, llama3-1b, llama3-8b, llama3-70b)",
               false, set_model, [](const C& c) { return c.model.name; }});
  t.push_back({"gpu", dev,
               "GPU preset of the simulator (h100-sxm, h200), or NAME.gpu found in $KVSIM_GPU_PRESET_PATH "
               "(colon-separated) or ./presets",
               false, set_gpu, [](const C& c) { return c.gpu.name; }});
  t.push_back({"gpu-preset-file", dev, "GPU preset file (kvsim calibrate writes one); replaces --gpu", false,
               set_gpu_file, [](const C& c) { return c.gpu_preset_file; }});
  t.push_back(text_option("profile", dev, "per-kernel profile CSV for the cost model (sim/profile_format.md)",
                          &C::profile));
  t.push_back(enum_option("clock", dev,
                          "virtual: the cost model's step time drives the clock on every device; wall: measured time",
                          &C::clock,
                          std::vector<std::pair<std::string, ReplayOptions::Clock>>{
                              {"virtual", ReplayOptions::Clock::kVirtual}, {"wall", ReplayOptions::Clock::kWall}}));
  t.push_back(enum_option("verify", dev, "shadow-KV verification: off | fast | full", &C::verify,
                          std::vector<std::pair<std::string, sim::VerifyMode>>{{"off", sim::VerifyMode::kOff},
                                                                               {"fast", sim::VerifyMode::kFast},
                                                                               {"full", sim::VerifyMode::kFull}}));
  std::vector<std::pair<std::string, CudaGraphMode>> modes;
  for (CudaGraphMode m : {CudaGraphMode::kNone, CudaGraphMode::kPiecewise, CudaGraphMode::kFull,
                          CudaGraphMode::kFullDecodeOnly, CudaGraphMode::kFullAndPiecewise}) {
    modes.emplace_back(to_string(m), m);
  }
  t.push_back(enum_option("cuda-graphs", dev,
                          "NONE | PIECEWISE | FULL | FULL_DECODE_ONLY | FULL_AND_PIECEWISE (the simulator; "
                          "--device gpu runs FULL_DECODE_ONLY unless NONE)",
                          &C::cuda_graphs, modes));
  t.push_back(text_option("gpu-profile-out", dev,
                          "--device gpu: write a per-kernel profile CSV (runs eagerly) for kvsim calibrate",
                          &C::gpu_profile_out));
  t.push_back(bool_option("prefix-caching", kv, "on | off", &C::prefix_caching));
  t.push_back(int_option("block-size", kv, "tokens per KV block", &C::block_size, 1, 1024));
  t.push_back(int_option("num-blocks", kv, "KV blocks including the null block (0: from --kv-cache-tokens or GPU memory)",
                         &C::num_blocks, 0, 1LL << 30));
  t.push_back(int_option("kv-cache-tokens", kv, "KV cache size in tokens (0: from GPU memory)", &C::kv_cache_tokens, 0,
                         1LL << 40));
  t.push_back({"gpu-memory-utilization", kv,
               "fraction of GPU memory for weights, activations and KV cache (sizes the pool by default)", false,
               set_utilization, [](const C& c) { return shortest(c.gpu_memory_utilization); }});
  t.push_back(enum_option("free-order", kv, "classic | unhashed_first", &C::free_order,
                          std::vector<std::pair<std::string, FreeOrder>>{{"classic", FreeOrder::kClassic},
                                                                         {"unhashed_first", FreeOrder::kUnhashedFirst}}));
  t.push_back(enum_option("hash", kv, "sha256_cbor | xxhash_cbor", &C::hash,
                          std::vector<std::pair<std::string, HashAlgo>>{{"sha256_cbor", HashAlgo::kSha256Cbor},
                                                                        {"xxhash_cbor", HashAlgo::kXxhashCbor}}));
  add_scheduler_and_run_rows(t);
  return t;
}

}  // namespace

ReplayConfig::ReplayConfig() {
  model = find_model_shape("llama3-8b").value();
  gpu = sim::find_gpu_spec("h100-sxm").value();
}

Status ReplayConfig::validate() const {
  if (block_size < 1 || block_size > 1024) return bad("block-size", "must be 1..1024");
  if (max_num_batched_tokens < 1) return bad("max-num-batched-tokens", "must be positive");
  if (max_num_seqs < 1) return bad("max-num-seqs", "must be positive");
  if (max_model_len < 2) return bad("max-model-len", "must be at least 2");
  if (long_prefill_token_threshold < 0) return bad("long-prefill-token-threshold", "must be >= 0");
  if (lookahead < 0) return bad("lookahead", "must be >= 0");
  if (num_blocks < 0) return bad("num-blocks", "must be >= 0");
  if (num_blocks == 1) return bad("num-blocks", "the pool needs at least 2 blocks (the null block and one more)");
  if (num_blocks > (1LL << 30)) return bad("num-blocks", "at most 2^30 blocks");
  if (kv_cache_tokens < 0) return bad("kv-cache-tokens", "must be >= 0");
  if (!(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1)) {
    return bad("gpu-memory-utilization", "must be in (0, 1]");
  }
  if (inject_fault && device != DeviceKind::kSim) return bad("inject-fault", "needs --device sim");
  if (inject_fault && verify == sim::VerifyMode::kOff) {
    return bad("inject-fault", "needs --verify fast or full (with off nothing checks the KV memory)");
  }
  CudaGraphConfig graphs;
  graphs.mode = cuda_graphs;
  graphs.max_num_seqs = max_num_seqs;
  graphs.max_num_batched_tokens = max_num_batched_tokens;
  if (Status s = kv::validate(graphs); !s.ok()) return s.with_context("--cuda-graphs: ");
  return {};
}

const std::vector<ConfigOption>& config_options() {
  static const std::vector<ConfigOption> table = make_table();
  return table;
}

Status set_option(ReplayConfig& config, std::string_view name, const std::string& value) {
  for (const ConfigOption& o : config_options()) {
    if (o.name == name) return o.set(config, value);
  }
  return Status::error("unknown option --" + std::string(name));
}

std::vector<std::pair<std::string, std::string>> describe(const ReplayConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ConfigOption& o : config_options()) out.emplace_back(std::string(o.name), o.get(config));
  return out;
}

StatusOr<sim::GpuSpec> find_gpu(const std::string& name, const std::string& search_path, std::string* found_file) {
  found_file->clear();
  auto builtin = sim::find_gpu_spec(name);
  if (builtin.ok()) return builtin;
  const std::string dirs = search_path.empty() ? "presets" : search_path + ":presets";
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, colon - start) + "/" + name + ".gpu";
    start = colon + 1;
    std::FILE* f = std::fopen(candidate.c_str(), "rb");
    if (f == nullptr) continue;
    std::fclose(f);
    auto spec = sim::load_gpu_spec_file(candidate);
    if (!spec.ok()) return spec.status();
    if (spec->name != name) {
      return Status::error(candidate + " names its preset '" + spec->name + "', not '" + name + "'");
    }
    *found_file = candidate;
    return spec;
  }
  return builtin.status();
}

}  // namespace kv::replay
