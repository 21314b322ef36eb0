#include "replay/replay_config.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "model/mamba_cache_mode.h"
#include "model/util/check.h"
#include "model/util/format_number.h"
#include "model/util/parse_number.h"
#include "model/util/parse_size.h"
#include "replay/kv_transfer.h"
#include "replay/model_config.h"
#include "replay/option_error.h"

namespace kv::replay {

namespace {

// Whole-string integer in [lo, hi].
Status read_int(std::string_view option, const std::string& text, std::int64_t lo, std::int64_t hi, std::int64_t* out) {
  const std::optional<std::int64_t> v = parse_int64(text);
  if (!v) return option_error(option, "'" + text + "' is not an integer");
  if (*v < lo || *v > hi) {
    return option_error(option, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + text);
  }
  *out = *v;
  return {};
}

Status read_on_off(std::string_view option, const std::string& text, bool* out) {
  if (text == "on" || text == "true")
    *out = true;
  else if (text == "off" || text == "false")
    *out = false;
  else
    return option_error(option, "must be on or off, got '" + text + "'");
  return {};
}

std::string on_off(bool b) { return b ? "on" : "off"; }

std::string shortest(double v) { return shortest_number(v); }

// A bound in a message: 0.0001, 1000, 1e+09.
std::string bound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A row's field: which member of which part of the config the row reads and writes, as a
// generic lambda that serves the setter (ReplayConfig&) and the getter (const ReplayConfig&).
#define KV_FIELD(path) \
  [](auto& c) -> auto& { return c.path; }

template <typename Field>
ConfigOption int_option(std::string_view name, std::string_view group, std::string_view help, Field field,
                        std::int64_t lo, std::int64_t hi) {
  return {name,
          group,
          help,
          false,
          [=](ReplayConfig& c, const std::string& t) {
            std::int64_t v = 0;
            if (Status s = read_int(name, t, lo, hi, &v); !s.ok()) return s;
            field(c) = static_cast<std::remove_reference_t<decltype(field(c))>>(v);
            return Status();
          },
          [=](const ReplayConfig& c) { return std::to_string(field(c)); },
          [=](const ReplayConfig& c) {
            const auto v = static_cast<std::int64_t>(field(c));
            return v < lo || v > hi ? option_error(name, "must be in " + std::to_string(lo) + ".." +
                                                             std::to_string(hi) + ", got " + std::to_string(v))
                                    : Status();
          }};
}

// A byte size (parse_byte_size) or token count (parse_token_count) in [lo, hi]; `forms` names
// the accepted spellings in help and errors. The getter prints the resolved whole number.
template <typename Field>
ConfigOption size_option(std::string_view name, std::string_view group, std::string_view help, Field field,
                         std::int64_t lo, std::int64_t hi, std::optional<std::int64_t> (*parse)(std::string_view),
                         std::string_view forms) {
  ConfigOption o = int_option(name, group, help, field, lo, hi);
  o.set = [=](ReplayConfig& c, const std::string& t) {
    const std::optional<std::int64_t> v = parse(t);
    if (!v) return option_error(name, "'" + t + "' is not a size (" + std::string(forms) + ")");
    if (*v < lo || *v > hi) {
      return option_error(name, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + t + " = " +
                                    std::to_string(*v));
    }
    field(c) = static_cast<std::remove_reference_t<decltype(field(c))>>(*v);
    return Status();
  };
  return o;
}

template <typename Field>
ConfigOption bool_option(std::string_view name, std::string_view group, std::string_view help, Field field,
                         bool is_switch = false, bool inverted = false) {
  return {name,
          group,
          help,
          is_switch,
          [=](ReplayConfig& c, const std::string& t) {
            bool v = false;
            if (Status s = read_on_off(name, t, &v); !s.ok()) return s;
            field(c) = v != inverted;
            return Status();
          },
          [=](const ReplayConfig& c) { return on_off(field(c) != inverted); }};
}

template <typename Field>
ConfigOption text_option(std::string_view name, std::string_view group, std::string_view help, Field field) {
  return {name,
          group,
          help,
          false,
          [=](ReplayConfig& c, const std::string& t) {
            field(c) = t;
            return Status();
          },
          [=](const ReplayConfig& c) { return std::string(field(c)); }};
}

// An option whose value is one of a fixed set of names.
template <typename Field, typename Enum>
ConfigOption enum_option(std::string_view name, std::string_view group, std::string_view help, Field field,
                         std::vector<std::pair<std::string, Enum>> names) {
  return {name,
          group,
          help,
          false,
          [=](ReplayConfig& c, const std::string& t) {
            std::string valid;
            for (const auto& [text, value] : names) {
              if (text == t) {
                field(c) = value;
                return Status();
              }
              valid += (valid.empty() ? "" : ", ") + text;
            }
            return option_error(name, "must be one of " + valid + ", got '" + t + "'");
          },
          [=](const ReplayConfig& c) {
            for (const auto& [text, value] : names) {
              if (value == field(c)) return text;
            }
            return std::string("?");
          }};
}

Status set_model(ReplayConfig& c, const std::string& name) {
  auto shape = find_model_shape(name);
  if (!shape.ok()) return shape.status().with_context("--model: ");
  c.device.model = *shape;
  // vLLM turns prefix caching off for an encoder-decoder model; an explicit
  // --prefix-caching on given after --model is refused by validate().
  if (shape->cross_attention) c.scheduler.cache.enable_caching = false;
  return {};
}

Status set_model_config(ReplayConfig& c, const std::string& path) {
  auto shape = load_model_config(path);
  if (!shape.ok()) return shape.status().with_context("--model-config: ");
  c.device.model = *shape;
  c.device.model_config = path;
  return {};
}

Status set_host_overhead(ReplayConfig& c, const std::string& t) {
  if (t != "gpu") {
    auto terms = host_overhead_terms(t);
    if (!terms.ok()) return terms.status();
  }
  c.device.host_overhead = t;
  return {};
}

// The names of the catalogs, for the help of --model and --gpu (never written by hand).
std::string model_names() {
  std::string out;
  for (const ModelShape& m : model_shapes()) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

std::string gpu_names() {
  std::string out;
  for (const sim::GpuSpec& g : sim::gpu_presets()) out += (out.empty() ? "" : ", ") + g.name;
  return out;
}

Status set_dtype(ReplayConfig& c, const std::string& name) {
  auto d = parse_dtype(name);
  if (!d.ok()) return d.status().with_context("--dtype: ");
  c.device.dtype = *d;
  return {};
}

Status set_kv_cache_dtype(ReplayConfig& c, const std::string& name) {
  if (name == "auto") {
    c.device.kv_cache_dtype.reset();
    return {};
  }
  auto d = parse_dtype(name);
  if (!d.ok()) return Status::error("--kv-cache-dtype: " + d.status().message() + " or auto");
  c.device.kv_cache_dtype = *d;
  return {};
}

Status set_gpu(ReplayConfig& c, const std::string& name) {
  std::string file;
  auto gpu = find_gpu(name, c.device.gpu_search_path, &file);
  if (!gpu.ok()) return gpu.status().with_context("--gpu: ");
  c.device.gpu = *gpu;
  c.device.gpu_preset_file = file;
  return {};
}

Status set_gpu_file(ReplayConfig& c, const std::string& path) {
  auto gpu = sim::load_gpu_spec_file(path);
  if (!gpu.ok()) return gpu.status().with_context("--gpu-preset-file: ");
  c.device.gpu = *gpu;
  c.device.gpu_preset_file = path;
  return {};
}

// The ranges of the rows read by hand: each stated once, for set() and for check.
bool utilization_ok(double v) { return v > 0 && v <= 1; }
bool percentile_ok(double p) { return p > 0 && p <= 100; }
bool slo_ok(double ms) { return ms < 0 || (ms >= kMinMs && ms <= kMaxMs); }  // < 0: no bound

Status set_utilization(ReplayConfig& c, const std::string& t) {
  const double v = parse_finite_double(t).value_or(0);
  if (!utilization_ok(v)) return option_error("gpu-memory-utilization", "must be a number in (0, 1], got '" + t + "'");
  c.device.gpu_memory_utilization = v;
  return {};
}

Status check_utilization(const ReplayConfig& c) {
  const double v = c.device.gpu_memory_utilization;
  return utilization_ok(v) ? Status() : option_error("gpu-memory-utilization", "must be in (0, 1], got " + bound(v));
}

// A finite number in [lo, hi] (lo > 0), or "inf" where `allow_inf`.
Status read_positive(std::string_view option, const std::string& t, bool allow_inf, double lo, double hi, double* out) {
  if (allow_inf && (t == "inf" || t == "infinity")) {
    *out = std::numeric_limits<double>::infinity();
    return {};
  }
  const std::optional<double> v = parse_finite_double(t);
  if (!v || *v < lo || *v > hi) {
    return option_error(option, "must be a number from " + bound(lo) + " to " + bound(hi) +
                                    (allow_inf ? " or inf" : "") + ", got '" + t + "'");
  }
  *out = *v;
  return {};
}

std::vector<std::string> split(const std::string& text, const std::string& separators) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text) {
    if (separators.find(ch) != std::string::npos) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

Status set_percentiles(ReplayConfig& c, const std::string& t) {
  std::vector<double> ps;
  for (const std::string& part : split(t, ", ")) {
    const double p = parse_finite_double(part).value_or(0);
    if (!percentile_ok(p)) {
      return option_error("metric-percentiles", "'" + part + "' is not a percentile in (0, 100]");
    }
    ps.push_back(p);
  }
  if (ps.empty()) return option_error("metric-percentiles", "give at least one percentile, e.g. 50,90,99");
  c.run.replay.metric_percentiles = ps;
  return {};
}

Status check_percentiles(const ReplayConfig& c) {
  for (double p : c.run.replay.metric_percentiles) {
    if (!percentile_ok(p)) return option_error("metric-percentiles", "each must be in (0, 100], got " + bound(p));
  }
  return {};
}

std::string join_numbers(const std::vector<double>& v) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : ",") + shortest(x);
  return out;
}

// --goodput "ttft:MS tpot:MS e2el:MS" (any subset; commas or spaces between).
Status set_goodput(ReplayConfig& c, const std::string& t) {
  GoodputSlo g;
  for (const std::string& item : split(t, ", ")) {
    const std::size_t colon = item.find(':');
    const std::string key = item.substr(0, colon);
    double v = 0;
    if (colon == std::string::npos ||
        !read_positive("goodput", item.substr(colon + 1), false, kMinMs, kMaxMs, &v).ok()) {
      return option_error("goodput", "'" + item + "' is not METRIC:MILLISECONDS (ttft, tpot or e2el)");
    }
    if (key == "ttft")
      g.ttft_ms = v;
    else if (key == "tpot")
      g.tpot_ms = v;
    else if (key == "e2el")
      g.e2el_ms = v;
    else
      return option_error("goodput", "unknown metric '" + key + "' (valid: ttft, tpot, e2el)");
  }
  c.run.replay.goodput = g;
  return {};
}

Status check_goodput(const ReplayConfig& c) {
  const GoodputSlo& g = c.run.replay.goodput;
  for (double ms : {g.ttft_ms, g.tpot_ms, g.e2el_ms}) {
    if (!slo_ok(ms))
      return option_error("goodput", "each bound must be from " + bound(kMinMs) + " to " + bound(kMaxMs) + " ms");
  }
  return {};
}

std::string goodput_text(const GoodputSlo& g) {
  std::string out;
  if (g.ttft_ms >= 0) out += "ttft:" + shortest(g.ttft_ms);
  if (g.tpot_ms >= 0) out += std::string(out.empty() ? "" : " ") + "tpot:" + shortest(g.tpot_ms);
  if (g.e2el_ms >= 0) out += std::string(out.empty() ? "" : " ") + "e2el:" + shortest(g.e2el_ms);
  return out;
}

// A number option in [lo, hi]; "inf" where allow_inf, "0" where zero_is_default.
template <typename Field>
ConfigOption positive_option(std::string_view name, std::string_view group, std::string_view help, Field field,
                             bool allow_inf, bool zero_is_default, double lo, double hi) {
  return {name,
          group,
          help,
          false,
          [=](ReplayConfig& c, const std::string& t) {
            if (zero_is_default && t == "0") {
              field(c) = 0;
              return Status();
            }
            return read_positive(name, t, allow_inf, lo, hi, &field(c));
          },
          [=](const ReplayConfig& c) { return std::isinf(field(c)) ? std::string("inf") : shortest(field(c)); },
          [=](const ReplayConfig& c) {
            const double v = field(c);
            if ((zero_is_default && v == 0) || (allow_inf && std::isinf(v) && v > 0) || (v >= lo && v <= hi)) {
              return Status();
            }
            return option_error(name, "must be " + std::string(zero_is_default ? "0 or " : "") + "from " + bound(lo) +
                                          " to " + bound(hi) + (allow_inf ? " or inf" : "") + ", got " + bound(v));
          }};
}

void add_event_options(std::vector<ConfigOption>& t) {
  const std::string_view ev = "KV events";
  t.push_back(text_option("kv-events", ev, "write the KV-cache events to FILE, one JSON batch per step (JSONL)",
                          KV_FIELD(events.file)));
  t.push_back(text_option("kv-events-zmq", ev,
                          "publish the KV-cache events on a ZeroMQ PUB socket in vLLM's wire format "
                          "(tcp://*:5557 binds, tcp://host:port connects)",
                          KV_FIELD(events.zmq.endpoint)));
  t.push_back(text_option("kv-events-replay", ev,
                          "ROUTER endpoint that replays missed event batches (vLLM's replay_endpoint)",
                          KV_FIELD(events.zmq.replay_endpoint)));
  t.push_back(text_option("kv-events-topic", ev, "topic frame of every published batch", KV_FIELD(events.zmq.topic)));
  t.push_back(int_option("kv-events-buffer-steps", ev, "event batches kept for replay requests",
                         KV_FIELD(events.zmq.buffer_steps), 1, 1LL << 30));
  t.push_back(int_option("kv-events-linger-ms", ev,
                         "after the run, keep answering replay requests this long (milliseconds)",
                         KV_FIELD(events.zmq.linger_ms), 0, 3600 * 1000));
  t.push_back(int_option("kv-events-startup-ms", ev,
                         "before the first step, wait this long for subscribers to connect (a PUB socket "
                         "drops what it sends before they join)",
                         KV_FIELD(events.zmq.startup_ms), 0, 3600 * 1000));
}

// The "Fleet" rows (replay/fleet_options.h): kvsim fleet, and sweeps and capacity over fleets.
void add_fleet_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view fl = "Fleet";
  t.push_back(int_option("replicas", fl, "engines behind the router (kvsim fleet; sweep and capacity run fleets)",
                         KV_FIELD(fleet.replicas), 1, 4096));
  t.push_back({"router", fl,
               "round-robin | random | least-requests | least-kv | session | dynamo | llm-d-precise | llm-d-approx | "
               "sglang (docs/fleet.md)",
               false,
               [](C& c, const std::string& v) {
                 c.fleet.router = v;
                 return c.fleet.validate();
               },
               [](const C& c) { return c.fleet.router; }});
  t.push_back({"router-params", fl, "the router's parameters, e.g. 'overlap_score_weight=2 router_temperature=0.5'",
               false,
               [](C& c, const std::string& v) {
                 auto params = parse_router_params(v);
                 if (!params.ok()) return params.status();
                 c.fleet.router_params = std::move(*params);
                 return Status();
               },
               [](const C& c) { return router_params_text(c.fleet.router_params); }});
  t.push_back(positive_option("event-delay-ms", fl,
                              "KV events and load reports reach the router this many ms after the step that made them",
                              KV_FIELD(fleet.event_delay_ms), false, true, 1e-6, 3.6e6));
  t.push_back(text_option("replica-options", fl,
                          "heterogeneous fleets: 'RANGE:OPTION=VALUE,... RANGE:...' (RANGE R or A-B), engine "
                          "options those replicas run with, e.g. '0-3:gpu=h100-sxm 4-7:gpu=l40s,tp=2'",
                          KV_FIELD(fleet.replica_options)));
  t.push_back(int_option("prefill-replicas", fl,
                         "disaggregated prefill: replicas 0..N-1 prefill, the others decode (0: none)",
                         KV_FIELD(fleet.prefill_replicas), 0, 4095));
  t.push_back({"kv-transfer-link", fl,
               "prefill-to-decode KV link: ib-ndr | roce-200 | nvlink-h100 | pcie4 (docs/fleet.md) or GB/s", false,
               [](C& c, const std::string& v) {
                 auto link = find_kv_transfer_link(v);
                 if (!link.ok()) return link.status();
                 c.fleet.kv_transfer_link = v;
                 return Status();
               },
               [](const C& c) { return c.fleet.kv_transfer_link; }});
  t.push_back(int_option("pd-threshold", fl,
                         "with --prefill-replicas: prompts of fewer tokens skip the prefill pool (0: none do)",
                         KV_FIELD(fleet.pd_threshold), 0, 1LL << 40));
  t.push_back(positive_option("event-loss", fl,
                              "probability that one batch of events (or one load report) never reaches the router",
                              KV_FIELD(fleet.event_loss), false, true, 1e-12, 0.999999));
}

