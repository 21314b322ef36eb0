#include "sim/hardware_specs.h"

#include <cstdio>
#include <cstdlib>

namespace kv::sim {

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = [] {
    GpuSpec h100;
    h100.name = "h100-sxm";
    h100.peak_flops = 989'000'000'000'000;
    h100.hbm_bytes_per_s = 3'350'000'000'000;
    h100.memory_bytes = 80LL << 30;
    h100.sm_count = 132;
    h100.clock_mhz = 1980;
    GpuSpec h200 = h100;
    h200.name = "h200";
    h200.hbm_bytes_per_s = 4'800'000'000'000;
    h200.memory_bytes = 141'000'000'000;
    return std::vector<GpuSpec>{h100, h200};
  }();
  return presets;
}

namespace {
template <typename Spec>
StatusOr<Spec> find_by_name(const std::vector<Spec>& presets, std::string_view name,
                            const char* what) {
  std::string valid;
  for (const Spec& s : presets) {
    if (s.name == name) return s;
    valid += valid.empty() ? "" : ", ";
    valid += s.name;
  }
  return Status::error(std::string("unknown ") + what + " '" + std::string(name) +
                       "' (valid: " + valid + ")");
}
}  // namespace

StatusOr<GpuSpec> find_gpu_spec(std::string_view name) {
  return find_by_name(gpu_presets(), name, "gpu");
}

}  // namespace kv::sim

// GPU preset files and registered presets.
namespace kv::sim {

namespace {

struct GpuField {
  const char* key;
  std::int64_t GpuSpec::*wide;
  int GpuSpec::*narrow;
};

const std::vector<GpuField>& gpu_fields() {
  static const std::vector<GpuField> fields = {
      {"peak_flops", &GpuSpec::peak_flops, nullptr},
      {"hbm_bytes_per_s", &GpuSpec::hbm_bytes_per_s, nullptr},
      {"memory_bytes", &GpuSpec::memory_bytes, nullptr},
      {"sm_count", nullptr, &GpuSpec::sm_count},
      {"clock_mhz", nullptr, &GpuSpec::clock_mhz},
      {"compute_efficiency_pct", nullptr, &GpuSpec::compute_efficiency_pct},
      {"bandwidth_efficiency_pct", nullptr, &GpuSpec::bandwidth_efficiency_pct},
      {"launch_overhead_ns", &GpuSpec::launch_overhead_ns, nullptr},
      {"graph_launch_ns", &GpuSpec::graph_launch_ns, nullptr},
      {"h2d_bytes_per_s", &GpuSpec::h2d_bytes_per_s, nullptr},
      {"copy_latency_ns", &GpuSpec::copy_latency_ns, nullptr},
      {"host_step_ns", &GpuSpec::host_step_ns, nullptr},
      {"host_per_request_ns", &GpuSpec::host_per_request_ns, nullptr},
      {"host_per_block_ns", &GpuSpec::host_per_block_ns, nullptr},
  };
  return fields;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

StatusOr<GpuSpec> parse_gpu_spec_text(const std::string& file_name, std::string_view text) {
  std::vector<std::pair<std::string, std::int64_t>> values;
  std::vector<int> value_lines;
  std::string name, base = "h100-sxm";
  int line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    const std::string where = file_name + ":" + std::to_string(line_no) + ": ";
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) return Status::error(where + "expected 'key = value', got '" + std::string(line) + "'");
    const std::string key(trim(line.substr(0, eq)));
    const std::string value(trim(line.substr(eq + 1)));
    if (key == "name") {
      name = value;
      continue;
    }
    if (key == "base") {
      base = value;
      continue;
    }
    bool known = false;
    for (const GpuField& f : gpu_fields()) known = known || key == f.key;
    if (!known) return Status::error(where + "unknown key '" + key + "'");
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || v < 0) {
      return Status::error(where + key + ": '" + value + "' is not a non-negative integer");
    }
    values.emplace_back(key, v);
    value_lines.push_back(line_no);
  }
  if (name.empty()) return Status::error(file_name + ": no 'name = ...' line");
  for (const GpuSpec& g : gpu_presets()) {
    if (g.name == name) return Status::error(file_name + ": name '" + name + "' is a built-in preset; choose another");
  }
  auto spec = find_by_name(gpu_presets(), base, "base gpu");
  if (!spec.ok()) return spec.status().with_context(file_name + ": ");
  GpuSpec g = *spec;
  g.name = name;
  for (std::size_t i = 0; i < values.size(); ++i) {
    for (const GpuField& f : gpu_fields()) {
      if (values[i].first != f.key) continue;
      if (f.wide != nullptr) {
        g.*f.wide = values[i].second;
      } else {
        if (values[i].second > 1'000'000'000) {
          return Status::error(file_name + ":" + std::to_string(value_lines[i]) + ": " + f.key + " is too large");
        }
        g.*f.narrow = static_cast<int>(values[i].second);
      }
    }
  }
  if (g.peak_flops <= 0 || g.hbm_bytes_per_s <= 0 || g.memory_bytes <= 0 || g.clock_mhz <= 0 || g.h2d_bytes_per_s <= 0) {
    return Status::error(file_name + ": peak_flops, hbm_bytes_per_s, memory_bytes, clock_mhz and h2d_bytes_per_s must be > 0");
  }
  if (g.compute_efficiency_pct < 1 || g.compute_efficiency_pct > 100 || g.bandwidth_efficiency_pct < 1 ||
      g.bandwidth_efficiency_pct > 100) {
    return Status::error(file_name + ": efficiencies must be in 1..100 percent");
  }
  return g;
}

StatusOr<GpuSpec> load_gpu_spec_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::error("cannot open GPU preset file " + path);
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return parse_gpu_spec_text(path, text);
}

std::string gpu_spec_to_text(const GpuSpec& spec, const std::string& base, const std::string& comment) {
  std::string out;
  std::size_t start = 0;
  while (start < comment.size()) {
    const std::size_t nl = comment.find('\n', start);
    const std::size_t end = nl == std::string::npos ? comment.size() : nl;
    out += "# " + comment.substr(start, end - start) + "\n";
    start = end + 1;
  }
  out += "name = " + spec.name + "\nbase = " + base + "\n";
  for (const GpuField& f : gpu_fields()) {
    const std::int64_t v = f.wide != nullptr ? spec.*f.wide : spec.*f.narrow;
    out += std::string(f.key) + " = " + std::to_string(v) + "\n";
  }
  return out;
}

}  // namespace kv::sim
