#include "replay/bench_result.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

namespace kv::replay {

namespace {

// The length of the token Python's json module writes for NaN, Infinity or -Infinity at the
// start of `rest`, or 0.
std::size_t python_only_token(std::string_view rest) {
  for (std::string_view token : {"-Infinity", "Infinity", "NaN"}) {
    if (rest.starts_with(token)) return token.size();
  }
  return 0;
}

// Python's json module writes NaN, Infinity and -Infinity (numpy means of empty lists, an
// infinite request rate) where JSON has no such token: outside strings they become null, so
// such a figure reads as absent.
std::string python_json_to_json(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (const std::size_t n = python_only_token(std::string_view(text).substr(i))) {
      out += "null";
      i += n - 1;
      continue;
    }
    in_string = c == '"';
    out += c;
  }
  return out;
}

// The figure `key` of `j`: absent (or null) gives nullopt; anything but a finite number >= 0 is
// an error naming the file and the key.
StatusOr<std::optional<double>> number_at(const nlohmann::json& j, const std::string& key, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return std::optional<double>();
  const nlohmann::json& v = j[key];
  if (!v.is_number()) return Status::error(path + ": '" + key + "' must be a number, got " + v.dump());
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0) return Status::error(path + ": '" + key + "' must be a number >= 0, got " + v.dump());
  return std::optional<double>(d);
}

}  // namespace

const std::vector<std::string>& bench_result_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
      for (const char* stat : {"mean", "median", "p99"}) k.push_back(std::string(stat) + "_" + metric + "_ms");
    }
    k.push_back("duration");
    return k;
  }();
  return keys;
}

std::optional<double> serving_figure(const ServingMetrics& m, const std::string& key) {
  if (key == "duration") return m.duration_s;
  const std::size_t first = key.find('_'), last = key.rfind('_');
  const std::string stat = key.substr(0, first), metric = key.substr(first + 1, last - first - 1);
  const LatencyStats* s = metric == "ttft"   ? &m.ttft_ms
                          : metric == "tpot" ? &m.tpot_ms
                          : metric == "itl"  ? &m.itl_ms
                          : metric == "e2el" ? &m.e2el_ms
                                             : nullptr;
  if (s == nullptr) return std::nullopt;
  if (stat == "mean") return s->mean;
  if (stat == "median") return s->median;
  for (const auto& [p, value] : s->percentiles) {
    if (stat == "p99" && p == 99) return value;
  }
  return std::nullopt;
}

StatusOr<BenchResult> read_bench_result(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  return parse_bench_result(path, text.str());
}

StatusOr<BenchResult> parse_bench_result(const std::string& path, const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(python_json_to_json(text), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::error(path + ": not valid JSON (a vllm bench serve --save-result file?)");
  if (!j.is_object()) return Status::error(path + ": not a JSON object (a vllm bench serve --save-result file?)");
  BenchResult r;
  r.path = path;
  for (const std::string& key : bench_result_keys()) {
    auto v = number_at(j, key, path);
    if (!v.ok()) return v.status();
    if (*v) r.figures[key] = **v;
  }
  for (const char* key : {"mean_ttft_ms", "mean_tpot_ms"}) {
    if (!r.has(key)) return Status::error(path + ": '" + key + "' is missing (the fit needs it)");
  }
  auto completed = number_at(j, "completed", path);
  if (!completed.ok()) return completed.status();
  r.completed = *completed;
  if (j.contains("request_rate") && j["request_rate"].is_number()) {
    auto rate = number_at(j, "request_rate", path);
    if (!rate.ok()) return rate.status();
    r.request_rate = *rate;
  }
  return r;
}

}  // namespace kv::replay