Status set_frontend(ReplayConfig& c, const std::string& t) {
  auto model = parse_frontend(t);
  if (!model.ok()) return model.status();
  c.run.replay.frontend = *model;
  return {};
}

// The rows of the "Load and results" group (replay/arrivals.h, replay/serving_metrics.h).
void add_load_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view load = "Load and results";
  t.push_back(positive_option("request-rate", load,
                              "requests per second with gamma-distributed gaps (see --burstiness); inf: all at "
                              "once; 0: the trace's own timestamps",
                              KV_FIELD(arrivals.request_rate), true, true, kMinRequestRate, kMaxRequestRate));
  t.push_back(positive_option("burstiness", load, "gamma shape of the gaps of --request-rate (1: Poisson)",
                              KV_FIELD(arrivals.burstiness), false, false, kMinBurstiness, kMaxBurstiness));
  t.push_back(positive_option("rate-scale", load, "replay the trace's timestamps X times faster",
                              KV_FIELD(arrivals.rate_scale), false, false, kMinRateScale, kMaxRateScale));
  t.push_back(int_option("max-concurrency", load, "requests in flight at most (0: no limit)",
                         KV_FIELD(run.replay.max_concurrency), 0, 1LL << 30));
  t.push_back({"metric-percentiles", load, "percentiles of TTFT, TPOT, ITL and E2EL in result.json", false,
               set_percentiles, [](const C& c) { return join_numbers(c.run.replay.metric_percentiles); },
               check_percentiles});
  t.push_back({"goodput", load, "SLOs of goodput, e.g. 'ttft:500 tpot:50' (ms; ttft, tpot, e2el)", false, set_goodput,
               [](const C& c) { return goodput_text(c.run.replay.goodput); }, check_goodput});
  t.push_back({"frontend", load,
               "the serving front end before and after the engine: none, vllm-v1 (measured terms, "
               "docs/fidelity.md), or REQUEST_NS,PROMPT_TOKEN_NS,OUTPUT_TOKEN_NS,STEP_NS[,LATENCY_NS]: the engine sees "
               "a request after REQUEST + PROMPT_TOKEN * prompt tokens (one lane, in order) plus LATENCY (no lane), "
               "the client a step's tokens after STEP + OUTPUT_TOKEN * tokens (one lane, in order); TTFT, TPOT, ITL "
               "and E2EL include it",
               false, set_frontend, [](const C& c) { return c.run.replay.frontend.name; }});
  t.push_back(positive_option("overload-ttft-ms", load, "a median TTFT above this marks the run overloaded",
                              KV_FIELD(run.replay.overload_ttft_ms), false, false, kMinMs, kMaxMs));
}

