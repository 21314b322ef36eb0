// Converters from public trace formats to kvsim traces.
//
//   sharegpt  JSON array of {"id", "system"?, "conversations": [{"from": "human"|"gpt"|...,
//             "value": text}]} or with "messages": [{"role", "content"}] (simdjson). Text is
//             encoded by ConvertOptions::tokenizer (text_tokenizer.h; word-hash when null), each
//             message on its own, no chat template or special tokens added. The top-level
//             "system" text and "system" messages before the first turn form the preamble; each
//             user message followed by an answer becomes one request whose prompt is the
//             conversation so far; a last user message with no answer is counted (unanswered),
//             not replayed. Sessions are interleaved and timed as in generators.h (rate,
//             arrival_cv, concurrent_sessions).
//   tokens    JSONL, one request a line (docs/tokenizers.md): {"prompt_token_ids": [ids],
//             "output_len": n, "timestamp"?: seconds, "id"?: text, "session_id"?: text,
//             "cache_salt"?: text, "lora_name"?: text}, output_len >= 1. Either
//             every line has a timestamp (non-decreasing) or none has (all arrive at 0).
//   mooncake  JSONL {"timestamp" (ms), "input_length", "output_length", "hash_ids"} (simdjson).
//             hash_id h expands to expand_block_tokens(h, 512), the last block truncated so the
//             prompt has exactly input_length tokens; stored compactly as block references.
//             input_length and output_length >= 1, ceil(input_length / 512) hash ids.
//   azure     CSV TIMESTAMP,ContextTokens,GeneratedTokens (model/util/csv_table.h). No prefix
//             information: each prompt is a unique seeded random block of ContextTokens tokens.
//             Rows with zero context or generated tokens (failed requests) are skipped and counted.
//   burstgpt  CSV Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type[,Session ID]
//             (seconds), prompts as for azure. Rows with zero request or response tokens (failed
//             requests) are skipped and counted.
//   CSV inputs (azure, burstgpt) are read by model/util/csv_table.h: every row has the header's
//   fields (columns found by name), quotes without line breaks, no carriage return but in a
//   "\r\n" line end; numbers are digits, burstgpt's Timestamp a plain decimal (no exponent),
//   azure's TIMESTAMP exactly "YYYY-MM-DD HH:MM:SS[.digits]".
// Every bad input is a Status naming the file, the line (or JSON record) and the field. An input
// with no requests to write (an empty file, a CSV header alone, every record skipped) is an
// error unless ConvertOptions::allow_empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/util/status.h"
#include "traces/text_tokenizer.h"
#include "traces/trace.h"
#include "traces/trace_io.h"

namespace kv::trace {

enum class SourceFormat { kShareGpt, kMooncake, kAzure, kBurstGpt, kTokens };

std::optional<SourceFormat> parse_source_format(std::string_view name);
const char* to_string(SourceFormat format);

struct ConvertOptions {
  std::uint64_t seed = 0;                    // random prompts (azure, burstgpt) and arrivals (sharegpt)
  double rate = 4.0;                         // sharegpt only: requests per second
  double arrival_cv = 1.0;                   // sharegpt only
  int concurrent_sessions = 16;              // sharegpt only
  int max_model_len = 0;                     // sharegpt only: end a conversation before exceeding (0 = no limit)
  std::int64_t max_requests = 0;             // stop after this many requests (0 = all)
  std::string model;                         // burstgpt only: keep rows of this Model (empty = all)
  const TextTokenizer* tokenizer = nullptr;  // sharegpt only: text -> ids (null = word-hash)
  std::int64_t vocab_size = 0;               // tokens only: ids must be below this (0 = not checked)
  bool allow_empty = false;                  // an input with no requests converts to an empty trace
};

struct ConvertStats {
  std::int64_t requests = 0;    // written
  std::int64_t skipped = 0;     // input records skipped (failed requests, empty turns)
  std::int64_t unanswered = 0;  // sharegpt: conversations ending in a user message with no answer
};

// Rejects options outside their ranges with an error naming the `kvsim convert` option.
Status validate(const ConvertOptions& options);

TraceHeader convert_header(SourceFormat format, const std::string& input, const ConvertOptions& options);

// Reads `input` and writes its requests to `writer` (whose header came from convert_header);
// no request written is an error unless options.allow_empty.
StatusOr<ConvertStats> convert_trace(SourceFormat format, const std::string& input, const ConvertOptions& options,
                                     TraceWriter& writer);

}  // namespace kv::trace
