#include "traces/trace_analysis.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>

#include "files/output_file.h"
#include "model/block_hasher.h"
#include "model/util/check.h"
#include "model/util/percentile.h"
#include "traces/trace_io.h"

namespace kv::trace {

namespace {

struct PrefixVertex {
  std::uint32_t parent = 0;
  std::uint32_t depth = 0;          // in blocks; the root has 0
  std::int64_t requests = 0;        // prompts containing this block
  std::int64_t first_request = -1;  // index of the first prompt containing it
  std::int64_t last_request = -1;   // index of the last request that touched it
  std::int64_t last_access = -1;    // position in the access sequence of the last touch
};

// Vertices by index, each after its parent; parent links only (no child lists: 40 bytes a block).
using PrefixTree = std::vector<PrefixVertex>;
using Vertex = std::size_t;

// Fenwick tree over access positions, growing by doubling: one marker per block, at its last
// access, so markers in (a, b) count the distinct blocks touched strictly between a and b.
class AccessMarkers {
 public:
  void set(std::int64_t pos, int delta) {
    while (static_cast<std::size_t>(pos) >= bits_.size()) grow();
    bits_[static_cast<std::size_t>(pos)] = static_cast<std::int8_t>(bits_[static_cast<std::size_t>(pos)] + delta);
    for (std::size_t i = static_cast<std::size_t>(pos) + 1; i <= tree_.size(); i += i & (~i + 1)) {
      tree_[i - 1] += delta;
    }
  }
  // Markers in [0, pos).
  std::int64_t prefix(std::int64_t pos) const {
    std::int64_t s = 0;
    for (std::size_t i = std::min(static_cast<std::size_t>(pos), tree_.size()); i > 0; i -= i & (~i + 1)) {
      s += tree_[i - 1];
    }
    return s;
  }

 private:
  void grow() {
    const std::size_t n = std::max<std::size_t>(1024, bits_.size() * 2);
    bits_.resize(n, 0);
    tree_.assign(n, 0);
    for (std::size_t i = 1; i <= n; ++i) {  // O(n) rebuild
      tree_[i - 1] += bits_[i - 1];
      const std::size_t j = i + (i & (~i + 1));
      if (j <= n) tree_[j - 1] += tree_[i - 1];
    }
  }
  std::vector<std::int8_t> bits_;
  std::vector<std::int32_t> tree_;
};

template <typename T>
Distribution distribution(std::vector<T>& v) {
  Distribution d;
  d.count = static_cast<std::int64_t>(v.size());
  if (v.empty()) return d;
  long double sum = 0;
  for (T x : v) sum += x;
  d.mean = static_cast<double>(sum / static_cast<long double>(v.size()));
  std::sort(v.begin(), v.end());
  d.p50 = percentile_of_sorted(v, 50);
  d.p90 = percentile_of_sorted(v, 90);
  d.p99 = percentile_of_sorted(v, 99);
  d.max = static_cast<std::int64_t>(v.back());
  return d;
}

// The DOT of the `max_nodes` most shared prefixes, each hung below its nearest drawn ancestor.
Status write_dot(const std::string& path, const PrefixTree& tree, const std::vector<Vertex>& shared, int block_size,
                 std::int64_t num_requests) {
  std::map<Vertex, std::size_t> index;  // tree vertex -> DOT vertex
  index[0] = 0;
  for (Vertex v : shared) index.emplace(v, index.size());
  struct DotNode {
    std::string label;
  };
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, DotNode> dot(index.size());
  dot[0].label = "root\n" + std::to_string(num_requests) + " requests";
  for (Vertex v : shared) {
    const PrefixVertex& p = tree[v];
    Vertex up = p.parent;
    while (up != 0 && index.count(up) == 0) up = tree[up].parent;
    const std::uint32_t from = up == 0 ? 1 : tree[up].depth + 1;
    std::ostringstream label;
    label << "blocks " << from << "-" << p.depth << " (" << static_cast<std::int64_t>(p.depth) * block_size
          << " tokens)\n"
          << p.requests << " requests";
    dot[index[v]].label = label.str();
    boost::add_edge(index[up], index[v], dot);
  }
  std::ostringstream out;
  boost::write_graphviz(out, dot, boost::make_label_writer(boost::get(&DotNode::label, dot)));
  return files::write_file_atomically(path, out.str());
}

}  // namespace

namespace {

// One pass over a trace: counts, lengths, the prefix tree and reuse distances (rules 1-3).
struct TracePass {
  TracePass(TraceAnalysis& analysis, const BlockHasher& h, int block_size) : a(analysis), hasher(h), B(block_size) {}