Status set_fault(ReplayConfig& c, const std::string& t) {
  auto spec = sim::parse_fault_spec(t);
  if (!spec.ok()) return spec.status().with_context("--inject-fault: ");
  c.device.inject_fault = *spec;
  return {};
}

Status set_host_link(ReplayConfig& c, const std::string& t) {
  auto link = sim::parse_link(t);
  if (!link.ok()) return link.status().with_context("--host-link: ");
  c.tiers.host_link = *link;
  return {};
}

// The rows of the "KV tiers" group (docs/tiers.md).
void add_tier_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view tiers = "KV tiers";
  static const std::string host_help =
      std::string("host-memory tier for blocks evicted from GPU memory (0: none); ") + kByteSizeForms;
  static const std::string disk_help = std::string("disk tier below the host tier (0: none); ") + kByteSizeForms;
  t.push_back(size_option("host-cache-bytes", tiers, host_help, KV_FIELD(tiers.host_cache_bytes), 0, 1LL << 60,
                          parse_byte_size, kByteSizeForms));
  t.push_back(size_option("disk-cache-bytes", tiers, disk_help, KV_FIELD(tiers.disk_cache_bytes), 0, 1LL << 60,
                          parse_byte_size, kByteSizeForms));
  t.push_back({"host-link", tiers,
               "GPU-host link: pcie4 (31.5 GB/s, 10 us), pcie5 (63 GB/s, 10 us), nvlink-c2c (450 GB/s, 2 us), or "
               "GBPS:LATENCY_US",
               false, set_host_link, [](const C& c) { return c.tiers.host_link.name; }});
  t.push_back(positive_option("disk-read-gbps", tiers, "disk tier's read bandwidth in GB/s",
                              KV_FIELD(tiers.disk_read_gbps), false, false, 1e-3, 1e6));  // 1 MB/s to 1 PB/s
  t.push_back(int_option("disk-latency-us", tiers, "disk tier's latency per batched read, in microseconds",
                         KV_FIELD(tiers.disk_latency_us), 0, 1LL << 30));
  t.push_back(enum_option(
      "tier-store", tiers,
      "on-evict: save a block when GPU memory evicts it; every-full-block: save each block "
      "once computed",
      KV_FIELD(tiers.store),
      std::vector<std::pair<std::string, TierStorePolicy>>{{"on-evict", TierStorePolicy::kOnEvict},
                                                           {"every-full-block", TierStorePolicy::kEveryFullBlock}}));
  t.push_back(enum_option("tier-load", tiers,
                          "overlap: a load runs beside the step's compute, layer by layer; stall: the step waits "
                          "for it",
                          KV_FIELD(tiers.load),
                          std::vector<std::pair<std::string, sim::TierLoadMode>>{
                              {"overlap", sim::TierLoadMode::kOverlap}, {"stall", sim::TierLoadMode::kStall}}));
}

