#include "fleet/router_factory.h"

#include <algorithm>
#include <set>
#include <utility>

#include "fleet/basic_routers.h"
#include "fleet/dynamo_router.h"
#include "fleet/llmd_router.h"
#include "fleet/sglang_router.h"
#include "model/util/parse_number.h"

namespace kv::fleet {
namespace {

constexpr double kUnbounded = 1e300;

// Reads a router's parameters; each read marks its name used, and finish() rejects the rest.
class ParamReader {
 public:
  ParamReader(std::string_view router, const RouterParams& params) : router_(router), params_(params) {}

  Status number(const std::string& key, double min, double max, double& out) {
    auto it = params_.find(key);
    if (it == params_.end()) return Status();
    used_.insert(key);
    const std::optional<double> v = parse_finite_double(it->second);
    if (!v || *v < min || *v > max) {
      const std::string range = max == kUnbounded ? ">= " + text(min) : "in [" + text(min) + ", " + text(max) + "]";
      return error(key, "'" + it->second + "' is not a number " + range);
    }
    out = *v;
    return Status();
  }
  Status integer(const std::string& key, std::int64_t min, std::int64_t& out) {
    auto it = params_.find(key);
    if (it == params_.end()) return Status();
    used_.insert(key);
    const std::optional<std::int64_t> v = parse_int64(it->second);
    if (!v || *v < min) return error(key, "'" + it->second + "' is not an integer >= " + std::to_string(min));
    out = *v;
    return Status();
  }
  Status boolean(const std::string& key, bool& out) {
    auto it = params_.find(key);
    if (it == params_.end()) return Status();
    used_.insert(key);
    if (it->second != "true" && it->second != "false") return error(key, "'" + it->second + "' is not true or false");
    out = it->second == "true";
    return Status();
  }
  Status finish() const {
    for (const auto& [key, value] : params_) {
      if (!used_.contains(key)) return error(key, "unknown parameter");
    }
    return Status();
  }

 private:
  Status error(const std::string& key, const std::string& what) const {
    return Status::error("router " + std::string(router_) + ": parameter " + key + ": " + what);
  }
  static std::string text(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
  }

  std::string_view router_;
  const RouterParams& params_;
  std::set<std::string> used_;
};

#define KV_RETURN_IF_ERROR(expr)             \
  do {                                       \
    Status kv_status_ = (expr);              \
    if (!kv_status_.ok()) return kv_status_; \
  } while (false)

StatusOr<DynamoOptions> dynamo_options(ParamReader& in) {
  DynamoOptions o;
  double ttl_s = 120.0;
  KV_RETURN_IF_ERROR(in.number("overlap_score_weight", 0.0, kUnbounded, o.overlap_score_weight));
  KV_RETURN_IF_ERROR(in.number("router_temperature", 0.0, kUnbounded, o.temperature));
  KV_RETURN_IF_ERROR(in.boolean("kv_events", o.kv_events));
  KV_RETURN_IF_ERROR(in.number("ttl_s", 0.0, 1e9, ttl_s));
  if (ttl_s * 1e9 < 1.0) return Status::error("router dynamo: parameter ttl_s: must be > 0");
  o.ttl_ns = static_cast<std::int64_t>(ttl_s * 1e9);
  return o;
}

StatusOr<LlmdOptions> llmd_options(ParamReader& in, bool precise) {
  LlmdOptions o = precise ? LlmdOptions::precise_defaults() : LlmdOptions::approx_defaults();
  std::int64_t max_blocks = o.max_prefix_blocks;
  KV_RETURN_IF_ERROR(in.number("prefix_weight", 0.0, kUnbounded, o.prefix_weight));
  KV_RETURN_IF_ERROR(in.number("kv_weight", 0.0, kUnbounded, o.kv_weight));
  KV_RETURN_IF_ERROR(in.number("queue_weight", 0.0, kUnbounded, o.queue_weight));
  KV_RETURN_IF_ERROR(in.integer("max_prefix_blocks", 1, max_blocks));
  if (!precise) KV_RETURN_IF_ERROR(in.integer("lru_capacity", 1, o.lru_capacity));
  o.max_prefix_blocks = static_cast<int>(std::min<std::int64_t>(max_blocks, 1 << 30));
  return o;
}

StatusOr<SglangOptions> sglang_options(ParamReader& in) {
  SglangOptions o;
  std::int64_t abs_threshold = o.balance_abs_threshold;
  KV_RETURN_IF_ERROR(in.number("cache_threshold", 0.0, 1.0, o.cache_threshold));
  KV_RETURN_IF_ERROR(in.integer("balance_abs_threshold", 0, abs_threshold));
  KV_RETURN_IF_ERROR(in.number("balance_rel_threshold", 0.0, kUnbounded, o.balance_rel_threshold));
  KV_RETURN_IF_ERROR(in.integer("max_tree_size", 1, o.max_tree_size));
  o.balance_abs_threshold = static_cast<int>(std::min<std::int64_t>(abs_threshold, 1 << 30));
  return o;
}

template <typename R, typename... Args>
StatusOr<std::unique_ptr<Router>> owned(Args&&... args) {
  return std::unique_ptr<Router>(std::make_unique<R>(std::forward<Args>(args)...));
}

// The router of a known name, once its options are read.
StatusOr<std::unique_ptr<Router>> build(std::string_view name, ParamReader& in, int n, std::uint64_t seed) {
  if (name == "round-robin") return owned<RoundRobinRouter>(n);
  if (name == "random") return owned<RandomRouter>(n, seed);
  if (name == "least-requests") return owned<LeastRequestsRouter>(n);
  if (name == "least-kv") return owned<LeastKvRouter>(n);
  if (name == "session") return owned<SessionRouter>(n);
  if (name == "dynamo") {
    StatusOr<DynamoOptions> o = dynamo_options(in);
    if (!o.ok()) return o.status();
    return owned<DynamoRouter>(n, *o, seed);
  }
  if (name == "llm-d-precise" || name == "llm-d-approx") {
    StatusOr<LlmdOptions> o = llmd_options(in, name == "llm-d-precise");
    if (!o.ok()) return o.status();
    return owned<LlmdRouter>(n, *o, seed);
  }
  StatusOr<SglangOptions> o = sglang_options(in);
  if (!o.ok()) return o.status();
  return owned<SglangRouter>(n, *o);
}

#undef KV_RETURN_IF_ERROR

}  // namespace

std::vector<std::string_view> router_names() {
  return {"round-robin", "random",        "least-requests", "least-kv", "session",
          "dynamo",      "llm-d-precise", "llm-d-approx",   "sglang"};
}

StatusOr<std::unique_ptr<Router>> make_router(std::string_view name, const RouterParams& params, int num_replicas,
                                              std::uint64_t seed) {
  const std::vector<std::string_view> names = router_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (std::string_view n : names) known += (known.empty() ? "" : ", ") + std::string(n);
    return Status::error("unknown router '" + std::string(name) + "' (known: " + known + ")");
  }
  if (num_replicas <= 0) {
    return Status::error("router " + std::string(name) + ": num_replicas " + std::to_string(num_replicas) +
                         " is not > 0");
  }
  ParamReader in(name, params);
  StatusOr<std::unique_ptr<Router>> router = build(name, in, num_replicas, seed);
  if (!router.ok()) return router.status();
  Status rest = in.finish();
  if (!rest.ok()) return rest;
  return router;
}

}  // namespace kv::fleet
