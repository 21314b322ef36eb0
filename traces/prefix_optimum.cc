#include "traces/prefix_optimum.h"

#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include "model/block_hasher.h"
#include "traces/trace_io.h"

namespace kv::trace {

StatusOr<PrefixChains> load_prefix_chains(const std::string& trace_path, int block_size, std::int64_t limit) {
  if (block_size < 1) return Status::error("block size must be positive");
  auto reader = TraceReader::open(trace_path);
  if (!reader.ok()) return reader.status();
  const TraceHeader& header = reader->header();
  const std::string algo_name = header.hash_algo.empty() ? "sha256_cbor" : header.hash_algo;
  const auto algo = parse_hash_algo(algo_name);
  if (!algo) return Status::error(trace_path + ": unknown hash algorithm '" + algo_name + "'");
  const BlockHasher hasher(*algo, header.hash_seed.empty() ? std::string(kDefaultHashSeed) : header.hash_seed);
  PrefixChains out;
  out.block_size = block_size;
  std::unordered_map<BlockHash, std::uint32_t, BlockHashHasher> ids;
  std::vector<BlockHash> hashes;
  TraceRequest t;
  while (limit <= 0 || static_cast<std::int64_t>(out.requests.size()) < limit) {
    auto got = reader->next(&t);
    if (!got.ok()) return got.status();
    if (!*got) break;
    HashExtras extras;
    extras.cache_salt = t.cache_salt;
    extras.lora_name = t.lora_name;
    hashes.clear();
    hasher.extend(hashes, t.prompt, block_size, extras);
    ChainRequest r;
    r.tokens = static_cast<std::int64_t>(t.prompt.size());
    r.countable = static_cast<std::size_t>(std::max<std::int64_t>(r.tokens - 1, 0) / block_size);
    for (const BlockHash& h : hashes) {
      auto [it, fresh] = ids.try_emplace(h, out.distinct_blocks);
      if (fresh) ++out.distinct_blocks;
      r.blocks.push_back(it->second);
    }
    out.requests.push_back(std::move(r));
    t = TraceRequest{};
  }
  return out;
}

namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

// next[r][j]: when keeping request r's block j pays: the next request after r that holds the
// block, if the block is countable there; kNever if no later request holds it, or if the next
// one holds it as its uncountable last block (that request re-inserts it for free, and nothing
// can hit it before then).
std::vector<std::vector<std::int64_t>> next_uses(const PrefixChains& chains) {
  std::vector<std::int64_t> upcoming(chains.distinct_blocks, kNever);  // kNever or a countable use
  std::vector<std::vector<std::int64_t>> next(chains.requests.size());
  for (std::size_t r = chains.requests.size(); r-- > 0;) {
    const ChainRequest& q = chains.requests[r];
    next[r].resize(q.blocks.size());
    for (std::size_t j = 0; j < q.blocks.size(); ++j) next[r][j] = upcoming[q.blocks[j]];
    for (std::size_t j = 0; j < q.blocks.size(); ++j) {
      upcoming[q.blocks[j]] = j < q.countable ? static_cast<std::int64_t>(r) : kNever;
    }
  }
  return next;
}

}  // namespace

OptimumResult prefix_optimum(const PrefixChains& chains, std::int64_t capacity_blocks) {
  OptimumResult res;
  res.capacity_blocks = capacity_blocks;
  const auto next = next_uses(chains);
  // Cached blocks keyed (next use, depth, id): the largest key is evicted first, so the furthest
  // next use goes first and, on a tie, the deeper block.
  using Key = std::tuple<std::int64_t, std::size_t, std::uint32_t>;
  std::set<Key> cache;
  std::vector<Key> key_of(chains.distinct_blocks);
  std::vector<char> cached(chains.distinct_blocks, 0);
  for (std::size_t r = 0; r < chains.requests.size(); ++r) {
    const ChainRequest& q = chains.requests[r];
    std::size_t hit = 0;
    while (hit < q.countable && cached[q.blocks[hit]]) ++hit;
    ++res.lookups;
    res.queries += q.tokens;
    res.hits += static_cast<std::int64_t>(hit) * chains.block_size;
    for (std::size_t j = 0; j < q.blocks.size(); ++j) {
      const std::uint32_t b = q.blocks[j];
      if (cached[b]) cache.erase(key_of[b]);
      key_of[b] = Key{next[r][j], j, b};
      cache.insert(key_of[b]);
      cached[b] = 1;
    }
    while (static_cast<std::int64_t>(cache.size()) > capacity_blocks) {
      const Key victim = *cache.rbegin();
      cache.erase(std::prev(cache.end()));
      cached[std::get<2>(victim)] = 0;
    }
  }
  res.hit_rate = res.queries > 0 ? static_cast<double>(res.hits) / static_cast<double>(res.queries) : 0.0;
  return res;
}

}  // namespace kv::trace