Status set_spec_method(ReplayConfig& c, const std::string& t) {
  std::string name = t;
  std::replace(name.begin(), name.end(), '-', '_');  // draft-model: vLLM's draft_model
  const std::optional<SpecMethod> m = parse_spec_method(name);
  if (!m) {
    return option_error(
        "speculative-method",
        "must be one of none, eagle, eagle3, mtp, dspark, dflash, draft-model, ngram, suffix, medusa, got '" + t + "'");
  }
  c.scheduler.speculative.method = *m;
  return {};
}

Status set_acceptance_rates(ReplayConfig& c, const std::string& t) {
  std::vector<double> rates;
  for (const std::string& part : split(t, ", ")) {
    const std::optional<double> v = parse_finite_double(part);
    if (!v || *v < 0 || *v > 1)
      return option_error("acceptance-rates", "'" + part + "' is not a probability in [0, 1]");
    rates.push_back(*v);
  }
  c.scheduler.speculative.acceptance_rates = rates;
  return {};
}

// The speculative-decoding rows of the "Scheduler" group (docs/semantics.md §5.9); the
// simulated device draws the acceptance (sim/sim_device.h).
void add_speculative_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view sch = "Scheduler";
  t.push_back({"speculative-method", sch,
               "speculative decoding's drafter: none | eagle | eagle3 | mtp | dspark | dflash | draft-model | ngram | "
               "suffix | medusa (vLLM's speculative_config method)",
               false, set_spec_method, [](const C& c) {
                 std::string name = to_string(c.scheduler.speculative.method);
                 std::replace(name.begin(), name.end(), '_', '-');
                 return name;
               }});
  t.push_back(int_option("num-speculative-tokens", sch, "K: drafts proposed per request and step",
                         KV_FIELD(scheduler.speculative.num_speculative_tokens), 0, 1024));
  t.push_back(bool_option("parallel-drafting", sch, "the drafter proposes its K drafts in one forward",
                          KV_FIELD(scheduler.speculative.parallel_drafting)));
  t.push_back({"acceptance-rates", sch,
               "P1,P2,...: per draft position, the probability the simulated sampler accepts it given every earlier "
               "one was (K of them; seeded by --seed)",
               false, set_acceptance_rates,
               [](const C& c) { return join_numbers(c.scheduler.speculative.acceptance_rates); }});
}

