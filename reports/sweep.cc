#include "reports/sweep.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "model/block_hasher.h"
#include "model/kv_cache_manager.h"
#include "model/request.h"
#include "reports/gnuplot.h"
#include "traces/trace_io.h"

namespace kv::reports {

namespace fs = std::filesystem;

namespace {

std::int64_t blocks_for_capacity(std::int64_t capacity, int block_size) {
  return (capacity + block_size - 1) / block_size + 1;
}

StatusOr<FreeOrder> policy_order(const std::string& policy) {
  if (policy == "lru") return FreeOrder::kClassic;
  if (policy == "lru-unhashed-first") return FreeOrder::kUnhashedFirst;
  return Status::error("unknown policy '" + policy + "' (valid: lru, lru-unhashed-first)");
}

std::string trace_label(const std::string& path) { return fs::path(path).stem().string(); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

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

StatusOr<TraceBlockTotals> trace_block_totals(const std::string& trace, int block_size) {
  auto reader = trace::TraceReader::open(trace);
  if (!reader.ok()) return reader.status();
  TraceBlockTotals t;
  trace::TraceRequest r;
  for (;;) {
    auto got = reader->next(&r);
    if (!got.ok()) return got.status();
    if (!*got) break;
    const auto prompt = static_cast<std::int64_t>(r.prompt.size());
    t.prompt_blocks += (prompt + block_size - 1) / block_size;
    t.sequence_blocks += (prompt + r.output_length + block_size - 1) / block_size;
  }
  return t;
}

StatusOr<SweepPoint> run_sequence(const SweepConfig& config, std::int64_t pool_blocks) {
  if (config.block_size < 1) return Status::error("block size must be positive");
  if (config.capacity_tokens < 1) return Status::error("capacity must be positive");
  auto order = policy_order(config.policy);
  if (!order.ok()) return order.status();
  auto reader = trace::TraceReader::open(config.trace);
  if (!reader.ok()) return reader.status();
  const trace::TraceHeader& header = reader->header();
  const std::string algo_name = header.hash_algo.empty() ? "sha256_cbor" : header.hash_algo;
  const auto algo = parse_hash_algo(algo_name);
  if (!algo) return Status::error(config.trace + ": unknown hash algorithm '" + algo_name + "'");
  const BlockHasher hasher(*algo, header.hash_seed.empty() ? "0" : header.hash_seed);

  SweepPoint p;
  p.config = config;
  p.mode = "sequence";
  p.pool_blocks = pool_blocks > 0 ? pool_blocks : blocks_for_capacity(config.capacity_tokens, config.block_size);
  if (p.pool_blocks > (1LL << 30)) {
    return Status::error("capacity " + std::to_string(config.capacity_tokens) + " needs more than 2^30 blocks");
  }
  KvCacheConfig kc;
  kc.num_blocks = static_cast<int>(p.pool_blocks);
  kc.block_size = config.block_size;
  kc.free_order = *order;
  kc.max_model_len = std::int64_t{1} << 40;
  KvCacheManager kv(kc);

  trace::TraceRequest t;
  for (;;) {
    auto got = reader->next(&t);
    if (!got.ok()) return got.status();
    if (!*got) break;
    HashExtras extras;
    extras.cache_salt = std::move(t.cache_salt);
    extras.lora_name = std::move(t.lora_name);
    Request r(std::move(t.id), std::move(t.prompt), std::move(extras), &hasher, config.block_size);
    const CacheHit hit = kv.lookup(r);
    ++p.requests;
    if (kv.allocate(r, r.num_tokens() - hit.num_tokens, hit)) {
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

StatusOr<std::vector<SweepPoint>> run_sweep(const SweepOptions& o) {
  if (o.mode != "sequence" && o.mode != "serving") {
    return Status::error("mode must be sequence or serving, got '" + o.mode + "'");
  }
  if (o.mode == "serving" && !o.serving) return Status::error("serving mode needs a serving runner");
  if (o.traces.empty() || o.capacities.empty() || o.policies.empty() || o.block_sizes.empty()) {
    return Status::error("a sweep needs at least one trace, capacity, policy and block size");
  }
  for (const std::string& p : o.policies) {
    if (auto ok = policy_order(p); !ok.ok()) return ok.status();
  }
  for (int b : o.block_sizes) {
    if (b < 1 || b > 4096) return Status::error("block size " + std::to_string(b) + " is not in 1..4096");
  }
  for (std::int64_t c : o.capacities) {
    if (c < 1) return Status::error("capacity " + std::to_string(c) + " must be positive");
  }
  // Invariant 3: the largest pool that can matter, per (trace, block size).
  std::map<std::pair<std::string, int>, TraceBlockTotals> totals;
  for (const std::string& t : o.traces) {
    for (int b : o.block_sizes) {
      auto tot = trace_block_totals(t, b);
      if (!tot.ok()) return tot.status();
      totals[{t, b}] = *tot;
    }
  }
  const std::vector<SweepConfig> configs = sweep_configs(o);
  std::vector<std::int64_t> pools(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const SweepConfig& c = configs[i];
    const TraceBlockTotals& t = totals[{c.trace, c.block_size}];
    const std::int64_t need = (o.mode == "sequence" ? t.prompt_blocks : t.sequence_blocks) + 1;
    pools[i] = std::min(blocks_for_capacity(c.capacity_tokens, c.block_size), std::max<std::int64_t>(need, 2));
  }

  std::vector<StatusOr<SweepPoint>> results(configs.size(), StatusOr<SweepPoint>(Status::error("not run")));
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::size_t done = 0;
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= configs.size()) return;
      results[i] = o.mode == "sequence" ? run_sequence(configs[i], pools[i]) : o.serving(configs[i], pools[i]);
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (o.on_progress) o.on_progress(done, configs.size());
    }
  };
  const int jobs = std::max(1, std::min<int>(o.jobs, static_cast<int>(configs.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();

  std::vector<SweepPoint> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      const SweepConfig& c = configs[i];
      return results[i].status().with_context(c.trace + " at capacity " + std::to_string(c.capacity_tokens) +
                                              " (" + c.policy + ", block size " + std::to_string(c.block_size) + "): ");
    }
    out.push_back(std::move(*results[i]));
  }
  return out;
}

StatusOr<std::vector<std::int64_t>> parse_capacities(const std::string& text) {
  auto number = [](const std::string& s) -> StatusOr<double> {
    if (s.empty()) return Status::error("empty capacity");
    double mult = 1;
    std::string digits = s;
    const char last = s.back();
    if (last == 'k' || last == 'K') mult = 1e3;
    else if (last == 'M' || last == 'm') mult = 1e6;
    else if (last == 'G' || last == 'g') mult = 1e9;
    if (mult != 1) digits.pop_back();
    char* end = nullptr;
    const double v = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end == nullptr || *end != '\0' || !(v > 0) || !std::isfinite(v)) {
      return Status::error("capacity '" + s + "' is not a positive number of tokens (e.g. 1e6, 3M)");
    }
    return v * mult;
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
    char* end = nullptr;
    const long per = std::strtol(parts[2].c_str(), &end, 10);
    if (*end != '\0' || per < 1 || per > 100) return Status::error("points per decade '" + parts[2] + "' must be 1..100");
    if (*hi < *lo) return Status::error("capacity range '" + text + "' ends below its start");
    for (long i = 0;; ++i) {
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
      << p.config.block_size << ',' << p.mode << ',' << fmt("%.6f", p.hit_rate) << ',' << p.lookups << ','
      << p.queries << ',' << p.hits << ',' << p.evictions << ',' << p.requests << ',' << p.unfit_requests << ','
      << p.pool_blocks << ',';
    if (p.has_serving) {
      const ServingMetrics& s = p.serving;
      o << s.requests_finished << ',' << s.requests_rejected << ',' << s.preemptions << ',' << ms(s.ttft_p50_us)
        << ',' << ms(s.ttft_p90_us) << ',' << ms(s.tpot_p50_us) << ',' << ms(s.tpot_p90_us) << ','
        << ms(s.e2e_p50_us) << ',' << ms(s.e2e_p90_us) << ',' << fmt("%.1f", s.output_tokens_per_s) << ','
        << fmt("%.3f", s.requests_per_s);
    } else {
      o << ",,,,,,,,,,";
    }
    o << '\n';
  }
  return o.str();
}

Status plot_sweep(const std::vector<SweepPoint>& points, const std::string& out_dir, const std::string& title) {
  // One curve per (trace, policy, block size), in first-appearance order.
  std::vector<std::string> keys;
  std::map<std::string, std::vector<const SweepPoint*>> curves;
  bool serving = false;
  for (const SweepPoint& p : points) {
    std::string key = trace_label(p.config.trace) + ", " + p.config.policy + ", block " +
                      std::to_string(p.config.block_size);
    if (!curves.count(key)) keys.push_back(key);
    curves[key].push_back(&p);
    serving = serving || p.has_serving;
  }
  const fs::path dir(out_dir);
  auto write_dat = [&](const std::string& name, auto value) -> Status {
    std::ofstream f(dir / name, std::ios::binary);
    for (const std::string& k : keys) {
      f << "# " << k << "\n";
      std::vector<const SweepPoint*> c = curves[k];
      std::stable_sort(c.begin(), c.end(), [](auto* a, auto* b) { return a->config.capacity_tokens < b->config.capacity_tokens; });
      for (const SweepPoint* p : c) f << p->config.capacity_tokens << ' ' << value(*p) << "\n";
      f << "\n\n";
    }
    if (!f) return Status::error("cannot write " + (dir / name).string());
    return {};
  };
  auto plot_body = [&](const std::string& dat, const std::string& ylabel, const std::string& ptitle,
                       const std::string& extra) {
    std::ostringstream b;
    b << "set title " << gnuplot_quote(ptitle) << " noenhanced\n"
      << "set xlabel 'KV-cache capacity (tokens, log scale)'\nset ylabel " << gnuplot_quote(ylabel) << "\n"
      << "set logscale x\nset format x '10^{%T}'\nset grid xtics ytics mxtics\n"
      << extra << "plot ";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      b << (i ? ", \\\n     " : "") << gnuplot_quote((dir / dat).string()) << " index " << i
        << " using 1:2 with linespoints lw 2 pt 7 ps 0.6 title " << gnuplot_quote(keys[i]) << " noenhanced";
    }
    b << "\n";
    return b.str();
  };
  if (Status s = write_dat("hit_rate.dat", [](const SweepPoint& p) { return fmt("%.6f", p.hit_rate); }); !s.ok()) return s;
  if (Status s = render_plot((dir / "hit_rate").string(),
                             plot_body("hit_rate.dat", "prefix-cache hit rate (hit tokens / prompt tokens)", title,
                                       "set yrange [0:1]\nset ytics 0.1\nset key inside right bottom opaque box\n"),
                             1000, 640);
      !s.ok()) {
    return s;
  }
  if (!serving) return {};
  if (Status s = write_dat("ttft.dat", [](const SweepPoint& p) { return fmt("%.3f", static_cast<double>(p.serving.ttft_p50_us) / 1000.0); }); !s.ok()) return s;
  if (Status s = render_plot((dir / "ttft_p50").string(),
                             plot_body("ttft.dat", "TTFT p50 (ms, log scale)", title + ": median time to first token",
                                       "set logscale y\nset key inside right top opaque box\n"),
                             1000, 640);
      !s.ok()) {
    return s;
  }
  if (Status s = write_dat("throughput.dat", [](const SweepPoint& p) { return fmt("%.1f", p.serving.output_tokens_per_s); }); !s.ok()) return s;
  return render_plot((dir / "throughput").string(),
                     plot_body("throughput.dat", "output throughput (tokens/s, simulated)", title + ": output throughput",
                               "set yrange [0:*]\nset key inside right bottom opaque box\n"),
                     1000, 640);
}

}  // namespace kv::reports
