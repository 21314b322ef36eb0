#include "replay/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "model/block_hasher.h"
#include "model/kv_cache_manager.h"
#include "model/request.h"
#include "model/util/format_number.h"
#include "model/util/parse_number.h"
#include "model/util/parse_size.h"
#include "replay/parallel_indices.h"
#include "replay/pool_sizing.h"
#include "replay/replay_builder.h"
#include "traces/prefix_optimum.h"
#include "traces/trace_io.h"

namespace kv::replay {

namespace fs = std::filesystem;

namespace {

struct PolicySpec {
  EvictionPolicyKind kind = EvictionPolicyKind::kLru;
  FreeOrder order = FreeOrder::kClassic;
};

StatusOr<PolicySpec> policy_spec(const std::string& policy) {
  if (policy == "lru-unhashed-first") return PolicySpec{EvictionPolicyKind::kLru, FreeOrder::kUnhashedFirst};
  PolicySpec s;
  if (parse_eviction_policy(policy, &s.kind)) return s;
  if (policy == "optimum") {
    return Status::error("policy 'optimum' is not a policy to run: sequence sweeps add its rows by default");
  }
  return Status::error("unknown policy '" + policy + "' (valid: " + sweep_policy_names() + ")");
}

std::string fmt(const char* f, double v) { return format_number(f, v); }

}  // namespace

std::string sweep_policy_names() { return "lru, lru-unhashed-first, lfu, slru, leaf-lru, priority"; }

std::string trace_label(const std::string& path) { return fs::path(path).stem().string(); }

std::vector<SweepConfig> sweep_configs(const SweepOptions& o) {
  std::vector<SweepConfig> out;
  for (const std::string& t : o.traces) {
    for (const std::string& p : o.policies) {
      for (int b : o.block_sizes) {
        for (std::int64_t c : o.capacities) out.push_back(SweepConfig{t, c, p, b});
      }
    }
  }
  return out;
}

StatusOr<TraceBlockTotals> trace_block_totals(const std::string& trace, int block_size, std::int64_t limit) {
  auto reader = trace::TraceReader::open(trace);
  if (!reader.ok()) return reader.status();
  TraceBlockTotals t;
  trace::TraceRequest r;
  for (std::int64_t n = 0; limit <= 0 || n < limit; ++n) {
    auto got = reader->next(&r);
    if (!got.ok()) return got.status();
    if (!*got) break;
    const auto prompt = static_cast<std::int64_t>(r.prompt.size());
    t.prompt_blocks += (prompt + block_size - 1) / block_size;
    t.sequence_blocks += (prompt + r.output_length + block_size - 1) / block_size;
  }
  return t;
}

StatusOr<SweepPoint> run_sequence(const SweepConfig& config, std::int64_t pool_blocks, std::int64_t limit) {
  if (config.block_size < 1) return Status::error("block size must be positive");
  if (config.capacity_tokens < 1) return Status::error("capacity must be positive");
  auto spec = policy_spec(config.policy);
  if (!spec.ok()) return spec.status();
  auto reader = trace::TraceReader::open(config.trace);
  if (!reader.ok()) return reader.status();
  const trace::TraceHeader& header = reader->header();
  const std::string algo_name = header.hash_algo.empty() ? "sha256_cbor" : header.hash_algo;
  const auto algo = parse_hash_algo(algo_name);
  if (!algo) return Status::error(config.trace + ": unknown hash algorithm '" + algo_name + "'");
  const BlockHasher hasher(*algo, header.hash_seed.empty() ? std::string(kDefaultHashSeed) : header.hash_seed);

  SweepPoint p;
  p.config = config;
  p.mode = "sequence";
  p.pool_blocks = pool_blocks > 0 ? pool_blocks : blocks_for_tokens(config.capacity_tokens, config.block_size);
  if (p.pool_blocks > (1LL << 30)) {
    return Status::error("capacity " + std::to_string(config.capacity_tokens) + " needs more than 2^30 blocks");
  }
  KvCacheConfig kc;
  kc.num_blocks = static_cast<int>(p.pool_blocks);
  kc.block_size = config.block_size;
  kc.free_order = spec->order;
  kc.eviction_policy = spec->kind;
  kc.max_model_len = std::int64_t{1} << 40;
  KvCacheManager kv(kc);

  trace::TraceRequest t;
  while (limit <= 0 || p.requests < limit) {
    auto got = reader->next(&t);
    if (!got.ok()) return got.status();
    if (!*got) break;
    HashExtras extras;
    extras.cache_salt = std::move(t.cache_salt);
    extras.lora_name = std::move(t.lora_name);
    Request r(std::move(t.id), std::move(t.prompt), std::move(extras), &hasher, config.block_size);
    r.retention = BlockRetention{t.retention_priority, t.retention_duration};
    const CacheHit hit = kv.get_computed_blocks(r);
    ++p.requests;
    if (kv.allocate_slots(r, r.num_tokens() - hit.num_tokens, hit)) {
      kv.free(r);
    } else {
      ++p.unfit_requests;
    }
    t = trace::TraceRequest{};
  }
  p.lookups = kv.stats().lookups;
  p.queries = kv.stats().queries;
  p.hits = kv.stats().hits;
  p.evictions = kv.pool().num_evictions();
  p.hit_rate = p.queries > 0 ? static_cast<double>(p.hits) / static_cast<double>(p.queries) : 0.0;
  return p;
}

StatusOr<SweepPoint> run_serving(const ReplayConfig& base, const SweepConfig& c, std::int64_t pool_blocks) {
  ReplayConfig config = base;
  config.device.kind = DeviceKind::kSim;
  config.scheduler.cache.block_size = c.block_size;
  // clamped to int: validate() refuses it as any pool over 2^30 blocks
  config.scheduler.cache.num_blocks =
      static_cast<int>(std::min<std::int64_t>(pool_blocks, std::numeric_limits<int>::max()));
  config.run.replay.keep_decision_text = false;
  auto spec = policy_spec(c.policy);
  if (!spec.ok()) return spec.status();
  config.scheduler.cache.free_order = spec->order;
  config.scheduler.cache.eviction_policy = spec->kind;
  auto run = build_replay(config, c.trace);
  if (!run.ok()) return run.status();
  auto summary = run->make_replayer(config)->run();
  if (!summary.ok()) return summary.status();
  const ReplaySummary& s = *summary;
  SweepPoint p;
  p.config = c;
  p.mode = "serving";
  p.pool_blocks = pool_blocks;
  p.lookups = s.cache.lookups;
  p.queries = s.cache.queries;
  p.hits = s.cache.hits;
  p.evictions = s.evictions;
  p.requests = s.requests_total;
  p.unfit_requests = s.requests_rejected;
  p.hit_rate = s.hit_rate;
  p.has_serving = true;
  SweepServing& m = p.serving;
  m.requests_finished = s.requests_finished;
  m.requests_rejected = s.requests_rejected;
  m.preemptions = s.preemptions;
  m.ttft_p50_us = s.ttft_us.p50;
  m.ttft_p90_us = s.ttft_us.p90;
  m.tpot_p50_us = s.tpot_us.p50;
  m.tpot_p90_us = s.tpot_us.p90;
  m.e2e_p50_us = s.e2e_us.p50;
  m.e2e_p90_us = s.e2e_us.p90;
  m.simulated_us = s.sim_time_us;
  const double sim_s = static_cast<double>(s.sim_time_us) / 1e6;
  m.output_tokens_per_s = sim_s > 0 ? static_cast<double>(s.output_tokens) / sim_s : 0;
  m.requests_per_s = sim_s > 0 ? static_cast<double>(s.requests_finished) / sim_s : 0;
  return p;
}

namespace {

Status check_options(const SweepOptions& o) {
  if (o.mode != "sequence" && o.mode != "serving") {
    return Status::error("mode must be sequence or serving, got '" + o.mode + "'");
  }
  if (o.traces.empty() || o.capacities.empty() || o.policies.empty() || o.block_sizes.empty()) {
    return Status::error("a sweep needs at least one trace, capacity, policy and block size");
  }
  for (const std::string& p : o.policies) {
    if (auto ok = policy_spec(p); !ok.ok()) return ok.status();
  }
  if (o.limit < 0) return Status::error("limit must be >= 0");
  if (o.mode == "serving" && o.limit > 0) return Status::error("serving mode takes --limit from its replay options");
  for (int b : o.block_sizes) {
    if (b < 1 || b > 4096) return Status::error("block size " + std::to_string(b) + " is not in 1..4096");
  }
  for (std::int64_t c : o.capacities) {
    if (c < 1) return Status::error("capacity " + std::to_string(c) + " must be positive");
  }
  if (o.mode == "serving") return o.serving.validate();
  return {};
}

// Invariant 3: each configuration's pool, capped at the largest pool that can matter.
StatusOr<std::vector<std::int64_t>> pool_sizes(const SweepOptions& o, const std::vector<SweepConfig>& configs) {
  std::map<std::pair<std::string, int>, TraceBlockTotals> totals;
  for (const std::string& t : o.traces) {
    for (int b : o.block_sizes) {
      auto tot = trace_block_totals(t, b, o.mode == "sequence" ? o.limit : 0);
      if (!tot.ok()) return tot.status();
      totals[{t, b}] = *tot;
    }
  }
  std::vector<std::int64_t> pools(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const SweepConfig& c = configs[i];
    const TraceBlockTotals& t = totals[{c.trace, c.block_size}];
    const std::int64_t need = (o.mode == "sequence" ? t.prompt_blocks : t.sequence_blocks) + 1;
    pools[i] = std::min(blocks_for_tokens(c.capacity_tokens, c.block_size), std::max<std::int64_t>(need, 2));
  }
  return pools;
}

// Runs every configuration on `jobs` threads; results are kept by index (invariant 1).
std::vector<StatusOr<SweepPoint>> run_all(const SweepOptions& o, const std::vector<SweepConfig>& configs,
                                          const std::vector<std::int64_t>& pools) {
  std::vector<StatusOr<SweepPoint>> results(configs.size(), StatusOr<SweepPoint>(Status::error("not run")));
  for_each_index(
      configs.size(), o.jobs,
      [&](std::size_t i) {
        results[i] = o.mode == "sequence" ? run_sequence(configs[i], pools[i], o.limit)
                                          : run_serving(o.serving, configs[i], pools[i]);
      },
      o.on_progress);
  return results;
}

}  // namespace

StatusOr<std::vector<SweepPoint>> run_sweep(const SweepOptions& o) {
  if (Status s = check_options(o); !s.ok()) return s;
  const std::vector<SweepConfig> configs = sweep_configs(o);
  auto pools = pool_sizes(o, configs);
  if (!pools.ok()) return pools.status();
  std::vector<StatusOr<SweepPoint>> results = run_all(o, configs, *pools);
  std::vector<SweepPoint> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      const SweepConfig& c = configs[i];
      return results[i].status().with_context(c.trace + " at capacity " + std::to_string(c.capacity_tokens) + " (" +
                                              c.policy + ", block size " + std::to_string(c.block_size) + "): ");
    }
    out.push_back(std::move(*results[i]));
    const bool trace_ends = i + 1 == results.size() || configs[i + 1].trace != configs[i].trace;
    if (!trace_ends || o.mode != "sequence" || !o.optimum) continue;
    for (int b : o.block_sizes) {  // invariant 4: the optimum after the trace's policy rows
      auto opt = optimum_points(configs[i].trace, b, o.capacities, o.limit);
      if (!opt.ok()) return opt.status().with_context(configs[i].trace + " (optimum): ");
      for (SweepPoint& p : *opt) out.push_back(std::move(p));
    }
  }
  return out;
}

