// Trace generators and the session interleaver shared with the ShareGPT converter.
//
// Everything is a pure function of the options (seed included): the same options give the same
// requests and therefore, through TraceWriter, the same bytes.
//
// Multi-turn sessions: turn k of a session is a request whose prompt is the whole conversation
// so far (system prompt, user_1, reply_1, ..., user_k) and whose output tokens are reply_k, so
// turn k+1 really re-reads turn k's prompt and output (prefix reuse). Requests arrive by a
// Poisson process at `rate` (or a bursty hyperexponential one when arrival_cv > 1); each arrival
// goes to a session chosen uniformly among `concurrent_sessions` active ones, and a finished
// session is replaced by the next one from the source.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/util/status.h"
#include "traces/trace.h"
#include "traces/trace_io.h"

namespace kv::trace {

// Bounds of generated traces: at most 10^8 requests, arrivals from 10^-4 to 10^9 per second.
inline constexpr std::int64_t kMaxGeneratedRequests = 100'000'000;
inline constexpr double kMinGenRate = 1e-4, kMaxGenRate = 1e9;

struct Turn {
  PromptSegment user;   // the new user message
  PromptSegment reply;  // the assistant's answer: the request's output tokens
};

struct Session {
  std::string id;
  std::vector<PromptSegment> preamble;  // system prompt (may be empty)
  std::vector<Turn> turns;
};

struct ArrivalOptions {
  double rate = 4.0;              // requests per second (> 0)
  double arrival_cv = 1.0;        // gap coefficient of variation; 1 = Poisson, > 1 = bursty
  int concurrent_sessions = 16;   // sessions open at once
  std::int64_t max_requests = 0;  // stop after this many requests (0 = when sessions run out)
  std::uint64_t seed = 0;
};

// Pulls sessions from `next_session` (true = got one, false = no more) and writes their turns
// as interleaved requests. Returns the number of requests written, or an error when arrivals
// pass kMaxArrivalTimeUs (trace.h).
StatusOr<std::int64_t> write_sessions(const ArrivalOptions& arrivals,
                                      const std::function<StatusOr<bool>(Session*)>& next_session, TraceWriter& writer);

struct ShareGptGenOptions {
  std::int64_t num_requests = 500;
  std::uint64_t seed = 0;
  double rate = 4.0;
  double arrival_cv = 1.0;
  int concurrent_sessions = 16;
  int system_prompt_tokens = 512;   // shared by every session (0 = none)
  double mean_turns = 4.0;          // turns per session: 1 + geometric, this mean
  double mean_user_tokens = 160.0;  // lognormal turn lengths with these means ...
  double mean_reply_tokens = 340.0;
  double sigma = 1.0;          // ... and this log-space standard deviation
  int max_turn_tokens = 4096;  // longer draws are redrawn
  int max_model_len = 8192;    // a session ends before a turn whose prompt + output exceeds
                               // it (a first turn that cannot fit is shrunk to fit)
};

// Rejects options outside their documented ranges (NaN, infinities, absurd sizes included) with
// an error naming the `kvsim gen` option; the generators require options that pass.
Status validate(const ShareGptGenOptions& options);
TraceHeader sharegpt_gen_header(const ShareGptGenOptions& options);
StatusOr<std::int64_t> generate_sharegpt(const ShareGptGenOptions& options, TraceWriter& writer);

// vLLM's prefix-caching benchmark shape: num_prompts prompts, each one of num_prefixes shared
// prefixes of prefix_len tokens followed by a unique random suffix of suffix_len tokens, each
// repeated `repeat` times, shuffled; requests arrive at `rate` per second (0 = all at time 0).
struct PrefixGenOptions {
  std::int64_t num_prompts = 100;
  int num_prefixes = 1;
  int prefix_len = 1024;
  int suffix_len = 256;
  int repeat = 4;
  int output_len = 64;
  double rate = 0.0;
  std::uint64_t seed = 0;
};

Status validate(const PrefixGenOptions& options);
TraceHeader prefix_gen_header(const PrefixGenOptions& options);
StatusOr<std::int64_t> generate_prefix(const PrefixGenOptions& options, TraceWriter& writer);

// The shared-prefix workload of router benchmarks (SGLang's generated-shared-prefix dataset,
// llm-d's inference-perf shared_prefix data): `groups` system prompts of prefix_len tokens, each
// with `users` questions of question_len tokens; each of num_requests requests sends one
// (group, user) prompt drawn uniformly, so prompts repeat; Poisson arrivals at `rate` per
// second (0 = all at time 0). With `stages` (a load ladder: rate, seconds), Poisson arrivals at
// each stage's rate for its seconds, one stage after the other, and as many requests as they
// bring (num_requests is then ignored). A request's session id is its "g<group>-u<user>".
struct SharedPrefixGenOptions {
  int groups = 8;
  int users = 16;
  int prefix_len = 1024;
  int question_len = 128;
  int output_len = 64;
  std::int64_t num_requests = 500;
  double rate = 4.0;
  std::vector<std::pair<double, double>> stages;  // (requests per second, seconds); empty: `rate`
  std::uint64_t seed = 0;
};

// "RATE:SECONDS,RATE:SECONDS,..." (--stages); an error names the option and the stage.
StatusOr<std::vector<std::pair<double, double>>> parse_stages(std::string_view text);

Status validate(const SharedPrefixGenOptions& options);
TraceHeader shared_prefix_gen_header(const SharedPrefixGenOptions& options);
StatusOr<std::int64_t> generate_shared_prefix(const SharedPrefixGenOptions& options, TraceWriter& writer);

}  // namespace kv::trace
