// The in-memory form of one trace record, free of protobuf (trace.proto is the file format).
//
// A trace is a TraceHeader followed by TraceRequests in non-decreasing arrival order.
// Invariants of every TraceRequest a TraceReader returns:
//   1. prompt is non-empty and fully expanded, and prompt_segments empty; except from a reader
//      told to keep_prompt_segments(): then exactly one of the two is non-empty;
//   2. output_length >= 0, and output_length == output_tokens.size() when output_tokens is
//      non-empty (teacher-forced outputs); otherwise outputs are generated at replay;
//   3. 0 <= arrival_time_us <= kMaxArrivalTimeUs and >= the previous request's; id is unique
//      in the trace;
//   4. the prompt has at most kMaxPromptTokens tokens, output_length <= kMaxOutputTokens, and
//      every token id is >= 0 and, when the header's vocab_size is > 0, below it.
// A header's hash_algo is empty, "sha256_cbor" or "xxhash_cbor"; its vocab_size is >= 0.
// A writer given non-empty prompt_segments writes them (the compact form) instead of prompt.
// prompt_size() is the prompt's length in either form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/block_hasher.h"
#include "model/types.h"

namespace kv::trace {

inline constexpr std::uint32_t kFormatVersion = 1;
// About 31.7 years: any real trace fits, and the replayer's clock (arrival_time_us * 1000, in
// nanoseconds) cannot overflow int64_t.
inline constexpr std::int64_t kMaxArrivalTimeUs = 1'000'000'000'000'000;
// 16M tokens: more than any model's context, and small enough to hold in memory.
inline constexpr std::int64_t kMaxPromptTokens = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxOutputTokens = std::int64_t{1} << 24;
// The tokens one block reference (PromptSegment::block) may expand to.
inline constexpr int kMaxBlockRefTokens = 1 << 20;

struct TraceHeader {
  std::string source;
  std::string hash_seed = std::string(kDefaultHashSeed);
  std::string hash_algo;  // empty = sha256_cbor
  int block_size = 0;     // 0 = none in particular
  std::string tokenizer;
  std::int64_t vocab_size = 0;
  std::string notes;
};

// One piece of a compact prompt: literal tokens, or the first num_tokens of block block_id.
struct PromptSegment {
  std::vector<TokenId> tokens;  // used when num_tokens == 0
  std::uint64_t block_id = 0;
  int num_tokens = 0;  // > 0: a block reference

  static PromptSegment literal(std::vector<TokenId> t) { return PromptSegment{std::move(t), 0, 0}; }
  static PromptSegment block(std::uint64_t id, int n) { return PromptSegment{{}, id, n}; }
};

struct TraceRequest {
  std::string id;
  std::int64_t arrival_time_us = 0;
  std::vector<TokenId> prompt;
  std::vector<PromptSegment> prompt_segments;  // writer only: the compact form of prompt
  std::vector<TokenId> output_tokens;
  std::int64_t output_length = 0;
  std::string cache_salt;
  std::string lora_name;
  std::int32_t priority = 0;
  std::string session_id;
  std::int32_t retention_priority = 35;  // BlockRetention::kDefaultPriority; 0..100
  std::int64_t retention_duration = 0;   // releases; 0: until evicted

  std::int64_t prompt_size() const;
};

// Appends the expansion of `segments` to `out`.
void expand_segments(const std::vector<PromptSegment>& segments, std::vector<TokenId>& out);

}  // namespace kv::trace
