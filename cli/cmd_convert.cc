// kvsim convert --from sharegpt|mooncake|azure|burstgpt|tokens IN -o OUT: converts a public trace
// (traces/converters.h) to a kvsim trace. A failed conversion leaves no OUT behind. Prints the
// tokenizer it used (also recorded in the trace header) and what it did not replay.
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "cli/progress.h"
#include "model/util/parse_number.h"
#include "traces/converters.h"
#include "traces/trace_io.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "convert";

// The command line of `kvsim convert`, with its defaults.
struct ConvertArgs {
  trace::ConvertOptions c;
  std::string from, in, out, progress = "auto", tokenizer, seed_text = "0";
};

po::options_description convert_options(ConvertArgs& a) {
  trace::ConvertOptions& c = a.c;
  po::options_description opts(
      "kvsim convert --from FORMAT IN -o OUT [options]\n\n"
      "Converts a public trace to a kvsim trace:\n"
      "  sharegpt  ShareGPT JSON (conversations from/value or messages role/content, and a\n"
      "            top-level system); text encoded by --tokenizer; conversations interleaved at\n"
      "            --rate like `kvsim gen sharegpt`\n"
      "  tokens    JSONL of pre-tokenized requests: {\"prompt_token_ids\": [...], \"output_len\": N,\n"
      "            \"timestamp\": seconds, \"id\", \"session_id\", \"cache_salt\", \"lora_name\"\n"
      "            (all optional)}\n"
      "  mooncake  Mooncake JSONL; each hash_id is a deterministic 512-token block\n"
      "  azure     Azure LLM inference CSV (TIMESTAMP,ContextTokens,GeneratedTokens)\n"
      "  burstgpt  BurstGPT CSV (Timestamp,Model,Request tokens,Response tokens,...)\n"
      "Exit status: 0 ok, 2 bad usage or bad input (the message names file, line and field).\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("from", po::value<std::string>(&a.from),
                                                 "input format: sharegpt, mooncake, azure, burstgpt or tokens")(
      "input", po::value<std::string>(&a.in), "input file")("output,o", po::value<std::string>(&a.out),
                                                            "output trace file")("force", "replace OUT if it exists")(
      "allow-empty", po::bool_switch(&c.allow_empty), "an input with no requests writes an empty trace (else exit 2)")(
      "seed", po::value<std::string>(&a.seed_text)->default_value(a.seed_text),
      "seed of random prompts (azure, burstgpt) and arrivals (sharegpt)")(
      "max-requests", bounded("max-requests", &c.max_requests), "stop after this many requests (0 = all)")(
      "rate", po::value<double>(&c.rate)->default_value(c.rate), "sharegpt: arrivals per second")(
      "arrival-cv", po::value<double>(&c.arrival_cv)->default_value(c.arrival_cv),
      "sharegpt: gap coefficient of variation (1 = Poisson)")("sessions", bounded("sessions", &c.concurrent_sessions),
                                                              "sharegpt: conversations open at once")(
      "max-model-len", token_count("max-model-len", &c.max_model_len),
      "sharegpt: end a conversation before it exceeds this (0 = no limit)")(
      "model", po::value<std::string>(&c.model)->default_value(""), "burstgpt: keep only rows of this Model")(
      "tokenizer", po::value<std::string>(&a.tokenizer),
      "sharegpt: a Hugging Face tokenizer.json (docs/tokenizers.md), or word-hash (the default: a stand-in, not real "
      "ids)")("vocab-size", bounded("vocab-size", &c.vocab_size),
              "tokens: every id must be below this (0 = not checked)")(
      "progress", po::value<std::string>(&a.progress)->default_value(a.progress), "auto (on a terminal) | on | off");
  return opts;
}

// The parsed arguments checked, in the order their errors are reported; sets the seed.
Status check_convert_args(ConvertArgs& a, const std::optional<trace::SourceFormat>& format) {
  if (!format) return Status::error(a.from.empty() ? "missing --from FORMAT" : "unknown format '" + a.from + "'");
  if (a.in.empty()) return Status::error("missing input file");
  if (a.out.empty()) return Status::error("missing -o OUT");
  const std::optional<std::uint64_t> seed = parse_uint64(a.seed_text);
  if (!seed) return Status::error("--seed: '" + a.seed_text + "' is not an integer from 0 to 2^64-1");
  a.c.seed = *seed;
  if (Status s = trace::validate(a.c); !s.ok()) return s;
  if (Status s = check_progress_mode(a.progress); !s.ok()) return s;
  if (!a.tokenizer.empty() && *format != trace::SourceFormat::kShareGpt) {
    return Status::error("--tokenizer applies to --from sharegpt only (the other formats carry no text)");
  }
  if (a.c.vocab_size < 0) return Status::error("--vocab-size must be >= 0");
  return Status();
}

// Converts IN into OUT (none left behind on failure) and prints what was written and skipped.
int convert_file(const ConvertArgs& a, trace::SourceFormat format, bool force) {
  StatusOr<trace::TraceWriter> writer =
      trace::TraceWriter::create(a.out, trace::convert_header(format, a.in, a.c), force);
  if (!writer.ok()) return usage_error(kCommand, writer.status().message());
  ProgressLine progress_line("requests", a.progress);
  writer->on_write = [&progress_line](std::int64_t n) { progress_line.update(n); };
  StatusOr<trace::ConvertStats> stats = trace::convert_trace(format, a.in, a.c, *writer);
  Status closed = stats.ok() ? writer->close() : Status();
  if (!stats.ok() || !closed.ok()) {
    writer->abandon();
    return usage_error(kCommand, stats.ok() ? closed.message() : stats.status().message());
  }
  progress_line.done();
  std::cout << "wrote " << stats->requests << " requests (" << writer->bytes_written() << " bytes) to " << a.out;
  if (stats->skipped > 0) std::cout << "; skipped " << stats->skipped << " input records";
  std::cout << "\n";
  if (stats->unanswered > 0) {
    std::cout << stats->unanswered << " conversations end in a user message with no answer: "
              << "those last messages are not replayed (no output length to replay)\n";
  }
  return 0;
}

}  // namespace

int run_convert(int argc, char** argv) {
  ConvertArgs a;
  po::options_description opts = convert_options(a);
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  const std::optional<trace::SourceFormat> format = trace::parse_source_format(a.from);
  if (Status s = check_convert_args(a, format); !s.ok()) return usage_error(kCommand, s.message());
  StatusOr<trace::TextTokenizer> text_tokenizer =
      trace::TextTokenizer::open(a.tokenizer.empty() ? trace::kWordHashTokenizerName : a.tokenizer);
  if (!text_tokenizer.ok()) return usage_error(kCommand, "--tokenizer: " + text_tokenizer.status().message());
  if (*format == trace::SourceFormat::kShareGpt) {
    a.c.tokenizer = &*text_tokenizer;
    std::cout << "tokenizer: " << text_tokenizer->description() << "\n";
  }
  return convert_file(a, *format, vm.count("force") > 0);
}

}  // namespace kv::cli
