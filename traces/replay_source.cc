#include "traces/replay_source.h"

namespace kv::trace {
namespace {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// The per-request part of generated_output_token, computed once per request.
std::uint64_t output_stream(std::uint64_t seed, const std::string& id) { return splitmix64(seed ^ fnv1a(id)); }

TokenId output_token_of_stream(std::uint64_t stream, std::int64_t k, std::int64_t vocab_size) {
  const std::uint64_t x = splitmix64(stream + static_cast<std::uint64_t>(k));
  return static_cast<TokenId>(x % static_cast<std::uint64_t>(vocab_size));
}
}  // namespace

TokenId generated_output_token(std::uint64_t seed, const std::string& id, std::int64_t k, std::int64_t vocab_size) {
  return output_token_of_stream(output_stream(seed, id), k, vocab_size);
}

StatusOr<std::unique_ptr<TraceRequestSource>> TraceRequestSource::open(const std::string& path,
                                                                       const ReplaySourceOptions& options) {
  if (options.vocab_size <= 0) return Status::error("vocab size must be positive");
  auto reader = TraceReader::open(path);
  if (!reader.ok()) return reader.status();
  reader->keep_prompt_segments();
  return std::unique_ptr<TraceRequestSource>(new TraceRequestSource(std::move(reader.value()), options));
}

StatusOr<bool> TraceRequestSource::next(kv::RequestSpec* out) {
  if (options_.limit > 0 && reader_.num_read() >= options_.limit) return false;
  auto got = reader_.next(&scratch_);
  if (!got.ok()) return got.status();
  if (!*got) return false;
  TraceRequest& t = scratch_;
  out->id = std::move(t.id);
  out->prompt = std::move(t.prompt);
  out->deferred_prompt = DeferredPrompt{};
  if (!t.prompt_segments.empty()) {  // block references: expanded when the scheduler first needs them
    out->deferred_prompt.size = t.prompt_size();
    out->deferred_prompt.expand = [segments = std::move(t.prompt_segments)](std::vector<TokenId>& tokens) {
      expand_segments(segments, tokens);
    };
    t.prompt_segments.clear();
  }
  out->extras = HashExtras{};
  out->extras.cache_salt = std::move(t.cache_salt);
  out->extras.lora_name = std::move(t.lora_name);
  out->priority = t.priority;
  out->retention = BlockRetention{t.retention_priority, t.retention_duration};
  out->arrival_time_us = t.arrival_time_us;
  out->session_id = std::move(t.session_id);
  if (!t.output_tokens.empty()) {
    out->outputs = std::move(t.output_tokens);
  } else {  // generated when sampled: nothing is materialized up front
    out->outputs = OutputTokens::generated(
        t.output_length, [stream = output_stream(options_.seed, out->id), vocab = options_.vocab_size](std::int64_t k) {
          return output_token_of_stream(stream, k, vocab);
        });
  }
  return true;
}

}  // namespace kv::trace
