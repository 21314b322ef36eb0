// Level (b'): KvCacheManager over several groups as a RapidCheck state machine over random layouts of full,
// sliding-window and chunked-local groups (docs/hybrid-groups.md). Commands: arrive, admit
// (lookup, then a first allocation of a chunk, maybe with the full-sequence gate), grow (the
// next chunk, or one decoded token), free and drain. After every command:
//   - hits: the hit length is the coordinator's fixed point over the lookup sets, recomputed
//     here by brute force from what the pool has cached per group; it is at most
//     num_tokens - 1; each group's hit blocks are exactly the cached blocks its rule reads
//     (full: all; sliding: the last ceil((w-1)/B); chunked: those of the limit's chunk), nulls
//     elsewhere;
//   - null blocks only where a group never reads again: every table's leading nulls cover at
//     least the skipped blocks of its last allocation (even a failed one) and at most those or
//     its hit's nulls; full-attention tables hold no null;
//   - a failed first allocation changes nothing; ref counts equal the tables holding each block
//     (check_invariants), the free count is N - 1 minus the distinct blocks held, and drain
//     frees everything.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "model/kv_cache_manager.h"
#include "properties/properties.h"
#include "properties/state_runner.h"

namespace kv::props {
namespace {

struct HybridCase {
  int block_size = 2;
  std::vector<KvCacheSpec> layers;  // one spec per layer, in layer order
  int num_blocks = 8;
  std::int64_t max_model_len = 64;
  bool eagle = false;  // never with a chunked local layer (vLLM refuses it)
  EvictionPolicyKind policy = EvictionPolicyKind::kLru;

