// The format names, option checks and trace headers of `kvsim convert`, and the dispatch to
// the converter of each format (convert_formats.h: one file per format).
#include "traces/converters.h"

#include <sstream>

#include "traces/block_tokens.h"
#include "traces/convert_formats.h"
#include "traces/generators.h"
#include "traces/tokenizer.h"

namespace kv::trace {

std::optional<SourceFormat> parse_source_format(std::string_view name) {
  if (name == "sharegpt") return SourceFormat::kShareGpt;
  if (name == "mooncake") return SourceFormat::kMooncake;
  if (name == "azure") return SourceFormat::kAzure;
  if (name == "burstgpt") return SourceFormat::kBurstGpt;
  if (name == "tokens") return SourceFormat::kTokens;
  return std::nullopt;
}

const char* to_string(SourceFormat f) {
  switch (f) {
    case SourceFormat::kShareGpt:
      return "sharegpt";
    case SourceFormat::kMooncake:
      return "mooncake";
    case SourceFormat::kAzure:
      return "azure";
    case SourceFormat::kBurstGpt:
      return "burstgpt";
    case SourceFormat::kTokens:
      return "tokens";
  }
  return "?";
}

Status validate(const ConvertOptions& o) {
  if (o.max_requests < 0) return Status::error("--max-requests: must be >= 0");
  if (!(o.rate >= kMinGenRate && o.rate <= kMaxGenRate)) {
    return Status::error("--rate: must be from 0.0001 to 1e9 per second");
  }
  if (!(o.arrival_cv >= 1e-3 && o.arrival_cv <= 100)) return Status::error("--arrival-cv: must be from 0.001 to 100");
  if (o.concurrent_sessions < 1 || o.concurrent_sessions > 1000000) {
    return Status::error("--sessions: must be from 1 to 1000000");
  }
  if (o.vocab_size < 0) return Status::error("--vocab-size: must be >= 0");
  if (o.max_model_len < 0 || o.max_model_len > kMaxPromptTokens) {
    return Status::error("--max-model-len: must be from 0 to " + std::to_string(kMaxPromptTokens));
  }
  return Status();
}

TraceHeader convert_header(SourceFormat format, const std::string& input, const ConvertOptions& o) {
  TraceHeader h;
  std::string base = input.substr(input.find_last_of('/') == std::string::npos ? 0 : input.find_last_of('/') + 1);
  std::ostringstream src;
  src << "kvsim convert --from " << to_string(format) << " " << base << " --seed " << o.seed;
  switch (format) {
    case SourceFormat::kShareGpt:
      src << " --rate " << o.rate << " --arrival-cv " << o.arrival_cv << " --sessions " << o.concurrent_sessions
          << " --max-model-len " << o.max_model_len;
      if (o.tokenizer != nullptr && o.tokenizer->name() != kWordHashTokenizerName) {
        src << " --tokenizer " << o.tokenizer->name();
      }
      h.tokenizer = o.tokenizer != nullptr ? o.tokenizer->description() : kWordHashTokenizerDescription;
      h.notes =
          "ShareGPT conversations: each prompt is the conversation so far; outputs are the "
          "recorded answers";
      break;
    case SourceFormat::kMooncake:
      h.tokenizer = "synthetic: hash_id h -> expand_block_tokens(h, 512) (traces/block_tokens.h)";
      h.notes = "Mooncake trace: 512-token blocks; equal hash ids give equal tokens";
      break;
    case SourceFormat::kAzure:
    case SourceFormat::kBurstGpt:
      h.tokenizer = "synthetic: a unique seeded random block per request (traces/block_tokens.h)";
      h.notes = "no prefix information in the source: prompts share nothing";
      if (!o.model.empty()) src << " --model " << o.model;
      break;
    case SourceFormat::kTokens:
      break;
  }
  if (o.max_requests > 0) src << " --max-requests " << o.max_requests;
  h.source = src.str();
  h.vocab_size = kBlockTokenVocab;
  if (format == SourceFormat::kShareGpt && o.tokenizer != nullptr) h.vocab_size = o.tokenizer->vocab_size();
  if (format == SourceFormat::kTokens) {
    h.tokenizer = "pre-tokenized: prompt_token_ids as given in the source";
    h.notes = "requests read from a JSONL of token ids; outputs are generated at replay";
    h.vocab_size = o.vocab_size;
    if (o.vocab_size > 0) src << " --vocab-size " << o.vocab_size;
    h.source = src.str();
  }
  return h;
}

namespace {

StatusOr<ConvertStats> convert_format(SourceFormat format, const std::string& input, const ConvertOptions& options,
                                      TraceWriter& writer) {
  switch (format) {
    case SourceFormat::kShareGpt:
      return convert_sharegpt(input, options, writer);
    case SourceFormat::kMooncake:
      return convert_mooncake(input, options, writer);
    case SourceFormat::kAzure:
      return convert_azure(input, options, writer);
    case SourceFormat::kBurstGpt:
      return convert_burstgpt(input, options, writer);
    case SourceFormat::kTokens:
      return convert_tokens(input, options, writer);
  }
  return Status::error("unknown format");
}

}  // namespace

StatusOr<ConvertStats> convert_trace(SourceFormat format, const std::string& input, const ConvertOptions& options,
                                     TraceWriter& writer) {
  StatusOr<ConvertStats> stats = convert_format(format, input, options, writer);
  if (stats.ok() && stats->requests == 0 && !options.allow_empty) {
    const std::string skipped =
        stats->skipped > 0 ? " (" + std::to_string(stats->skipped) + " records skipped, none kept)" : "";
    return Status::error(input + ": the input has no requests" + skipped + "; --allow-empty writes an empty trace");
  }
  return stats;
}

}  // namespace kv::trace