  TraceAnalysis& a;
  const BlockHasher& hasher;
  int B;
  PrefixTree tree = PrefixTree(1);                           // vertex 0: the root (the empty prefix)
  std::unordered_map<std::uint64_t, std::uint32_t> by_hash;  // BlockHash::prefix64 -> vertex
  AccessMarkers markers;
  std::vector<std::int64_t> prompt_lens, output_lens;
  std::vector<std::uint32_t> reuse_requests, reuse_blocks;  // one each per re-access: kept small
  std::set<std::string> sessions;
  std::vector<BlockHash> hashes;
  std::vector<TokenId> tokens;

  void count(const TraceRequest& r, std::int64_t req) {
    if (req == 0) a.first_arrival_us = r.arrival_time_us;
    a.last_arrival_us = r.arrival_time_us;
    if (!r.session_id.empty()) sessions.insert(r.session_id);
    prompt_lens.push_back(static_cast<std::int64_t>(r.prompt.size()));
    output_lens.push_back(r.output_length);
    a.prompt_tokens += static_cast<std::int64_t>(r.prompt.size());
    a.output_tokens += r.output_length;
    if (!r.output_tokens.empty()) ++a.requests_with_output_tokens;
  }

  // Rule 1: lookup before anything of this request enters the tree.
  void lookup(std::int64_t n_prompt) {
    const std::int64_t max_hits = (n_prompt - 1) / B;
    std::int64_t hits = 0;
    while (hits < max_hits && by_hash.count(hashes[static_cast<std::size_t>(hits)].prefix64()) != 0) ++hits;
    a.hit_tokens += hits * B;
  }

  // The vertex of block i under `parent`, created if new; *inserted says whether it was.
  std::uint32_t vertex(std::size_t i, std::uint32_t parent, bool* inserted) {
    auto [it, fresh] = by_hash.try_emplace(hashes[i].prefix64(), 0);
    *inserted = fresh;
    if (fresh) {
      const Vertex v = tree.size();
      KV_CHECK(v < UINT32_MAX, "prefix tree too large");
      tree.emplace_back();
      it->second = static_cast<std::uint32_t>(v);
      tree[v].parent = parent;
      tree[v].depth = static_cast<std::uint32_t>(i + 1);
    }
    return it->second;
  }

  // Rules 2 and 3: every block enters the tree; a re-access records its reuse distances.
  void insert(std::int64_t req, std::int64_t prompt_blocks) {
    std::uint32_t parent = 0;
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      const std::int64_t pos = a.block_accesses++;
      bool inserted = false;
      const std::uint32_t v = vertex(i, parent, &inserted);
      PrefixVertex& pv = tree[v];
      if (!inserted) {
        const std::int64_t in_requests = req - pv.last_request;
        const std::int64_t in_blocks = markers.prefix(pos) - markers.prefix(pv.last_access + 1);
        KV_CHECK(in_requests <= UINT32_MAX && in_blocks <= UINT32_MAX, "trace too large");
        reuse_requests.push_back(static_cast<std::uint32_t>(in_requests));
        reuse_blocks.push_back(static_cast<std::uint32_t>(in_blocks));
        markers.set(pv.last_access, -1);
      }
      markers.set(pos, +1);
      pv.last_access = pos;
      pv.last_request = req;
      if (static_cast<std::int64_t>(i) < prompt_blocks && pv.requests++ == 0) pv.first_request = req;
      parent = v;
    }
  }

  void add(TraceRequest& r) {
    const std::int64_t req = a.requests++;
    count(r, req);
    const auto n_prompt = static_cast<std::int64_t>(r.prompt.size());
    tokens = std::move(r.prompt);
    if (r.output_tokens.size() > 1) tokens.insert(tokens.end(), r.output_tokens.begin(), r.output_tokens.end() - 1);
    HashExtras extras;
    extras.lora_name = r.lora_name;
    extras.cache_salt = r.cache_salt;
    hashes.clear();
    hasher.extend(hashes, tokens, B, extras);
    lookup(n_prompt);
    insert(req, n_prompt / B);
  }

  void summarize() {
    a.sessions = static_cast<std::int64_t>(sessions.size());
    a.prompt_len = distribution(prompt_lens);
    a.output_len = distribution(output_lens);
    const std::int64_t span = a.last_arrival_us - a.first_arrival_us;
    a.arrival_rate = span > 0 ? static_cast<double>(a.requests - 1) * 1e6 / static_cast<double>(span) : 0.0;
    a.distinct_blocks = static_cast<std::int64_t>(tree.size()) - 1;
    a.infinite_cache_hit_rate = static_cast<double>(a.hit_tokens) / static_cast<double>(a.prompt_tokens);
    for (const std::int64_t d : reuse_blocks) {
      std::size_t bucket = 0;
      while ((std::int64_t{2} << bucket) - 1 <= d) ++bucket;
      if (a.reuse_blocks_histogram.size() <= bucket) a.reuse_blocks_histogram.resize(bucket + 1, 0);
      ++a.reuse_blocks_histogram[bucket];
    }
    a.reuse_requests = distribution(reuse_requests);
    a.reuse_blocks = distribution(reuse_blocks);
  }