StatusOr<std::vector<SweepPoint>> optimum_points(const std::string& trace, int block_size,
                                                 const std::vector<std::int64_t>& capacities, std::int64_t limit) {
  auto chains = trace::load_prefix_chains(trace, block_size, limit);
  if (!chains.ok()) return chains.status();
  std::vector<SweepPoint> out;
  for (std::int64_t c : capacities) {
    SweepPoint p;
    p.config = SweepConfig{trace, c, "optimum", block_size};
    p.mode = "sequence";
    p.pool_blocks = blocks_for_tokens(c, block_size);
    const trace::OptimumResult r = trace::prefix_optimum(*chains, p.pool_blocks - 1);
    p.lookups = r.lookups;
    p.queries = r.queries;
    p.hits = r.hits;
    p.requests = r.lookups;
    p.hit_rate = r.hit_rate;
    out.push_back(std::move(p));
  }
  return out;
}

StatusOr<std::vector<std::int64_t>> parse_capacities(const std::string& text) {
  auto number = [](const std::string& s) -> StatusOr<double> {
    const std::optional<std::int64_t> v = parse_token_count(s);
    if (!v || *v < 1) {
      return Status::error("capacity '" + s + "' is not a positive number of tokens (e.g. 1e6, 3M)");
    }
    if (*v > (std::int64_t{1} << 40)) {
      return Status::error("capacity '" + s + "' must be from 1 to 2^40 tokens (the range of --kv-cache-tokens)");
    }
    return static_cast<double>(*v);
  };
  std::vector<std::int64_t> out;
  if (text.find(':') != std::string::npos) {
    std::vector<std::string> parts;
    std::stringstream ss(text);
    for (std::string part; std::getline(ss, part, ':');) parts.push_back(part);
    if (parts.size() != 3) return Status::error("capacity range '" + text + "' must be FROM:TO:POINTS_PER_DECADE");
    auto lo = number(parts[0]);
    auto hi = number(parts[1]);
    if (!lo.ok()) return lo.status();
    if (!hi.ok()) return hi.status();
    const std::int64_t per = parse_int64(parts[2]).value_or(0);
    if (per < 1 || per > 100) return Status::error("points per decade '" + parts[2] + "' must be 1..100");
    if (*hi < *lo) return Status::error("capacity range '" + text + "' ends below its start");
    for (std::int64_t i = 0;; ++i) {
      const double v = *lo * std::pow(10.0, static_cast<double>(i) / static_cast<double>(per));
      if (v > *hi * (1 + 1e-9)) break;
      out.push_back(std::llround(v));
    }
  } else {
    std::stringstream ss(text);
    for (std::string part; std::getline(ss, part, ',');) {
      auto v = number(part);
      if (!v.ok()) return v.status();
      out.push_back(std::llround(*v));
    }
  }
  if (out.empty()) return Status::error("no capacities in '" + text + "'");
  if (out.size() > 1000) return Status::error("more than 1000 capacities in '" + text + "'");
  return out;
}