  std::string line() const {
    std::ostringstream os;
    os << "hybrid blocks=" << num_blocks << " block_size=" << block_size << " max_model_len=" << max_model_len
       << " eagle=" << (eagle ? "on" : "off") << " policy=" << to_string(policy) << " layers=";
    for (std::size_t i = 0; i < layers.size(); ++i) os << (i ? "," : "") << describe(layers[i]);
    return os.str();
  }
};

// The model is the workload: which requests arrived (with their prompts), which were sent to
// admission, which were freed. Whether an allocation succeeds is the system's answer; the
// system side records it (HybridSut::held) and checks it against the rules.
struct HybridModelRequest {
  std::string id;
  std::vector<TokenId> prompt;
  bool admitted = false;  // an admit was issued (it may have failed: then grow does nothing)
  bool retired = false;   // freed: never admitted again
};

struct HybridModel {
  HybridCase c;
  std::vector<HybridModelRequest> requests;
  const HybridModelRequest* find(const std::string& id) const {
    for (const auto& r : requests) {
      if (r.id == id) return &r;
    }
    return nullptr;
  }
};

struct HybridSut {
  explicit HybridSut(const HybridCase& hc) : hasher(HashAlgo::kSha256Cbor) {
    std::vector<LayerKvCacheSpec> layers;
    for (std::size_t i = 0; i < hc.layers.size(); ++i) layers.push_back({"l" + std::to_string(i), hc.layers[i]});
    auto groups = get_kv_cache_groups(layers);
    if (!groups.ok()) RC_FAIL("get_kv_cache_groups: " + groups.status().message());
    KvCacheConfig config;
    config.groups = *groups;
    config.block_size = (*groups)[0].spec.block_size;
    config.free_order = FreeOrder::kUnhashedFirst;
    config.use_eagle = hc.eagle;
    config.eviction_policy = hc.policy;
    config.num_blocks = hc.num_blocks;
    config.max_model_len = hc.max_model_len;
    config.max_in_flight_tokens = 8;
    manager = std::make_unique<KvCacheManager>(config);
  }
  BlockHasher hasher;
  std::unique_ptr<KvCacheManager> manager;
  std::map<std::string, std::unique_ptr<Request>> requests;
  std::map<std::string, std::vector<std::size_t>> hit_nulls;  // per group, at admission
  std::map<std::string, std::int64_t> last_total;             // computed + hit at the last allocate
  std::set<std::string> held;                                 // first allocation succeeded, not freed
};

using HybridCommand = rc::state::Command<HybridModel, HybridSut>;

const KvCacheSpec& spec_of(const HybridSut& sut, std::size_t g) { return sut.manager->config().groups[g].spec; }

// The hit oracle, written from docs/hybrid-groups.md ("Hit search") by brute force: what one
// lookup set's rule gives for a limit of `limit` tokens, as blocks per group of the set (0 =
// null), from what the pool caches now.
struct SetHit {
  std::size_t blocks = 0;                       // hit length in blocks
  std::vector<std::vector<BlockId>> per_group;  // one list per group of the set, `blocks` long
};

// `drop`: eagle gives back the hit's last block (a sliding window first needs one block more).
SetHit set_rule(const HybridSut& sut, const Request& r, const std::vector<int>& set, std::int64_t limit, bool drop) {
  const KvCacheSpec& s = spec_of(sut, static_cast<std::size_t>(set.front()));
  const auto b = static_cast<std::size_t>(s.block_size);
  const std::size_t n = std::min(static_cast<std::size_t>(limit) / b, r.block_hashes().size());
  const auto cached = [&](std::size_t i) {
    for (int g : set) {
      if (sut.manager->pool().get_cached_block(r.block_hashes()[i], static_cast<KvCacheGroupId>(g)) == kNoBlock)
        return false;
    }
    return true;
  };
  const auto run_from = [&](std::size_t i, std::size_t end) {  // cached blocks in a row from i
    std::size_t k = i;
    while (k < end && cached(k)) ++k;
    return k;
  };
  std::size_t first = 0, k = 0;  // the hit is [first, k) real, nulls before
  if (s.type == AttentionType::kFullAttention) {
    k = run_from(0, n);
  } else if (s.type == AttentionType::kSlidingWindow) {
    const std::size_t need = (static_cast<std::size_t>(s.window) - 1 + b - 1) / b + (drop ? 1 : 0);
    k = run_from(0, n);  // no window-long run anywhere: the run from block 0
    for (std::size_t end = n; end >= need && end > 0; --end) {
      if (run_from(end - need, end) == end) {  // the rightmost window-long run
        first = end - need;
        k = end;
        break;
      }
    }
  } else {
    first = static_cast<std::size_t>(limit / s.chunk * s.chunk) / b;  // the chunk of the limit
    k = run_from(first, n);
  }
  if (drop && k > 0) k -= 1;  // every group has one block size here: the alignment is one block
  first = std::min(first, k);
  SetHit h;
  h.blocks = k;
  for (int g : set) {
    std::vector<BlockId> blocks(k, 0);
    for (std::size_t i = first; i < k; ++i) {
      blocks[i] = sut.manager->pool().get_cached_block(r.block_hashes()[i], static_cast<KvCacheGroupId>(g));
    }
    h.per_group.push_back(std::move(blocks));
  }
  return h;
}

// The coordinator's fixed point: rounds over the lookup sets, each limited by the previous
// one's hit, until a round changes nothing (two sets with full attention first: one round);
// full attention is looked up once and cut to the final length. With eagle, a set not yet
// verified at the current length drops a block, looking one block further; a set that
// shortened the hit without dropping makes every set unverified again.
CacheHit expected_hit(const HybridSut& sut, const Request& r) {
  const auto& sets = sut.manager->lookup_order();
  const auto is_full = [&](const std::vector<int>& set) {
    return spec_of(sut, static_cast<std::size_t>(set.front())).type == AttentionType::kFullAttention;
  };
  const std::int64_t b = spec_of(sut, 0).block_size;
  const std::int64_t max = std::max<std::int64_t>(r.num_tokens() - 1, 0);
  std::int64_t length = max;
  std::vector<std::optional<SetHit>> last(sets.size());
  std::set<std::size_t> verified;
  for (bool again = true; again;) {
    std::int64_t current = length;
    for (std::size_t s = 0; s < sets.size(); ++s) {
      if (!(is_full(sets[s]) && last[s])) {
        const bool drop = sut.manager->config().use_eagle && verified.count(s) == 0;
        last[s] = set_rule(sut, r, sets[s], drop ? std::min(current + b, max) : current, drop);
        const std::int64_t found = static_cast<std::int64_t>(last[s]->blocks) * b;
        if (drop) {
          verified.insert(s);
        } else if (found < current) {
          verified.clear();
        }
      }
      current = std::min<std::int64_t>(current, static_cast<std::int64_t>(last[s]->blocks) * b);
    }
    again = current < length && sets.size() > 1 && !(sets.size() == 2 && is_full(sets[0]));
    length = std::min(length, current);
  }
  CacheHit hit;
  hit.num_tokens = length;
  hit.blocks.resize(sut.manager->num_groups());
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (std::size_t k = 0; k < sets[s].size(); ++k) {
      auto& blocks = hit.blocks[static_cast<std::size_t>(sets[s][k])] = last[s]->per_group[k];
      if (is_full(sets[s])) blocks.resize(std::min(blocks.size(), static_cast<std::size_t>(length / b)));
    }
  }
  return hit;
}

void check_hit(const HybridSut& sut, const Request& r, const CacheHit& hit) {
  const CacheHit want = expected_hit(sut, r);
  if (hit.num_tokens != want.num_tokens) {
    RC_FAIL("lookup " + r.id() + ": hit of " + std::to_string(hit.num_tokens) + " tokens, the fixed point of the " +
            "lookup sets is " + std::to_string(want.num_tokens) + " (of " + std::to_string(r.num_tokens()) +
            " tokens)");
  }
  if (hit.num_tokens > std::max<std::int64_t>(r.num_tokens() - 1, 0))
    RC_FAIL("lookup " + r.id() + " hits its last token");
  for (std::size_t g = 0; g < want.blocks.size(); ++g) {
    if (hit.blocks[g] != want.blocks[g]) {
      std::ostringstream os;
      os << "lookup " << r.id() << ": group " << g << " (" << describe(spec_of(sut, g)) << ") hit blocks [";
      for (BlockId x : hit.blocks[g]) os << x << ' ';
      os << "], its rule reads [";
      for (BlockId x : want.blocks[g]) os << x << ' ';
      os << "]";
      RC_FAIL(os.str());
    }
  }
}

// Leading nulls of every table of `id`: at least the skipped blocks of its last allocation,
// at most those or its hit's nulls; none in full attention.
void check_nulls(const HybridSut& sut, const std::string& id) {
  for (std::size_t g = 0; g < sut.manager->num_groups(); ++g) {
    const auto table = sut.manager->blocks_of(id, g);
    const KvCacheSpec& s = spec_of(sut, g);
    std::size_t nulls = 0;
    while (nulls < table.size() && table[nulls] == 0) ++nulls;
    const auto skipped = static_cast<std::size_t>(s.num_skipped_tokens(sut.last_total.at(id)) / s.block_size);
    const std::size_t at_least = std::min(skipped, table.size());
    const std::size_t at_most = std::max(skipped, sut.hit_nulls.at(id)[g]);
    if (nulls < at_least || nulls > at_most || (s.type == AttentionType::kFullAttention && nulls > 0)) {
      RC_FAIL("request " + id + ", group " + std::to_string(g) + " (" + describe(s) + "): " + std::to_string(nulls) +
              " leading null blocks, expected " + std::to_string(at_least) + ".." + std::to_string(at_most) +
              " (computed " + std::to_string(sut.last_total.at(id)) + ")");
    }
  }
}

void check_pool(const HybridSut& sut) {
  std::string why;
  if (!sut.manager->check_invariants(&why)) RC_FAIL("check_invariants: " + why);
  std::set<BlockId> held;
  for (const std::string& id : sut.held) {
    check_nulls(sut, id);
    for (std::size_t g = 0; g < sut.manager->num_groups(); ++g) {
      for (BlockId b : sut.manager->blocks_of(id, g)) {
        if (b != 0) held.insert(b);
      }
    }
  }
  const std::size_t want = static_cast<std::size_t>(sut.manager->pool().num_blocks() - 1) - held.size();
  if (sut.manager->num_free_blocks() != want) {
    RC_FAIL("free count " + std::to_string(sut.manager->num_free_blocks()) + ", expected " + std::to_string(want));
  }
}

// A snapshot of everything a failed first allocation must leave alone.
std::vector<std::int64_t> pool_state(const HybridSut& sut) {
  std::vector<std::int64_t> s{static_cast<std::int64_t>(sut.manager->num_free_blocks())};
  const BlockPool& pool = sut.manager->pool();
  for (BlockId b = 0; b < pool.num_blocks(); ++b) {
    s.push_back(pool.block(b).ref_cnt);
    s.push_back(static_cast<std::int64_t>(pool.block(b).hash.prefix64()));
  }
  return s;
}

struct Arrive final : HybridCommand {
  std::string id;
  std::vector<TokenId> tokens;
  Arrive(std::string i, std::vector<TokenId> t) : id(std::move(i)), tokens(std::move(t)) {}
  void checkPreconditions(const HybridModel& m) const override {
    require(m.find(id) == nullptr && !tokens.empty());
    require(static_cast<std::int64_t>(tokens.size()) < m.c.max_model_len);
  }
  void apply(HybridModel& m) const override { m.requests.push_back({id, tokens, false, false}); }
  void run(const HybridModel& m, HybridSut& sut) const override {
    sut.requests[id] = std::make_unique<Request>(id, tokens, HashExtras{}, &sut.hasher, m.c.block_size);
  }
  void show(std::ostream& os) const override {
    os << "arrive " << id << " tokens=";
    for (std::size_t i = 0; i < tokens.size(); ++i) os << (i ? "," : "") << tokens[i];
  }
};

struct Admit final : HybridCommand {
  std::string id;
  std::int64_t n;  // tokens after the hit, clamped to what is left
  bool fullfit;
  Admit(std::string i, std::int64_t count, bool ff) : id(std::move(i)), n(count), fullfit(ff) {}
  void checkPreconditions(const HybridModel& m) const override {
    const HybridModelRequest* r = m.find(id);
    require(r != nullptr && !r->admitted && !r->retired);
  }
  void apply(HybridModel& m) const override {
    for (auto& r : m.requests) r.admitted = r.admitted || r.id == id;
  }
  void run(const HybridModel& m, HybridSut& sut) const override;
  void show(std::ostream& os) const override { os << "admit " << id << " " << n << (fullfit ? " fullfit" : ""); }
};

struct Grow final : HybridCommand {
  std::string id;
  std::int64_t n;
  Grow(std::string i, std::int64_t count) : id(std::move(i)), n(count) {}
  void checkPreconditions(const HybridModel& m) const override {
    const HybridModelRequest* r = m.find(id);
    require(r != nullptr && r->admitted && !r->retired);
  }
  void apply(HybridModel&) const override {}
  void run(const HybridModel& m, HybridSut& sut) const override;
  void show(std::ostream& os) const override { os << "grow " << id << " " << n; }
};

struct Free final : HybridCommand {
  std::string id;
  explicit Free(std::string i) : id(std::move(i)) {}
  void checkPreconditions(const HybridModel& m) const override {
    const HybridModelRequest* r = m.find(id);
    require(r != nullptr && r->admitted && !r->retired);
  }
  void apply(HybridModel& m) const override {
    for (auto& r : m.requests) r.retired = r.retired || r.id == id;
  }
  void run(const HybridModel&, HybridSut& sut) const override {
    sut.manager->free(*sut.requests.at(id));
    sut.held.erase(id);
    check_pool(sut);
  }
  void show(std::ostream& os) const override { os << "free " << id; }
};

struct Drain final : HybridCommand {
  void apply(HybridModel& m) const override {
    for (auto& r : m.requests) r.retired = r.retired || r.admitted;
  }
  void run(const HybridModel& m, HybridSut& sut) const override {
    for (const auto& r : m.requests) {
      if (auto it = sut.requests.find(r.id); it != sut.requests.end()) sut.manager->free(*it->second);
    }
    sut.held.clear();
    check_pool(sut);
    if (sut.manager->num_free_blocks() != static_cast<std::size_t>(m.c.num_blocks - 1)) RC_FAIL("drain: blocks leaked");
  }
  void show(std::ostream& os) const override { os << "drain"; }
};

void Admit::run(const HybridModel&, HybridSut& sut) const {
  Request& req = *sut.requests.at(id);
  const CacheHit hit = sut.manager->get_computed_blocks(req);
  check_hit(sut, req, hit);
  const std::int64_t count = std::clamp<std::int64_t>(n, 1, req.num_tokens() - hit.num_tokens);
  const std::vector<std::int64_t> before = pool_state(sut);
  const auto fresh = sut.manager->allocate_slots(req, count, hit, 0, fullfit);
  if (!fresh) {
    if (pool_state(sut) != before) RC_FAIL("a failed first allocation of " + id + " changed the pool");
    check_pool(sut);
    return;
  }
  std::vector<std::size_t> nulls;
  for (const auto& blocks : hit.blocks)
    nulls.push_back(static_cast<std::size_t>(std::count(blocks.begin(), blocks.end(), 0)));
  sut.hit_nulls[id] = nulls;
  sut.last_total[id] = hit.num_tokens;
  req.num_computed_tokens += hit.num_tokens + count;
  sut.held.insert(id);
  check_pool(sut);
}

void Grow::run(const HybridModel& m, HybridSut& sut) const {
  if (sut.held.count(id) == 0) return;  // its admission failed
  Request& req = *sut.requests.at(id);
  if (req.num_computed_tokens == req.num_tokens()) {
    if (req.num_tokens() + 1 >= m.c.max_model_len) return;
    const TokenId next = static_cast<TokenId>(req.num_tokens() % 2);
    req.append_tokens(std::span<const TokenId>(&next, 1));
  }
  const std::int64_t count = std::clamp<std::int64_t>(n, 1, req.num_tokens() - req.num_computed_tokens);
  const auto fresh = sut.manager->allocate_slots(req, count);
  sut.last_total[id] = req.num_computed_tokens;  // skipped blocks are dropped even on failure
  if (fresh) req.num_computed_tokens += count;
  check_pool(sut);
}

rc::Gen<std::shared_ptr<const HybridCommand>> gen_hybrid_command(const HybridModel& m) {
  return rc::gen::exec([m]() -> std::shared_ptr<const HybridCommand> {
    std::vector<std::string> waiting, held;
    for (const auto& r : m.requests) {
      if (r.retired) continue;
      (r.admitted ? held : waiting).push_back(r.id);
    }
    const int kind = *rc::gen::inRange(0, 20);
    const std::int64_t n = *rc::gen::inRange<std::int64_t>(1, 4 * m.c.block_size + 1);
    if (kind < 5 || (waiting.empty() && held.empty())) {
      std::vector<TokenId> tokens;
      if (!m.requests.empty() && *rc::gen::inRange(0, 3) > 0) {  // share a prefix
        const auto& base = (*rc::gen::elementOf(m.requests)).prompt;
        tokens.assign(base.begin(), base.begin() + *rc::gen::inRange<std::ptrdiff_t>(0, std::ssize(base) + 1));
      }
      const auto extra = *rc::gen::inRange<std::size_t>(tokens.empty() ? 1 : 0, 3 * m.c.block_size);
      for (std::size_t i = 0; i < extra; ++i) tokens.push_back(*rc::gen::inRange<TokenId>(0, 2));
      if (static_cast<std::int64_t>(tokens.size()) >= m.c.max_model_len)
        tokens.resize(static_cast<std::size_t>(m.c.max_model_len - 1));
      return std::make_shared<Arrive>("r" + std::to_string(m.requests.size()), std::move(tokens));
    }
    if (kind < 11 && !waiting.empty())
      return std::make_shared<Admit>(*rc::gen::elementOf(waiting), n, *rc::gen::inRange(0, 4) == 3);
    if (kind < 17 && !held.empty()) return std::make_shared<Grow>(*rc::gen::elementOf(held), n);
    if (kind < 19 && !held.empty()) return std::make_shared<Free>(*rc::gen::elementOf(held));
    return std::make_shared<Drain>();
  });
}

// 1 to 4 layers, each full, sliding (window 2..4B+1) or chunked (chunk 1..4B, aligned to the
// block or not); equal page sizes, so the groups keep the block size.
HybridCase gen_hybrid_case() {
  HybridCase hc;
  hc.block_size = *rc::gen::inRange(1, 5);
  hc.num_blocks = *rc::gen::inRange(4, 25);
  hc.max_model_len = *rc::gen::inRange(4 * hc.block_size, 16 * hc.block_size + 1);
  const int layers = *rc::gen::inRange(1, 5);
  for (int i = 0; i < layers; ++i) {
    KvCacheSpec s{AttentionType::kFullAttention, hc.block_size, 1, 8, 8, 2, 0, 0};
    const int kind = *rc::gen::inRange(0, 3);
    if (kind == 1) {
      s.type = AttentionType::kSlidingWindow;
      s.window = *rc::gen::inRange(2, 4 * hc.block_size + 2);
    } else if (kind == 2) {
      s.type = AttentionType::kChunkedLocalAttention;
      s.chunk = *rc::gen::inRange(1, 4 * hc.block_size + 1);
    }
    hc.layers.push_back(s);
  }
  const bool chunked = std::any_of(hc.layers.begin(), hc.layers.end(), [](const KvCacheSpec& s) {
    return s.type == AttentionType::kChunkedLocalAttention;
  });
  hc.eagle = !chunked && *rc::gen::inRange(0, 3) == 0;
  hc.policy = *rc::gen::element(EvictionPolicyKind::kLru, EvictionPolicyKind::kLru, EvictionPolicyKind::kLfu,
                                EvictionPolicyKind::kSlru, EvictionPolicyKind::kLeafLru, EvictionPolicyKind::kPriority);
  return hc;
}

}  // namespace

void hybrid_property() {
  HybridModel m0;
  m0.c = gen_hybrid_case();
  const auto commands = *rc::state::gen::commands(m0, &gen_hybrid_command);
  const CaseOutcome o = run_isolated([&] { return run_on_new_sut<HybridSut>(commands, m0, m0.c); });
  if (!o.passed) {
    std::ostringstream os;
    os << o.message << "\n---- hybrid script ----\n" << m0.c.line() << "\n";
    show_commands(os, commands, o.failed_step);
    os << "---- end of hybrid script ----\n";
    RC_FAIL(os.str());
  }
}

}  // namespace kv::props