  // Rule 4: the ends of shared runs, most shared first (then shallower, then earlier).
  std::vector<Vertex> shared_prefixes() const {
    std::vector<std::int64_t> most_shared_child(tree.size(), 0);
    for (Vertex v = 1; v < tree.size(); ++v) {
      std::int64_t& m = most_shared_child[tree[v].parent];
      m = std::max(m, tree[v].requests);
    }
    std::vector<Vertex> shared;
    for (Vertex v = 1; v < tree.size(); ++v) {
      const PrefixVertex& p = tree[v];
      if (p.requests >= 2 && most_shared_child[v] < p.requests) shared.push_back(v);
    }
    std::sort(shared.begin(), shared.end(), [&](Vertex x, Vertex y) {
      const PrefixVertex& px = tree[x];
      const PrefixVertex& py = tree[y];
      if (px.requests != py.requests) return px.requests > py.requests;
      if (px.depth != py.depth) return px.depth < py.depth;
      return px.first_request < py.first_request;
    });
    return shared;
  }
};

// The top prefixes, with their first requests' ids read in a second pass over the trace.
Status top_prefixes(const std::string& path, const TracePass& pass, const std::vector<Vertex>& shared, int top_k,
                    TraceAnalysis& a) {
  std::vector<std::pair<std::int64_t, std::size_t>> wanted;  // (request index, top slot)
  const std::size_t k = std::min(shared.size(), static_cast<std::size_t>(std::max(top_k, 0)));
  for (std::size_t i = 0; i < k; ++i) {
    const PrefixVertex& p = pass.tree[shared[i]];
    a.top_prefixes.push_back(SharedPrefix{p.depth, p.requests, ""});
    wanted.emplace_back(p.first_request, i);
  }
  if (wanted.empty()) return {};
  std::sort(wanted.begin(), wanted.end());
  StatusOr<TraceReader> again = TraceReader::open(path);
  if (!again.ok()) return again.status();
  TraceRequest r;
  std::size_t w = 0;
  for (std::int64_t i = 0; w < wanted.size(); ++i) {
    StatusOr<bool> got = again->next(&r);
    if (!got.ok()) return got.status();
    if (!*got) break;
    while (w < wanted.size() && wanted[w].first == i) a.top_prefixes[wanted[w++].second].first_request_id = r.id;
  }
  return {};
}

}  // namespace

StatusOr<TraceAnalysis> analyze_trace(const std::string& path, const AnalysisOptions& o) {
  if (o.block_size <= 0) return Status::error("--block-size must be > 0");
  StatusOr<TraceReader> reader = TraceReader::open(path);
  if (!reader.ok()) return reader.status();
  TraceAnalysis a;
  a.header = reader->header();
  a.block_size = o.block_size;
  a.hash_algo = !o.hash_algo.empty() ? o.hash_algo : !a.header.hash_algo.empty() ? a.header.hash_algo : "sha256_cbor";
  const std::optional<HashAlgo> algo = parse_hash_algo(a.hash_algo);
  if (!algo) return Status::error("unknown hash algorithm '" + a.hash_algo + "'");
  const BlockHasher hasher(*algo, a.header.hash_seed.empty() ? std::string(kDefaultHashSeed) : a.header.hash_seed);
  TracePass pass(a, hasher, o.block_size);
  TraceRequest r;
  for (;;) {
    StatusOr<bool> got = reader->next(&r);
    if (!got.ok()) return got.status();
    if (!*got) break;
    pass.add(r);
    if (o.on_progress) o.on_progress(a.requests);
  }
  if (a.requests == 0) return Status::error(path + ": the trace has no requests");
  pass.summarize();
  std::vector<Vertex> shared = pass.shared_prefixes();
  if (Status s = top_prefixes(path, pass, shared, o.top_k, a); !s.ok()) return s;
  if (!o.dot_path.empty()) {
    shared.resize(std::min(shared.size(), static_cast<std::size_t>(std::max(o.dot_max_nodes, 0))));
    if (Status s = write_dot(o.dot_path, pass.tree, shared, o.block_size, a.requests); !s.ok()) return s;
  }
  return a;
}