// The rows of the "Scheduler" group: the core's SchedulerConfig.
void add_scheduler_rows(std::vector<ConfigOption>& t) {
  const std::string_view sch = "Scheduler";
  t.push_back(size_option("max-num-batched-tokens", sch, "token budget per step (65536, 8k, 1e5)",
                          KV_FIELD(scheduler.max_num_batched_tokens), 1, 1LL << 30, parse_token_count,
                          kTokenCountForms));
  t.push_back(int_option("max-num-seqs", sch, "requests per step", KV_FIELD(scheduler.max_num_seqs), 1, 1 << 20));
  t.push_back(size_option("max-model-len", sch, "longest sequence in tokens (131072, 128k)",
                          KV_FIELD(scheduler.cache.max_model_len), 2, 1LL << 30, parse_token_count, kTokenCountForms));
  t.push_back(bool_option("mamba-prefix-split", sch,
                          "on | off: Mamba align mode also ends a chunk before the lookup's shared-prefix boundary "
                          "(off: vLLM before that rule)",
                          KV_FIELD(scheduler.mamba_align_prefix_split)));
  t.push_back(bool_option("no-chunked-prefill", sch, "a prompt must fit one step's budget",
                          KV_FIELD(scheduler.enable_chunked_prefill), true, true));
  t.push_back(size_option("long-prefill-token-threshold", sch, "cap on one request's tokens per step (0: none; 2k)",
                          KV_FIELD(scheduler.long_prefill_token_threshold), 0, 1LL << 30, parse_token_count,
                          kTokenCountForms));
  t.push_back(enum_option("policy", sch, "fcfs | priority", KV_FIELD(scheduler.policy),
                          std::vector<std::pair<std::string, SchedulingPolicy>>{
                              {"fcfs", SchedulingPolicy::kFcfs}, {"priority", SchedulingPolicy::kPriority}}));
  t.push_back(int_option("lookahead", sch, "slots reserved per step for speculative tokens",
                         KV_FIELD(scheduler.num_lookahead_tokens), 0, 1024));
  t.push_back(bool_option("full-sequence-gate", sch, "on: admit a request only if its whole prompt's blocks are free",
                          KV_FIELD(scheduler.full_sequence_gate)));
  add_speculative_rows(t);
}

// The rows of the "Run" group.
void add_run_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view run = "Run";
  t.push_back(int_option("seed", run, "seed of generated output tokens and of arrival gaps", KV_FIELD(run.seed), 0,
                         std::numeric_limits<std::int64_t>::max()));
  t.push_back(int_option("limit", run, "replay only the first N requests (0 = all)", KV_FIELD(run.limit), 0,
                         std::numeric_limits<std::int64_t>::max()));
  t.push_back(int_option("max-steps", run, "stop with an error after N steps (0: no limit)",
                         KV_FIELD(run.replay.max_steps), 0, std::numeric_limits<std::int64_t>::max()));
  t.push_back(bool_option("prepare-prompts", run,
                          "on | off: expand and hash the prompts next in line on a second thread while a step runs, "
                          "as vLLM's input thread does (decisions and outputs are unchanged)",
                          KV_FIELD(scheduler.prepare_prompts_ahead)));
  t.push_back(bool_option("check-invariants", run, "check every core invariant after every step",
                          KV_FIELD(run.replay.check_invariants_every_step), true));
  t.push_back({"inject-fault", run,
               "KIND@STEP[:REQUEST]: plant a fault in the simulator's KV memory to test the verifier; KIND is "
               "overwrite (a stray store into the request's position 0), drop (its first write of the step is "
               "skipped), misdirect (that write lands in slot 0), swap (its first and last table entries); it "
               "fires at the first step >= STEP with a target (default request: the step's first)",
               false, set_fault,
               [](const C& c) { return c.device.inject_fault ? c.device.inject_fault->to_string() : ""; }});
}

