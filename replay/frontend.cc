#include "replay/frontend.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "model/util/parse_number.h"

namespace kv::replay {

namespace {

constexpr std::int64_t kMaxTermNs = 1'000'000'000;  // 1 s per request, token or step

// vLLM V1's front end, from public measurements (docs/fidelity.md, "Serving front end"):
//   request_ns       13 us: one ZMQ message one way; libzmq's local_lat/remote_lat measured an
//                    average round trip of 25.9 us for 30-byte messages (zeromq/libzmq issue
//                    #3560, "Very high latency in dealer-router"), halved.
//   prompt_token_ns  2,070 ns: the Llama 3.1 tokenizer of Hugging Face tokenizers encodes
//                    1.93 MB/s on one thread, 10 documents (huggingface/tokenizers PR #1582,
//                    "Add benchmark vs tiktoken"), at about 4 characters of English per token
//                    (OpenAI's rule of thumb, help.openai.com "What are tokens and how to count
//                    them?"): 4 B / 1.93 MB/s.
//   output_token_ns  20 us: vLLM's incremental detokenization of one token, 19-21 us per call
//                    as logged in vllm-project/vllm issue #5206 ("Detokenize delay when update
//                    vllm from 0.3.0 to 0.4.2", the 0.3.0 figures).
//   step_ns          13 us: the outputs' ZMQ message back to the API server, as request_ns.
// HTTP handling in the API server is not in it: no public per-request measurement was found.
FrontendModel vllm_v1() {
  FrontendModel m;
  m.name = "vllm-v1";
  m.request_ns = 13'000;
  m.prompt_token_ns = 2'070;
  m.output_token_ns = 20'000;
  m.step_ns = 13'000;
  return m;
}

Status bad_frontend(const std::string& why) { return Status::error("--frontend: " + why); }

}  // namespace

StatusOr<FrontendModel> parse_frontend(const std::string& text) {
  if (text == "none") return FrontendModel{};
  if (text == "vllm-v1") return vllm_v1();
  std::vector<std::string> parts(1);
  for (char ch : text) {
    if (ch == ',')
      parts.emplace_back();
    else
      parts.back() += ch;
  }
  if (parts.size() != 4 && parts.size() != 5) {
    return bad_frontend(
        "must be none, vllm-v1 or REQUEST_NS,PROMPT_TOKEN_NS,OUTPUT_TOKEN_NS,STEP_NS[,LATENCY_NS], got '" + text + "'");
  }
  std::int64_t terms[5] = {};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::optional<std::int64_t> v = parse_int64(parts[i]);
    if (!v) return bad_frontend("'" + parts[i] + "' is not an integer");
    if (*v < 0 || *v > kMaxTermNs) {
      return bad_frontend("must be in 0.." + std::to_string(kMaxTermNs) + " ns, got " + parts[i]);
    }
    terms[i] = *v;
  }
  FrontendModel m;
  m.name = text;
  m.request_ns = terms[0];
  m.prompt_token_ns = terms[1];
  m.output_token_ns = terms[2];
  m.step_ns = terms[3];
  m.request_latency_ns = terms[4];
  return m;
}

std::int64_t FrontendLanes::engine_arrival_ns(const FrontendModel& m, std::int64_t client_ns,
                                              std::int64_t prompt_tokens) {
  request_free_ns_ = std::max(request_free_ns_, client_ns) + m.request_ns + m.prompt_token_ns * prompt_tokens;
  return request_free_ns_ + m.request_latency_ns;
}

std::int64_t FrontendLanes::client_time_ns(const FrontendModel& m, std::int64_t step_end_ns, std::int64_t tokens) {
  output_free_ns_ = std::max(output_free_ns_, step_end_ns) + m.step_ns + m.output_token_ns * tokens;
  return output_free_ns_;
}

}  // namespace kv::replay