std::string analysis_to_text(const TraceAnalysis& a) {
  std::ostringstream s;
  char buf[256];
  auto dist = [&](const char* name, const Distribution& d) {
    std::snprintf(buf, sizeof buf, "  %-22s mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f  max %lld\n", name, d.mean, d.p50,
                  d.p90, d.p99, static_cast<long long>(d.max));
    s << buf;
  };
  s << "source:   " << a.header.source << "\n";
  if (!a.header.tokenizer.empty()) s << "tokenizer: " << a.header.tokenizer << "\n";
  s << "requests: " << a.requests << "  sessions: " << a.sessions
    << "  with output tokens: " << a.requests_with_output_tokens << "\n";
  s << "tokens:   prompt " << a.prompt_tokens << "  output " << a.output_tokens << "\n";
  dist("prompt length", a.prompt_len);
  dist("output length", a.output_len);
  std::snprintf(buf, sizeof buf, "arrivals: %.3f s span, %.3f requests/s\n",
                static_cast<double>(a.last_arrival_us - a.first_arrival_us) / 1e6, a.arrival_rate);
  s << buf;
  s << "prefix sharing (block size " << a.block_size << ", " << a.hash_algo << ", seed '" << a.header.hash_seed
    << "'):\n";
  std::snprintf(buf, sizeof buf, "  infinite-cache hit rate %.4f (%lld of %lld prompt tokens)\n",
                a.infinite_cache_hit_rate, static_cast<long long>(a.hit_tokens),
                static_cast<long long>(a.prompt_tokens));
  s << buf;
  s << "  block accesses " << a.block_accesses << ", distinct blocks " << a.distinct_blocks << ", reuses "
    << a.reuse_blocks.count << "\n";
  dist("reuse dist (requests)", a.reuse_requests);
  dist("reuse dist (blocks)", a.reuse_blocks);
  s << "  stack-distance histogram (blocks between uses):\n";
  for (std::size_t i = 0; i < a.reuse_blocks_histogram.size(); ++i) {
    std::snprintf(buf, sizeof buf, "    [%lld, %lld)  %lld\n", static_cast<long long>((std::int64_t{1} << i) - 1),
                  static_cast<long long>((std::int64_t{2} << i) - 1),
                  static_cast<long long>(a.reuse_blocks_histogram[i]));
    s << buf;
  }
  s << "  most shared prefixes:\n";
  for (const SharedPrefix& p : a.top_prefixes) {
    std::snprintf(buf, sizeof buf, "    %6lld blocks (%lld tokens) shared by %lld requests, first %s\n",
                  static_cast<long long>(p.depth_blocks), static_cast<long long>(p.depth_blocks * a.block_size),
                  static_cast<long long>(p.requests), p.first_request_id.c_str());
    s << buf;
  }
  return s.str();
}

std::string analysis_to_json(const TraceAnalysis& a) {
  using nlohmann::ordered_json;
  auto dist = [](const Distribution& d) {
    return ordered_json{{"count", d.count}, {"mean", d.mean}, {"p50", d.p50},
                        {"p90", d.p90},     {"p99", d.p99},   {"max", d.max}};
  };
  ordered_json j;
  j["source"] = a.header.source;
  j["requests"] = a.requests;
  j["sessions"] = a.sessions;
  j["requests_with_output_tokens"] = a.requests_with_output_tokens;
  j["prompt_tokens"] = a.prompt_tokens;
  j["output_tokens"] = a.output_tokens;
  j["prompt_len"] = dist(a.prompt_len);
  j["output_len"] = dist(a.output_len);
  j["first_arrival_us"] = a.first_arrival_us;
  j["last_arrival_us"] = a.last_arrival_us;
  j["arrival_rate_per_s"] = a.arrival_rate;
  ordered_json p;
  p["block_size"] = a.block_size;
  p["hash_algo"] = a.hash_algo;
  p["hash_seed"] = a.header.hash_seed;
  p["infinite_cache_hit_rate"] = a.infinite_cache_hit_rate;
  p["hit_tokens"] = a.hit_tokens;
  p["block_accesses"] = a.block_accesses;
  p["distinct_blocks"] = a.distinct_blocks;
  p["reuse_distance_requests"] = dist(a.reuse_requests);
  p["reuse_distance_blocks"] = dist(a.reuse_blocks);
  p["reuse_distance_blocks_log2_histogram"] = a.reuse_blocks_histogram;
  ordered_json top = ordered_json::array();
  for (const SharedPrefix& s : a.top_prefixes) {
    top.push_back({{"depth_blocks", s.depth_blocks},
                   {"tokens", s.depth_blocks * a.block_size},
                   {"requests", s.requests},
                   {"first_request", s.first_request_id}});
  }
  p["top_shared_prefixes"] = top;
  j["prefix_sharing"] = p;
  return j.dump(2) + "\n";
}

}  // namespace kv::trace
