#include "replay/capacity_search.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "model/util/parse_number.h"
#include "replay/fleet_replay.h"
#include "replay/replay_builder.h"
#include "replay/run_options.h"

namespace kv::replay {

std::string SloBound::text() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%s=%g", metric.c_str(), stat.c_str(), limit_ms);
  return buf;
}

namespace {

Status parse_bound(const std::string& item, SloBound* b) {
  const std::size_t dash = item.find('-'), eq = item.find('=');
  const auto bad = [&](const std::string& why) { return Status::error("--slo: '" + item + "': " + why); };
  if (dash == std::string::npos || eq == std::string::npos || eq < dash) return bad("expected METRIC-STAT=MS");
  b->metric = item.substr(0, dash);
  b->stat = item.substr(dash + 1, eq - dash - 1);
  if (b->metric != "ttft" && b->metric != "tpot" && b->metric != "itl" && b->metric != "e2el") {
    return bad("metric must be ttft, tpot, itl or e2el");
  }
  if (b->stat.size() > 1 && b->stat[0] == 'p') {
    b->percentile = parse_finite_double(b->stat.substr(1)).value_or(0);
    if (!(b->percentile > 0 && b->percentile <= 100)) return bad("percentile must be in (0, 100]");
  } else if (b->stat != "mean" && b->stat != "median") {
    return bad("statistic must be mean, median or pNN");
  }
  b->limit_ms = parse_finite_double(item.substr(eq + 1)).value_or(0);
  if (!(b->limit_ms >= kMinMs && b->limit_ms <= kMaxMs)) return bad("the limit must be from 0.001 to 1e9 ms");
  return {};
}

const LatencyStats& stats_of(const ServingMetrics& m, const std::string& metric) {
  if (metric == "ttft") return m.ttft_ms;
  if (metric == "tpot") return m.tpot_ms;
  if (metric == "itl") return m.itl_ms;
  return m.e2el_ms;
}

CapacityProbe probe(const ReplayConfig& base, const std::string& trace, const std::vector<SloBound>& slo, double rate,
                    Status* error) {
  ReplayConfig c = base;
  c.arrivals.request_rate = rate;
  c.run.replay.keep_decision_text = false;
  for (const SloBound& b : slo) {
    std::vector<double>& percentiles = c.run.replay.metric_percentiles;
    if (b.percentile > 0 && std::find(percentiles.begin(), percentiles.end(), b.percentile) == percentiles.end()) {
      percentiles.push_back(b.percentile);
    }
  }
  CapacityProbe p;
  p.rate = rate;
  auto s = run_replay_or_fleet(c, trace);
  if (!s.ok()) {
    *error = s.status();
    return p;
  }
  p.meets = s->serving.completed > 0 && s->serving.failed == 0;
  for (const SloBound& b : slo) {
    p.figures.push_back(slo_figure(s->serving, b));
    p.meets = p.meets && p.figures.back() <= b.limit_ms;
  }
  p.output_throughput = s->serving.output_throughput;
  p.request_throughput = s->serving.request_throughput;
  p.overloaded = s->overload.overloaded;
  return p;
}

}  // namespace

StatusOr<std::vector<SloBound>> parse_slo(const std::string& text) {
  std::vector<SloBound> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    SloBound b;
    if (Status s = parse_bound(text.substr(start, comma - start), &b); !s.ok()) return s;
    out.push_back(b);
    start = comma + 1;
  }
  if (out.empty()) return Status::error("--slo: give at least one bound, e.g. ttft-p99=500,tpot-p99=50");
  return out;
}

double slo_figure(const ServingMetrics& m, const SloBound& b) {
  const LatencyStats& st = stats_of(m, b.metric);
  if (b.stat == "mean") return st.mean;
  if (b.stat == "median") return st.median;
  for (const auto& [p, v] : st.percentiles) {
    if (p == b.percentile) return v;
  }
  return INFINITY;
}

Status validate(const CapacityOptions& o) {
  if (!(o.start_rate >= kMinRequestRate && o.start_rate <= kMaxRequestRate)) {
    return Status::error("--start-rate: must be from 0.0001 to 1e9 requests/s");
  }
  if (!(o.precision >= 1e-6 && o.precision <= 1)) return Status::error("--precision: must be from 1e-6 to 1");
  if (o.max_probes < 1 || o.max_probes > 1000) return Status::error("--max-probes: must be from 1 to 1000");
  return {};
}

StatusOr<CapacityResult> find_capacity(const ReplayConfig& base, const std::string& trace,
                                       const std::vector<SloBound>& slo, const CapacityOptions& o) {
  if (Status s = base.validate(); !s.ok()) return s;
  if (Status s = validate(o); !s.ok()) return s;
  CapacityResult r;
  Status error;
  auto run = [&](double rate) {
    r.probes.push_back(probe(base, trace, slo, rate, &error));
    return r.probes.back().meets;
  };
  double lo = 0, hi = 0;  // lo meets, hi does not (0: not found yet)
  if (run(o.start_rate)) {
    lo = o.start_rate;
    for (double rate = lo * 2;
         error.ok() && rate <= kMaxRequestRate && static_cast<int>(r.probes.size()) < o.max_probes; rate *= 2) {
      if (!run(rate)) {
        hi = rate;
        break;
      }
      lo = rate;
    }
  } else {
    hi = o.start_rate;
    for (double rate = hi / 2;
         error.ok() && rate >= kMinRequestRate && static_cast<int>(r.probes.size()) < o.max_probes; rate /= 2) {
      if (run(rate)) {
        lo = rate;
        break;
      }
      hi = rate;
    }
  }
  while (error.ok() && lo > 0 && hi > 0 && hi / lo > 1 + o.precision &&
         static_cast<int>(r.probes.size()) < o.max_probes) {
    const double mid = std::sqrt(lo * hi);
    if (run(mid))
      lo = mid;
    else
      hi = mid;
  }
  if (!error.ok()) return error;
  r.rate = lo;
  r.failing_rate = hi;
  std::sort(r.probes.begin(), r.probes.end(), [](const auto& a, const auto& b) { return a.rate < b.rate; });
  return r;
}

}  // namespace kv::replay