// The rows of the "Device and model" group that pick the device, the model and the GPU.
void add_model_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view dev = "Device and model";
  t.push_back(enum_option(
      "device", dev, "sim | gpu", KV_FIELD(device.kind),
      std::vector<std::pair<std::string, DeviceKind>>{{"sim", DeviceKind::kSim}, {"gpu", DeviceKind::kGpu}}));
  static const std::string model_help = "model preset: " + model_names() + " (or --model-config)";
  t.push_back({"model", dev, model_help, false, set_model, [](const C& c) { return c.device.model.name; }});
  t.push_back({"model-config", dev,
               "a Hugging Face config.json (Llama, Qwen, Mistral, gpt-oss, Gemma shapes; replay/model_config.h); "
               "replaces --model",
               false, set_model_config, [](const C& c) { return c.device.model_config; }});
  t.push_back(int_option("tp", dev,
                         "tensor-parallel ranks: weights and KV heads split per rank, two all-reduces per layer "
                         "(docs/fidelity.md); the pool is sized per rank",
                         KV_FIELD(device.tensor_parallel_size), 1, 1024));
  t.push_back({"dtype", dev,
               "bf16 | fp16 | fp8 | fp4: format of the weights and GEMM inputs (vLLM's --dtype, or its FP8/FP4 "
               "quantized checkpoints); sizes the weights in memory and the cost model's bytes and peak FLOPS",
               false, set_dtype, [](const C& c) { return std::string(to_string(c.device.dtype)); }});
  t.push_back({"kv-cache-dtype", dev,
               "auto | bf16 | fp16 | fp8 | fp4: format of the KV cache (auto: the same as --dtype); sizes the "
               "blocks and the attention's KV bytes",
               false, set_kv_cache_dtype, [](const C& c) {
                 const std::optional<DType>& d = c.device.kv_cache_dtype;
                 return d ? std::string(to_string(*d)) : "auto";
               }});
  static const std::string gpu_help = "GPU preset of the simulator (" + gpu_names() +
                                      "), or NAME.gpu found in $KVSIM_GPU_PRESET_PATH (colon-separated) or ./presets";
  t.push_back({"gpu", dev, gpu_help, false, set_gpu, [](const C& c) { return c.device.gpu.name; }});
  t.push_back({"gpu-preset-file", dev, "GPU preset file (kvsim calibrate writes one); replaces --gpu", false,
               set_gpu_file, [](const C& c) { return c.device.gpu_preset_file; }});
}

// The rows of the "Device and model" group that shape the cost model and the device's run.
void add_cost_model_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view dev = "Device and model";
  t.push_back(text_option("profile", dev, "per-kernel profile CSV for the cost model (sim/profile_format.md)",
                          KV_FIELD(device.profile)));
  t.push_back({"host-overhead", dev,
               "host time per step: gpu (the GPU preset's terms), none, or STEP_NS,REQUEST_NS,TOKEN_NS: STEP + "
               "REQUEST * requests + TOKEN * tokens (docs/fidelity.md)",
               false, set_host_overhead, [](const C& c) { return c.device.host_overhead; }});
  t.push_back(bool_option("async-scheduling", dev,
                          "the host prepares step i+1 while the GPU runs step i (vLLM's --async-scheduling): a "
                          "step takes max(host, device) instead of host + device",
                          KV_FIELD(device.async_scheduling), true));
  t.push_back(enum_option("clock", dev,
                          "virtual: the cost model's step time drives the clock on every device; wall: measured time",
                          KV_FIELD(run.replay.clock),
                          std::vector<std::pair<std::string, ReplayOptions::Clock>>{
                              {"virtual", ReplayOptions::Clock::kVirtual}, {"wall", ReplayOptions::Clock::kWall}}));
  t.push_back(enum_option(
      "verify", dev, "shadow-KV verification: off | fast | full", KV_FIELD(device.verify),
      std::vector<std::pair<std::string, sim::VerifyMode>>{
          {"off", sim::VerifyMode::kOff}, {"fast", sim::VerifyMode::kFast}, {"full", sim::VerifyMode::kFull}}));
  std::vector<std::pair<std::string, CudaGraphMode>> modes;
  for (CudaGraphMode m : {CudaGraphMode::kNone, CudaGraphMode::kPiecewise, CudaGraphMode::kFull,
                          CudaGraphMode::kFullDecodeOnly, CudaGraphMode::kFullAndPiecewise}) {
    modes.emplace_back(to_string(m), m);
  }
  t.push_back(enum_option("cuda-graphs", dev,
                          "NONE | PIECEWISE | FULL | FULL_DECODE_ONLY | FULL_AND_PIECEWISE (the simulator; "
                          "--device gpu runs FULL_DECODE_ONLY unless NONE)",
                          KV_FIELD(device.cuda_graphs), modes));
  t.push_back(text_option("gpu-profile-out", dev,
                          "--device gpu: write a per-kernel profile CSV (runs eagerly) for kvsim calibrate",
                          KV_FIELD(device.gpu_profile_out)));
}

// The rows of the "KV cache" group: the core's KvCacheConfig and the pool's size.
void add_kv_cache_rows(std::vector<ConfigOption>& t) {
  using C = ReplayConfig;
  const std::string_view kv = "KV cache";
  t.push_back(bool_option("prefix-caching", kv, "on | off", KV_FIELD(scheduler.cache.enable_caching)));
  t.push_back(int_option("block-size", kv, "tokens per KV block", KV_FIELD(scheduler.cache.block_size), 1, 1024));
  t.push_back(int_option("sliding-window", kv,
                         "window in tokens of every sliding-window layer of a hybrid --model (0: the model's)",
                         KV_FIELD(device.sliding_window), 0, 1 << 30));
  t.push_back({"mamba-cache-mode", kv,
               "auto | none | align | all: how a --model's Mamba groups keep states (auto: align with "
               "--prefix-caching on, none with it off, as vLLM)",
               false,
               [](C& c, const std::string& text) {
                 const std::optional<MambaCacheMode> mode = parse_mamba_cache_mode(text);
                 if (!mode && text != "auto") {
                   return option_error("mamba-cache-mode", "must be auto, none, align or all, got '" + text + "'");
                 }
                 c.device.mamba_cache_mode = mode;
                 return Status();
               },
               [](const C& c) {
                 return c.device.mamba_cache_mode ? std::string(to_string(*c.device.mamba_cache_mode))
                                                  : std::string("auto");
               }});
  t.push_back(int_option("num-blocks", kv,
                         "KV blocks including the null block (0: from --kv-cache-tokens or GPU memory)",
                         KV_FIELD(scheduler.cache.num_blocks), 0, 1LL << 30));
  static const std::string kv_tokens_help = std::string("KV cache size (0: from GPU memory); ") + kTokenCountForms;
  t.push_back(size_option("kv-cache-tokens", kv, kv_tokens_help, KV_FIELD(device.kv_cache_tokens), 0, 1LL << 40,
                          parse_token_count, kTokenCountForms));
  t.push_back({"gpu-memory-utilization", kv,
               "fraction of GPU memory for weights, activations and KV cache (sizes the pool by default)", false,
               set_utilization, [](const C& c) { return shortest(c.device.gpu_memory_utilization); },
               check_utilization});
  t.push_back(enum_option("free-order", kv, "classic | unhashed_first", KV_FIELD(scheduler.cache.free_order),
                          std::vector<std::pair<std::string, FreeOrder>>{
                              {"classic", FreeOrder::kClassic}, {"unhashed_first", FreeOrder::kUnhashedFirst}}));
  t.push_back(enum_option(
      "eviction-policy", kv, "lru | lfu | slru | leaf-lru | priority (docs/policies.md; non-lru ignores --free-order)",
      KV_FIELD(scheduler.cache.eviction_policy),
      std::vector<std::pair<std::string, EvictionPolicyKind>>{{"lru", EvictionPolicyKind::kLru},
                                                              {"lfu", EvictionPolicyKind::kLfu},
                                                              {"slru", EvictionPolicyKind::kSlru},
                                                              {"leaf-lru", EvictionPolicyKind::kLeafLru},
                                                              {"priority", EvictionPolicyKind::kPriority}}));
  t.push_back(enum_option("hash", kv, "sha256_cbor | xxhash_cbor", KV_FIELD(scheduler.hash_algo),
                          std::vector<std::pair<std::string, HashAlgo>>{{"sha256_cbor", HashAlgo::kSha256Cbor},
                                                                        {"xxhash_cbor", HashAlgo::kXxhashCbor}}));
}

