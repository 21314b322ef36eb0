// Frontend: the serving process in front of vLLM's engine core (the API server: HTTP,
// tokenization, the ZMQ hop to EngineCore, and on the way back detokenization and the stream to
// the client), as time that the client sees and the engine does not. docs/fidelity.md,
// "Serving front end", gives the model and the measurements behind the vllm-v1 terms.
// Invariants:
//   1. Two lanes, each one process thread that serves its work in order: the request lane
//      (a request's fixed cost plus its tokenization) and the output lane (per engine step, the
//      hop back plus every output token's detokenization). A lane starts a piece of work when
//      the work arrives and the lane is free, whichever is later.
//   2. The engine sees a request when the request lane is done with it; every token of a step
//      reaches the client when the output lane is done with that step. Both are never earlier
//      than the engine's own times, and equal to them when every term is 0 (`none`), so a run
//      without a front end makes the same decisions, bit for bit.
//   3. A request's fixed latency (`request_latency_ns`) delays the engine's arrival after the
//      request lane and occupies no lane: it is time a request waits, not work a thread does, so
//      arrivals stay in the clients' order.
//   4. Integer nanoseconds throughout: the same inputs give the same times on every machine.
#pragma once

#include <cstdint>
#include <string>

#include "model/util/status.h"

namespace kv::replay {

// The terms of a front end, in ns; `name` is the preset or the text it was read from.
struct FrontendModel {
  std::string name = "none";
  std::int64_t request_ns = 0;          // per request: hand-off to the engine core
  std::int64_t prompt_token_ns = 0;     // per prompt token: tokenization
  std::int64_t output_token_ns = 0;     // per output token: detokenization and the output object
  std::int64_t step_ns = 0;             // per engine step with outputs: the hop back to the API server
  std::int64_t request_latency_ns = 0;  // per request, outside the lanes (invariant 3)
  bool enabled() const {
    return request_ns > 0 || prompt_token_ns > 0 || output_token_ns > 0 || step_ns > 0 || request_latency_ns > 0;
  }
};

// none | vllm-v1 | REQUEST_NS,PROMPT_TOKEN_NS,OUTPUT_TOKEN_NS,STEP_NS[,LATENCY_NS] (each
// 0..10^9; LATENCY_NS is request_latency_ns, default 0); errors name --frontend.
StatusOr<FrontendModel> parse_frontend(const std::string& text);

// The two lanes of invariant 1 over one run, priced with `m` (the same model at every call).
class FrontendLanes {
 public:
  // When the engine sees a request the client sent at `client_ns` with `prompt_tokens` tokens.
  std::int64_t engine_arrival_ns(const FrontendModel& m, std::int64_t client_ns, std::int64_t prompt_tokens);
  // When the client gets the `tokens` output tokens of a step that ended at `step_end_ns`.
  std::int64_t client_time_ns(const FrontendModel& m, std::int64_t step_end_ns, std::int64_t tokens);

 private:
  std::int64_t request_free_ns_ = 0;  // the request lane is busy until then
  std::int64_t output_free_ns_ = 0;   // the output lane is busy until then
};

}  // namespace kv::replay
