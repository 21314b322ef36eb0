#include "fuzz/campaign_kinds.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/fuzz_target.h"
#include "model/util/parse_size.h"
#include "ops/ops_interpreter.h"
#include "replay/replay_config.h"
#include "sim/kernels.h"
#include "sim/profile_table.h"
#include "traces/converters.h"
#include "traces/trace_io.h"

namespace kv::campaign {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path, int max_lines) {
  std::ifstream in(path, std::ios::binary);
  std::string text, line;
  for (int n = 0; n < max_lines && std::getline(in, line); ++n) text += line + "\n";
  return text;
}

// Every file of a fuzz corpus folder, then the first lines of each extra file.
std::vector<std::string> seeds_of(const fs::path& root, const std::string& corpus,
                                  const std::vector<std::string>& extra, int max_lines = 40) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "fuzz" / "corpus" / corpus, ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const std::string& f : extra) files.push_back(root / f);
  std::vector<std::string> seeds;
  for (const fs::path& f : files) seeds.push_back(read_file(f, max_lines));
  return seeds;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

RunResult error(const std::string& message, const std::string& must_name) {
  const bool clear = !message.empty() && message.find(must_name) != std::string::npos;
  return {clear ? Verdict::kError : Verdict::kUnclearError, "", message};
}

RunResult run_convert(trace::SourceFormat format, std::string_view bytes) {
  const std::string in = fuzz::write_scratch("campaign-input", bytes);
  const std::string out = fuzz::scratch_dir() + "/campaign-out.kvtrace";
  std::error_code ec;
  fs::remove(out, ec);
  trace::ConvertOptions options;
  options.max_requests = 2000;
  auto writer = trace::TraceWriter::create(out, trace::convert_header(format, in, options), true);
  if (!writer.ok()) return error(writer.status().message(), "campaign-out");
  auto stats = trace::convert_trace(format, in, options, *writer);
  if (!stats.ok()) {
    writer->abandon();
    if (fs::exists(out, ec)) return {Verdict::kPartialOutput, "", stats.status().message()};
    return error(stats.status().message(), in);
  }
  if (Status s = writer->close(); !s.ok()) return error(s.message(), "campaign-out");
  return {Verdict::kAccepted, read_all(out), ""};
}

RunResult run_profile(std::string_view bytes) {
  const std::string in = fuzz::write_scratch("campaign-profile.csv", bytes);
  auto table = sim::ProfileTable::load(in);
  if (!table.ok()) return error(table.status().message(), in);
  std::ostringstream out;
  for (const sim::ProfileRow& r : table->all_rows()) {
    out << sim::kernel_name(r.kernel) << ',' << r.num_tokens << ',' << r.num_seqs << ',' << r.context_tokens << ','
        << r.time_ns << '\n';
  }
  return {Verdict::kAccepted, out.str(), ""};
}

RunResult run_ops(std::string_view bytes) {
  std::istringstream in{std::string(bytes)};
  std::ostringstream out, err;
  const int rc = OpsInterpreter::run_script(in, out, err);
  if (rc == 0) return {Verdict::kAccepted, out.str(), ""};
  return error(err.str(), "line ");
}

// "NAME VALUE" (or "NAME" for a switch) per line, as `kvsim replay --NAME VALUE`.
RunResult run_options(std::string_view bytes) {
  replay::ReplayConfig config;
  std::istringstream in{std::string(bytes)};
  for (std::string line; std::getline(in, line);) {
    const std::size_t space = line.find(' ');
    const std::string name = line.substr(0, space);
    const std::string value = space == std::string::npos ? "on" : line.substr(space + 1);
    if (Status s = replay::set_option(config, name, value); !s.ok()) return error(s.message(), "--");
  }
  if (Status s = config.validate(); !s.ok()) return error(s.message(), "--");
  std::ostringstream out;
  for (const auto& [k, v] : replay::describe(config)) out << k << '=' << v << '\n';
  return {Verdict::kAccepted, out.str(), ""};
}

RunResult run_size(std::string_view bytes, bool tokens) {
  const std::optional<std::int64_t> v = tokens ? parse_token_count(bytes) : parse_byte_size(bytes);
  if (!v) return {Verdict::kError, "", "not a size"};  // the command line adds the option's name
  return {Verdict::kAccepted, std::to_string(*v), ""};
}

InputKind converter(const fs::path& root, const std::string& format, Syntax syntax, std::vector<std::string> extra,
                    std::vector<std::string> required, std::vector<std::string> numeric) {
  const trace::SourceFormat f = *trace::parse_source_format(format);
  return {"convert_" + format,
          syntax,
          seeds_of(root, "convert_" + format, extra),
          std::move(required),
          std::move(numeric),
          [f](std::string_view b) { return run_convert(f, b); }};
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kAccepted:
      return "accepted";
    case Verdict::kError:
      return "clean error";
    case Verdict::kUnclearError:
      return "unclear error";
    case Verdict::kPartialOutput:
      break;
  }
  return "partial output";
}

std::vector<InputKind> campaign_kinds(const std::string& source_dir) {
  const fs::path root(source_dir);
  std::vector<InputKind> kinds;
  kinds.push_back(converter(root, "tokens", Syntax::kJsonLines, {}, {"prompt_token_ids", "output_len"},
                            {"output_len", "timestamp"}));
  kinds.push_back(converter(root, "mooncake", Syntax::kJsonLines, {"traces/data/mooncake_conversation_trace.jsonl"},
                            {"timestamp", "input_length", "output_length", "hash_ids"},
                            {"timestamp", "input_length", "output_length"}));
  kinds.push_back(converter(root, "azure", Syntax::kCsv, {"traces/data/AzureLLMInferenceTrace_conv.csv"},
                            {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, {"ContextTokens", "GeneratedTokens"}));
  kinds.push_back(converter(root, "burstgpt", Syntax::kCsv, {}, {"Timestamp", "Request tokens", "Response tokens"},
                            {"Timestamp", "Request tokens", "Response tokens"}));
  kinds.push_back(converter(root, "sharegpt", Syntax::kJson, {}, {"conversations"}, {}));
  kinds.push_back({"profile",
                   Syntax::kCsv,
                   seeds_of(root, "profile", {"reports/calibration/synthetic_profile.csv"}),
                   {"kernel", "num_tokens", "num_seqs", "context_tokens", "time_ns"},
                   {"num_tokens", "num_seqs", "context_tokens", "time_ns"},
                   run_profile});
  kinds.push_back({"ops",
                   Syntax::kLines,
                   seeds_of(root, "ops", {"tests/golden/01_prefill.ops", "tests/golden/02_evict.ops"}),
                   {},
                   {},
                   run_ops});
  kinds.push_back({"replay_options", Syntax::kLines, seeds_of(root, "replay_options", {}), {}, {}, run_options});
  kinds.push_back({"byte_size",
                   Syntax::kWord,
                   {"64G", "64GiB", "1.5T", "1000", "512KiB", "2MB", "0"},
                   {},
                   {},
                   [](std::string_view b) { return run_size(b, false); }});
  kinds.push_back(
      {"token_count", Syntax::kWord, {"1M", "2k", "1000", "1e3", "8192", "0"}, {}, {}, [](std::string_view b) {
         return run_size(b, true);
       }});
  return kinds;
}

}  // namespace kv::campaign