// Every row, in the order of `kvsim replay --help` and of describe().
std::vector<ConfigOption> make_table() {
  std::vector<ConfigOption> t;
  add_model_rows(t);
  add_cost_model_rows(t);
  add_kv_cache_rows(t);
  add_tier_rows(t);
  add_scheduler_rows(t);
  add_run_rows(t);
  add_load_rows(t);
  add_event_options(t);
  add_fleet_rows(t);
  return t;
}

#undef KV_FIELD

}  // namespace

ReplayConfig::ReplayConfig() {
  scheduler.cache.max_model_len = 131072;  // KvCacheConfig's 1 << 20 is a core test default
  scheduler.prepare_prompts_ahead = true;  // the core's default is off (one thread)
}

int ReplayConfig::block_size() const {
  const int requested = scheduler.cache.block_size;
  if (!hybrid_kv_cache()) return requested;
  return effective_model().attention_block_size(requested, num_speculative_tokens());
}

int ReplayConfig::num_speculative_tokens() const {
  return scheduler.speculative.enabled() ? scheduler.speculative.num_speculative_tokens : 0;
}

MambaCacheMode ReplayConfig::mamba_cache_mode() const {
  if (device.mamba_cache_mode) return *device.mamba_cache_mode;
  return scheduler.cache.enable_caching ? MambaCacheMode::kAlign : MambaCacheMode::kNone;
}

StatusOr<std::vector<KvCacheGroupSpec>> ReplayConfig::kv_cache_groups() const {
  // vLLM's MambaSpec: one speculative state block per draft token when speculation is on.
  return effective_model().kv_cache_groups(block_size(), mamba_cache_mode(), scheduler.cache.max_model_len,
                                           num_speculative_tokens());
}