std::string sweep_csv(const std::vector<SweepPoint>& points) {
  std::ostringstream o;
  o << "trace,capacity_tokens,policy,block_size,mode,hit_rate,lookups,queries,hits,evictions,requests,"
       "unfit_requests,pool_blocks,requests_finished,requests_rejected,preemptions,ttft_p50_ms,ttft_p90_ms,"
       "tpot_p50_ms,tpot_p90_ms,e2e_p50_ms,e2e_p90_ms,output_tokens_per_s,requests_per_s\n";
  auto ms = [](std::int64_t us) { return fmt("%.3f", static_cast<double>(us) / 1000.0); };
  for (const SweepPoint& p : points) {
    o << trace_label(p.config.trace) << ',' << p.config.capacity_tokens << ',' << p.config.policy << ','
      << p.config.block_size << ',' << p.mode << ',' << fmt("%.6f", p.hit_rate) << ',' << p.lookups << ',' << p.queries
      << ',' << p.hits << ',' << p.evictions << ',' << p.requests << ',' << p.unfit_requests << ',' << p.pool_blocks
      << ',';
    if (p.has_serving) {
      const SweepServing& s = p.serving;
      o << s.requests_finished << ',' << s.requests_rejected << ',' << s.preemptions << ',' << ms(s.ttft_p50_us) << ','
        << ms(s.ttft_p90_us) << ',' << ms(s.tpot_p50_us) << ',' << ms(s.tpot_p90_us) << ',' << ms(s.e2e_p50_us) << ','
        << ms(s.e2e_p90_us) << ',' << fmt("%.1f", s.output_tokens_per_s) << ',' << fmt("%.3f", s.requests_per_s);
    } else {
      o << ",,,,,,,,,,";
    }
    o << '\n';
  }
  return o.str();
}

}  // namespace kv::replay
