// analyze_trace: one streaming pass over a trace giving its size, length and arrival statistics
// and its prefix-sharing structure, for `kvsim trace info` and for reports.
//
// Prefix sharing is measured on the tree of chained block hashes (kv::BlockHasher with the
// trace's hash algorithm and seed, LoRA name and salt as extra keys): a vertex per distinct full
// block, its parent the block before it. Requests are taken in file (arrival) order, and:
//   1. infinite-cache hits: a request hits the longest run of its leading prompt blocks already
//      in the tree, capped at (prompt_tokens - 1) / block_size blocks as vLLM caps them; the hit
//      rate is hit tokens / prompt tokens;
//   2. after its lookup, every full block of the request enters the tree: its prompt, and when
//      the trace gives output tokens, prompt + outputs but the last (whose KV is never computed);
//   3. reuse distance, for every access to a block already in the tree: in requests (index
//      difference with the previous request that touched it) and in distinct blocks touched in
//      between (LRU stack distance);
//   4. a shared prefix is a vertex touched by >= 2 prompts whose children are each touched by
//      fewer (a branch point or the end of a shared run); the top-K are the most shared.
// Output is deterministic: no iteration over unordered containers reaches it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/util/status.h"
#include "traces/trace.h"

namespace kv::trace {

struct AnalysisOptions {
  int block_size = 16;
  int top_k = 10;
  std::string hash_algo;   // empty = the trace header's (sha256_cbor if it has none)
  std::string dot_path;    // non-empty: write a Graphviz DOT of the top of the prefix tree
  int dot_max_nodes = 40;  // the most shared prefixes drawn (and the root)
  std::function<void(std::int64_t requests_read)> on_progress;  // after each request; may be empty
};

struct Distribution {
  std::int64_t count = 0;
  double mean = 0;
  double p50 = 0, p90 = 0, p99 = 0;  // model/util/percentile.h (numpy's linear method)
  std::int64_t max = 0;
};

struct SharedPrefix {
  std::int64_t depth_blocks = 0;  // prefix length in blocks (tokens = depth * block_size)
  std::int64_t requests = 0;      // prompts that contain it
  std::string first_request_id;   // the first of them
};

struct TraceAnalysis {
  TraceHeader header;
  int block_size = 0;
  std::string hash_algo;
  std::int64_t requests = 0;
  std::int64_t sessions = 0;  // distinct non-empty session ids
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;  // sum of output_length
  std::int64_t requests_with_output_tokens = 0;
  Distribution prompt_len, output_len;
  std::int64_t first_arrival_us = 0, last_arrival_us = 0;
  double arrival_rate = 0;  // (requests - 1) / span, per second; 0 if span is 0

  std::int64_t block_accesses = 0;                   // full blocks entered, in order (rule 2)
  std::int64_t distinct_blocks = 0;                  // tree vertices, root excluded
  std::int64_t hit_tokens = 0;                       // rule 1
  double infinite_cache_hit_rate = 0;                // hit_tokens / prompt_tokens
  Distribution reuse_requests, reuse_blocks;         // rule 3
  std::vector<std::int64_t> reuse_blocks_histogram;  // [i]: stack distances in [2^i - 1, 2^(i+1) - 1)
  std::vector<SharedPrefix> top_prefixes;            // rule 4, most shared first
};

StatusOr<TraceAnalysis> analyze_trace(const std::string& path, const AnalysisOptions& options);

std::string analysis_to_text(const TraceAnalysis& a);
std::string analysis_to_json(const TraceAnalysis& a);

}  // namespace kv::trace
