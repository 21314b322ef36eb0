// Fuzz target gen_options: any bytes as `kvsim gen` options, one "NAME VALUE" per line; the
// first line is "sharegpt", "prefix" or "shared-prefix". Values are read as the command line reads them
// (strtod/strtoll: nan, inf and 1e30 included); validate() decides, and options it accepts
// generate a trace, capped at 64 requests so one input stays small.
// Properties: validate() never lets through an option that makes the generator abort, overflow
// or hang; the generated trace reads back in full.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <type_traits>

#include "fuzz/fuzz_target.h"
#include "traces/generators.h"
#include "traces/trace_io.h"

namespace {

using Fields = std::map<std::string, std::string, std::less<>>;

Fields read_fields(std::string_view text) {
  Fields f;
  while (!text.empty()) {
    const std::size_t nl = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(std::min(nl + 1, text.size()));
    const std::size_t space = line.find(' ');
    if (space != std::string_view::npos) f[std::string(line.substr(0, space))] = line.substr(space + 1);
  }
  return f;
}

template <typename T>
void take(const Fields& f, const char* name, T* out) {
  auto it = f.find(name);
  if (it == f.end()) return;
  if constexpr (std::is_floating_point_v<T>) {
    *out = std::strtod(it->second.c_str(), nullptr);
  } else if constexpr (std::is_unsigned_v<T>) {
    *out = std::strtoull(it->second.c_str(), nullptr, 10);
  } else {
    const long long v = std::strtoll(it->second.c_str(), nullptr, 10);
    *out = static_cast<T>(std::clamp<long long>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  }
}

void read_back(const std::string& path, std::int64_t n) {
  auto reader = kv::trace::TraceReader::open(path);
  FUZZ_CHECK(reader.ok(), reader.status().message());
  kv::trace::TraceRequest r;
  for (std::int64_t i = 0; i <= n; ++i) {
    auto got = reader->next(&r);
    FUZZ_CHECK(got.ok(), got.status().message());
    FUZZ_CHECK(*got == (i < n), "request count");
  }
}

// shared-prefix: the options (--stages as its text) validated, then at most 64 requests written;
// a rejected option is a Status.
kv::StatusOr<std::int64_t> gen_shared_prefix(const Fields& f, const std::string& out) {
  using namespace kv::trace;
  SharedPrefixGenOptions o;
  take(f, "groups", &o.groups), take(f, "users", &o.users), take(f, "prefix-len", &o.prefix_len);
  take(f, "question-len", &o.question_len), take(f, "output-len", &o.output_len);
  take(f, "num-requests", &o.num_requests), take(f, "rate", &o.rate), take(f, "seed", &o.seed);
  if (auto it = f.find("stages"); it != f.end()) {
    auto stages = parse_stages(it->second);
    if (!stages.ok()) return stages.status();
    o.stages = *stages;
  }
  if (kv::Status s = validate(o); !s.ok()) return s;
  double expected = 0;
  for (const auto& [rate, seconds] : o.stages) expected += rate * seconds;
  if (expected > 64) return kv::Status::error("too many requests for one input");
  o.num_requests = std::min<std::int64_t>(o.num_requests, 64);
  auto writer = TraceWriter::create(out, shared_prefix_gen_header(o), true);
  FUZZ_CHECK(writer.ok(), writer.status().message());
  auto n = generate_shared_prefix(o, *writer);
  FUZZ_CHECK(writer->close().ok(), "close");
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kv::trace;
  const std::string_view text = kv::fuzz::as_text(data, size);
  const bool prefix = text.rfind("prefix", 0) == 0, shared = text.rfind("shared-prefix", 0) == 0;
  if (!prefix && !shared && text.rfind("sharegpt", 0) != 0) return 0;
  const Fields f = read_fields(text);
  const std::string out = kv::fuzz::scratch_dir() + "/gen.kvtrace";
  kv::StatusOr<std::int64_t> n = std::int64_t{0};
  if (shared) {
    n = gen_shared_prefix(f, out);
    if (!n.ok()) return 0;
  } else if (prefix) {
    PrefixGenOptions o;
    take(f, "num-prompts", &o.num_prompts), take(f, "num-prefixes", &o.num_prefixes);
    take(f, "prefix-len", &o.prefix_len), take(f, "suffix-len", &o.suffix_len), take(f, "repeat", &o.repeat);
    take(f, "output-len", &o.output_len), take(f, "prefix-rate", &o.rate), take(f, "seed", &o.seed);
    if (!validate(o).ok()) return 0;
    o.num_prompts = std::min<std::int64_t>(o.num_prompts, 16);
    o.repeat = std::min(o.repeat, 4);
    auto writer = TraceWriter::create(out, prefix_gen_header(o), true);
    FUZZ_CHECK(writer.ok(), writer.status().message());
    n = generate_prefix(o, *writer);
    FUZZ_CHECK(writer->close().ok(), "close");
  } else {
    ShareGptGenOptions o;
    take(f, "num-requests", &o.num_requests), take(f, "rate", &o.rate), take(f, "arrival-cv", &o.arrival_cv);
    take(f, "sessions", &o.concurrent_sessions), take(f, "system-prompt", &o.system_prompt_tokens);
    take(f, "mean-turns", &o.mean_turns), take(f, "mean-user", &o.mean_user_tokens);
    take(f, "mean-reply", &o.mean_reply_tokens), take(f, "sigma", &o.sigma), take(f, "max-turn", &o.max_turn_tokens);
    take(f, "max-model-len", &o.max_model_len), take(f, "seed", &o.seed);
    if (!validate(o).ok()) return 0;
    o.num_requests = std::min<std::int64_t>(o.num_requests, 64);
    auto writer = TraceWriter::create(out, sharegpt_gen_header(o), true);
    FUZZ_CHECK(writer.ok(), writer.status().message());
    n = generate_sharegpt(o, *writer);
    FUZZ_CHECK(writer->close().ok(), "close");
  }
  if (n.ok()) read_back(out, *n);
  return 0;
}
