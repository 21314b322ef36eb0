// TraceRequestSource: streams a trace file into the Replayer as RequestSpecs.
// Output tokens come from the trace when it has them; otherwise they are generated, seeded by
// (seed, request id, output index), so the same trace and seed always give the same tokens
// whatever the backend (teacher forcing); generated ones are computed when sampled
// (model/sched/output_tokens.h), never materialized. Prompts stored as block references stay
// references (a DeferredPrompt, model/deferred_prompt.h) until the scheduler first looks at the
// request, so a queue of waiting requests costs a few bytes per 512-token block, not 4 bytes a
// token plus its block hashes. Holds one request in memory at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/request_source.h"
#include "traces/trace_io.h"

namespace kv::trace {

struct ReplaySourceOptions {
  std::uint64_t seed = 0;
  std::int64_t vocab_size = 128256;  // generated outputs fall in [0, vocab_size)
  std::int64_t limit = 0;            // stop after this many requests (0 = all)
};

class TraceRequestSource final : public kv::RequestSource {
 public:
  static StatusOr<std::unique_ptr<TraceRequestSource>> open(const std::string& path,
                                                            const ReplaySourceOptions& options);
  StatusOr<bool> next(kv::RequestSpec* out) override;
  const TraceHeader& header() const { return reader_.header(); }
  std::int64_t num_read() const { return reader_.num_read(); }

 private:
  TraceRequestSource(TraceReader reader, ReplaySourceOptions options) : reader_(std::move(reader)), options_(options) {}
  TraceReader reader_;
  ReplaySourceOptions options_;
  TraceRequest scratch_;
};

// The k-th generated output token of request `id` (deterministic).
TokenId generated_output_token(std::uint64_t seed, const std::string& id, std::int64_t k, std::int64_t vocab_size);

}  // namespace kv::trace