namespace {

// Speculative decoding: what vLLM's SpeculativeConfig refuses, named by option, and the rates.
Status validate_speculative(const SchedulerConfig& s) {
  const SpeculativeConfig& spec = s.speculative;
  const int k = spec.num_speculative_tokens;
  if (!spec.enabled()) {
    if (k != 0) return option_error("num-speculative-tokens", "needs --speculative-method");
    if (spec.parallel_drafting) return option_error("parallel-drafting", "needs --speculative-method");
    if (!spec.acceptance_rates.empty()) return option_error("acceptance-rates", "needs --speculative-method");
    return {};
  }
  if (k < 1) return option_error("num-speculative-tokens", "must be at least 1 with --speculative-method");
  if (Status st = spec.validate(); !st.ok()) return st.with_context("--speculative-method: ");
  if (static_cast<int>(spec.acceptance_rates.size()) != k) {
    return option_error("acceptance-rates", "give one rate per draft position: " + std::to_string(k) +
                                                " for --num-speculative-tokens " + std::to_string(k) + ", got " +
                                                std::to_string(spec.acceptance_rates.size()));
  }
  if (s.num_lookahead_tokens != 0 && s.num_lookahead_tokens != spec.num_lookahead_tokens()) {
    return option_error("lookahead", "contradicts --speculative-method " + std::string(to_string(spec.method)) + " (" +
                                         std::to_string(spec.num_lookahead_tokens()) + " slots)");
  }
  if (s.max_num_scheduled_tokens() < 1) {
    return option_error("num-speculative-tokens",
                        "the drafter's slots per sequence times --max-num-seqs leave no token of "
                        "--max-num-batched-tokens for a step");
  }
  return {};
}

// The scheduler's rules beyond its rows' ranges (the core's SchedulerConfig::validate() is
// vLLM's start-up refusal, which a replay does not apply).
Status validate_scheduler(const SchedulerConfig& s) {
  if (s.cache.num_blocks == 1) {
    return option_error("num-blocks", "the pool needs at least 2 blocks (the null block and one more)");
  }
  return validate_speculative(s);
}

// Every row's range (ConfigOption::check), in table order.
Status validate_ranges(const ReplayConfig& c) {
  for (const ConfigOption& o : config_options()) {
    if (!o.check) continue;
    if (Status s = o.check(c); !s.ok()) return s;
  }
  return {};
}

// The ranges, then the parts one by one, each with its own rules.
Status validate_parts(const ReplayConfig& c) {
  if (Status s = validate_ranges(c); !s.ok()) return s;
  if (Status s = validate_scheduler(c.scheduler); !s.ok()) return s;
  if (Status s = c.device.validate(); !s.ok()) return s;
  const int block_size = c.block_size();
  if (c.device.kv_cache_tokens > 0 && c.device.kv_cache_tokens < block_size) {
    return option_error("kv-cache-tokens", std::to_string(c.device.kv_cache_tokens) +
                                               " tokens do not fill one block of --block-size " +
                                               std::to_string(block_size) + ": the pool would hold no request");
  }
  if (Status s = c.arrivals.validate(); !s.ok()) return s;
  if (Status s = c.events.validate(); !s.ok()) return s;
  if (Status s = c.fleet.validate(); !s.ok()) return s;
  return c.tiers.validate();
}

// The largest block a Mamba model's state may raise --block-size to (the shadow memory keeps a
// fingerprint per slot of every block).
constexpr int kMaxMambaBlock = 1 << 16;

// A hybrid model's groups under the scheduler's one block size.
Status validate_hybrid_groups(const ReplayConfig& c) {
  const ModelShape model = c.effective_model();
  if (model.has_mamba() && c.tiers_enabled()) {
    return option_error("host-cache-bytes", c.device.model.name +
                                                " has Mamba layers; a second tier turns vLLM's hybrid "
                                                "KV-cache manager off, which such a model cannot run without");
  }
  // The CUDA backend runs Mamba groups (state blocks, gpu_backend/reference/mamba_state.h), not
  // cross attention (no encoder inputs to write its blocks from).
  if (model.cross_attention && c.device.kind != DeviceKind::kSim) {
    return option_error("device",
                        c.device.model.name + ": the CUDA backend has no cross-attention kernels; use --device sim");
  }
  // vLLM's Scheduler asserts that an encoder-decoder model runs without a KV connector.
  if (model.cross_attention && c.tiers_enabled()) {
    return option_error(
        "host-cache-bytes",
        c.device.model.name + " is an encoder-decoder model: vLLM runs no KV connector (second tier) with one");
  }
  if (!c.hybrid_kv_cache()) return {};
  if (model.has_mamba() && c.device.mamba_cache_mode &&
      c.scheduler.cache.enable_caching == (*c.device.mamba_cache_mode == MambaCacheMode::kNone)) {
    return option_error("mamba-cache-mode", std::string(to_string(*c.device.mamba_cache_mode)) +
                                                (c.scheduler.cache.enable_caching ? " needs --prefix-caching off"
                                                                                  : " needs --prefix-caching on"));
  }
  if (model.cross_attention) {
    if (c.scheduler.cache.enable_caching) {
      return option_error("prefix-caching",
                          c.device.model.name +
                              " has cross attention: encoder-decoder models run with prefix caching off "
                              "(as vLLM does); drop --prefix-caching on");
    }
    return {};
  }
  const int block_size = c.block_size();
  if (block_size > kMaxMambaBlock) {
    return option_error("model", c.device.model.name + ": an attention page that holds one Mamba state needs " +
                                     std::to_string(block_size) + "-token blocks; kvsim runs at most " +
                                     std::to_string(kMaxMambaBlock));
  }
  auto groups = c.kv_cache_groups();
  if (!groups.ok()) return groups.status().with_context("--model: ");
  for (const KvCacheGroupSpec& g : *groups) {
    if (g.spec.type == AttentionType::kMamba && g.spec.mamba_mode == MambaCacheMode::kNone) continue;
    if (g.spec.block_size != block_size) {
      return option_error("model", c.device.model.name + ": a group's pages need block size " +
                                       std::to_string(g.spec.block_size) + ", the scheduler runs one block size (" +
                                       std::to_string(block_size) + ")");
    }
  }
  return {};
}

// The tiers against the device, the cache and the model's block bytes.
Status validate_tiers(const ReplayConfig& c) {
  if (!c.tiers_enabled()) return {};
  if (c.device.kind != DeviceKind::kSim) return option_error("host-cache-bytes", "needs --device sim");
  if (!c.scheduler.cache.enable_caching) {
    return option_error("host-cache-bytes", "needs --prefix-caching on (tier entries are block hashes)");
  }
  const std::int64_t block_bytes = c.effective_model().kv_bytes_per_token() * c.block_size();
  if (c.tiers.host_cache_bytes < block_bytes) {
    return option_error("host-cache-bytes", "holds less than one block (" + std::to_string(block_bytes) + " bytes)");
  }
  if (c.tiers.disk_cache_bytes > 0 && c.tiers.disk_cache_bytes < block_bytes) {
    return option_error("disk-cache-bytes", "holds less than one block (" + std::to_string(block_bytes) + " bytes)");
  }
  return {};
}

// The rules across parts.
Status validate_across_parts(const ReplayConfig& c) {
  if (c.events.writes() && !c.scheduler.cache.enable_caching) {
    return option_error(c.events.file.empty() ? "kv-events-zmq" : "kv-events",
                        "needs --prefix-caching on (no block is cached without it)");
  }
  if (c.run.replay.frontend.enabled() && c.run.replay.max_concurrency > 0 && !c.fleet.single_engine()) {
    return option_error("frontend", "with --max-concurrency needs one engine (the closed-loop client is one engine's)");
  }
  if (Status s = validate_hybrid_groups(c); !s.ok()) return s;
  if (Status s = validate_tiers(c); !s.ok()) return s;
  if (c.scheduler.speculative.enabled() && c.device.kind != DeviceKind::kSim) {
    return option_error("speculative-method", "needs --device sim (the simulated device samples and drafts)");
  }
  CudaGraphConfig graphs;
  graphs.mode = c.device.cuda_graphs;
  graphs.max_num_seqs = c.scheduler.max_num_seqs;
  graphs.max_num_batched_tokens = c.scheduler.max_num_batched_tokens;
  if (Status s = kv::validate(graphs); !s.ok()) return s.with_context("--cuda-graphs: ");
  return {};
}

}  // namespace

Status ReplayConfig::validate() const {
  if (Status s = validate_parts(*this); !s.ok()) return s;
  return validate_across_parts(*this);
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
