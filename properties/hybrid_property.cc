// Level (b'): KvCacheManager over several groups as a RapidCheck state machine over random layouts of full,
// sliding-window, chunked-local and Mamba (align or all, 0..2 speculative blocks, a state of
// one or two attention pages: then the attention blocks double and hits align to them)
// groups (docs/hybrid-groups.md). Commands: arrive, admit (lookup, then a first allocation of
// a chunk, maybe with lookahead slots and the full-sequence gate), grow (the next chunk, or one
// decoded token, maybe with draft tokens of which a prefix is accepted and the rest rolled
// back, and lookahead slots), new_step, free and drain. After every command:
//   - hits: the hit length is the coordinator's fixed point over the lookup sets, recomputed
//     here by brute force from what the pool has cached per group; it is at most
//     num_tokens - 1; each group's hit blocks are exactly the cached blocks its rule reads
//     (full: all; sliding: the last ceil((w-1)/B); chunked: those of the limit's chunk; Mamba:
//     the rightmost cached state whose end is a multiple of the alignment, never dropped for
//     eagle, looked up at the current length), nulls elsewhere;
//   - a Mamba hit whose state was cached since the last new_step (the pool's stored events
//     say which) cannot be allocated;
//   - null blocks only where a group never reads again: every table's leading nulls cover at
//     least the skipped blocks of its last allocation (even a failed one) and at most those or
//     its hit's nulls; full-attention tables hold no null; a Mamba table keeps the state its
//     next step reads (index ceil(computed / B) - 1), and an align table holds at most 2 + s
//     real blocks (both unless drafts were rolled back in align mode);
//   - a failed first allocation changes nothing; ref counts equal the tables holding each block
//     (check_invariants), the free count is N - 1 minus the distinct blocks held, and drain
//     frees everything.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <variant>

#include "model/kv_cache_manager.h"
#include "properties/properties.h"
#include "properties/state_runner.h"

namespace kv::props {
namespace {

struct HybridCase {
  int block_size = 2;               // the layers' block size before pages are unified: the hash block size
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
    config.block_size = cache_block_size(*groups);
    config.free_order = FreeOrder::kUnhashedFirst;
    config.enable_kv_events = true;  // the stored events say which Mamba states this step cached
    config.use_eagle = hc.eagle;
    config.eviction_policy = hc.policy;
    config.num_blocks = hc.num_blocks;
    config.max_model_len = hc.max_model_len;
    config.max_in_flight_tokens = 8;
    manager = std::make_unique<KvCacheManager>(config);
    hash_block = hc.block_size;
  }
  BlockHasher hasher;
  std::int64_t hash_block = 0;
  std::unique_ptr<KvCacheManager> manager;
  std::map<std::string, std::unique_ptr<Request>> requests;
  std::map<std::string, std::vector<std::size_t>> hit_nulls;  // per group, at admission
  std::map<std::string, std::int64_t> last_total;             // computed + hit at the last allocate
  std::set<std::string> held;                                 // first allocation succeeded, not freed
  std::set<std::string> rolled_back;                          // rejected drafts were rolled back
  // Per Mamba group, the hashes it cached since the last new_step (from the stored events).
  std::map<std::size_t, std::vector<BlockHash>> cached_this_step;
};

using HybridCommand = rc::state::Command<HybridModel, HybridSut>;

const KvCacheSpec& spec_of(const HybridSut& sut, std::size_t g) { return sut.manager->config().groups[g].spec; }

bool is_mamba(const KvCacheSpec& s) { return s.type == AttentionType::kMamba; }

// Records the Mamba hashes the last command cached, from the pool's stored events.
void note_cached(HybridSut& sut) {
  for (const KvEvent& ev : sut.manager->take_events()) {
    const auto* stored = std::get_if<BlockStored>(&ev);
    if (stored == nullptr || !is_mamba(spec_of(sut, static_cast<std::size_t>(stored->group_idx)))) continue;
    auto& hashes = sut.cached_this_step[static_cast<std::size_t>(stored->group_idx)];
    hashes.insert(hashes.end(), stored->block_hashes.begin(), stored->block_hashes.end());
  }
}

// The hit oracle, written from docs/hybrid-groups.md ("Hit search") by brute force: what one
// lookup set's rule gives for a limit of `limit` tokens, as blocks per group of the set (0 =
// null), from what the pool caches now.
struct SetHit {
  std::size_t blocks = 0;                       // hit length in blocks
  std::vector<std::vector<BlockId>> per_group;  // one list per group of the set, `blocks` long
};

// `drop`: eagle gives back the hit's last block (a sliding window first needs one block more;
// Mamba drops nothing). Group block i of a group of b-token blocks is named by the chain's
// hash (i + 1) * b / hash_block - 1.
SetHit set_rule(const HybridSut& sut, const Request& r, const std::vector<int>& set, std::int64_t limit, bool drop,
                std::int64_t alignment) {
  const KvCacheSpec& s = spec_of(sut, static_cast<std::size_t>(set.front()));
  const auto b = static_cast<std::size_t>(s.block_size);
  const std::size_t m = b / static_cast<std::size_t>(sut.hash_block);
  const std::size_t n = std::min(static_cast<std::size_t>(limit) / b, r.block_hashes().size() / m);
  const auto hash = [&](std::size_t i) -> const BlockHash& { return r.block_hashes()[(i + 1) * m - 1]; };
  const auto cached = [&](std::size_t i) {
    for (int g : set) {
      if (sut.manager->pool().get_cached_block(hash(i), static_cast<KvCacheGroupId>(g)) == kNoBlock) return false;
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
  } else if (is_mamba(s)) {
    for (std::size_t i = n; i-- > 0;) {  // the rightmost cached state at an aligned end
      if ((i + 1) * b % static_cast<std::size_t>(alignment) == 0 && cached(i)) {
        first = i;
        k = i + 1;
        break;
      }
    }
  } else {
    first = static_cast<std::size_t>(limit / s.chunk * s.chunk) / b;  // the chunk of the limit
    k = run_from(first, n);
  }
  // Every attention group has the alignment's block size here: eagle drops one block.
  if (drop && k > 0 && !is_mamba(s)) k -= 1;
  first = std::min(first, k);
  SetHit h;
  h.blocks = k;
  for (int g : set) {
    std::vector<BlockId> blocks(k, 0);
    for (std::size_t i = first; i < k; ++i) {
      blocks[i] = sut.manager->pool().get_cached_block(hash(i), static_cast<KvCacheGroupId>(g));
    }
    h.per_group.push_back(std::move(blocks));
  }
  return h;
}

// The coordinator's fixed point: rounds over the lookup sets, each limited by the previous
// one's hit, until a round changes nothing (two sets with full attention first: one round);
// full attention is looked up once and cut to the final length. With eagle, a set not yet
// verified at the current length drops a block, looking one block further (Mamba: not
// further); a set that shortened the hit without dropping makes every set unverified again.
CacheHit expected_hit(const HybridSut& sut, const Request& r) {
  const auto& sets = sut.manager->lookup_order();
  const auto spec = [&](const std::vector<int>& set) -> const KvCacheSpec& {
    return spec_of(sut, static_cast<std::size_t>(set.front()));
  };
  const auto is_full = [&](const std::vector<int>& set) { return spec(set).type == AttentionType::kFullAttention; };
  const std::int64_t alignment = sut.manager->config().scheduler_block_size();
  const std::int64_t max = std::max<std::int64_t>(r.num_tokens() - 1, 0);
  std::int64_t length = max;
  std::vector<std::optional<SetHit>> last(sets.size());
  std::set<std::size_t> verified;
  for (bool again = true; again;) {
    std::int64_t current = length;
    for (std::size_t s = 0; s < sets.size(); ++s) {
      const std::int64_t b = spec(sets[s]).block_size;
      if (!(is_full(sets[s]) && last[s])) {
        const bool drop = sut.manager->config().use_eagle && verified.count(s) == 0;
        const std::int64_t limit = drop && !is_mamba(spec(sets[s])) ? std::min(current + b, max) : current;
        last[s] = set_rule(sut, r, sets[s], limit, drop, alignment);
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
    const std::int64_t b = spec(sets[s]).block_size;
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
    if (is_mamba(s) && s.mamba_mode == MambaCacheMode::kAlign) continue;  // nulls anywhere
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

// A Mamba table keeps the state its next step reads: the one after its last allocation's
// computed tokens T, at index ceil(T / B) - 1; an align table holds at most 2 + s real blocks
// (that state, the one being written and the speculative ones). Rolled-back drafts in align
// mode leave the read state in a speculative block: not checked then.
void check_mamba_states(const HybridSut& sut, const std::string& id) {
  const std::int64_t computed = sut.last_total.at(id);
  for (std::size_t g = 0; g < sut.manager->num_groups(); ++g) {
    const KvCacheSpec& s = spec_of(sut, g);
    if (!is_mamba(s)) continue;
    const bool align = s.mamba_mode == MambaCacheMode::kAlign;
    if (align && sut.rolled_back.count(id) != 0) continue;
    const auto table = sut.manager->blocks_of(id, g);
    const auto read = static_cast<std::size_t>((computed + s.block_size - 1) / s.block_size);
    if (computed > 0 && read <= table.size() && table[read - 1] == 0) {
      RC_FAIL("request " + id + ", Mamba group " + std::to_string(g) + " (" + describe(s) + "): the state after " +
              std::to_string(computed) + " computed tokens (entry " + std::to_string(read - 1) + ") was freed");
    }
    const auto real = std::count_if(table.begin(), table.end(), [](BlockId b) { return b != 0; });
    if (align && real > 2 + s.num_speculative_blocks) {
      RC_FAIL("request " + id + ", Mamba group " + std::to_string(g) + " (" + describe(s) + ") holds " +
              std::to_string(real) + " states, at most 2 + " + std::to_string(s.num_speculative_blocks));
    }
  }
}

void check_pool(const HybridSut& sut) {
  std::string why;
  if (!sut.manager->check_invariants(&why)) RC_FAIL("check_invariants: " + why);
  std::set<BlockId> held;
  for (const std::string& id : sut.held) {
    check_nulls(sut, id);
    check_mamba_states(sut, id);
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

struct HybridArrive final : HybridCommand {
  std::string id;
  std::vector<TokenId> tokens;
  HybridArrive(std::string i, std::vector<TokenId> t) : id(std::move(i)), tokens(std::move(t)) {}
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

struct HybridAdmit final : HybridCommand {
  std::string id;
  std::int64_t n;  // tokens after the hit, clamped to what is left
  bool fullfit;
  std::int64_t lookahead;
  HybridAdmit(std::string i, std::int64_t count, bool ff, std::int64_t la)
      : id(std::move(i)), n(count), fullfit(ff), lookahead(la) {}
  void checkPreconditions(const HybridModel& m) const override {
    const HybridModelRequest* r = m.find(id);
    require(r != nullptr && !r->admitted && !r->retired);
  }
  void apply(HybridModel& m) const override {
    for (auto& r : m.requests) r.admitted = r.admitted || r.id == id;
  }
  void run(const HybridModel& m, HybridSut& sut) const override;
  void show(std::ostream& os) const override {
    os << "admit " << id << " " << n << (fullfit ? " fullfit" : "");
    if (lookahead > 0) os << " lookahead=" << lookahead;
  }
};

// The next chunk; at the last known token it may carry `drafts` draft tokens, of which the
// first `accepted` are kept (they become tokens) and the rest rolled back.
struct HybridGrow final : HybridCommand {
  std::string id;
  std::int64_t n;
  std::int64_t lookahead, drafts, accepted;
  HybridGrow(std::string i, std::int64_t count, std::int64_t la, std::int64_t d, std::int64_t a)
      : id(std::move(i)), n(count), lookahead(la), drafts(d), accepted(a) {}
  void checkPreconditions(const HybridModel& m) const override {
    const HybridModelRequest* r = m.find(id);
    require(r != nullptr && r->admitted && !r->retired);
  }
  void apply(HybridModel&) const override {}
  void run(const HybridModel& m, HybridSut& sut) const override;
  void show(std::ostream& os) const override {
    os << "grow " << id << " " << n;
    if (lookahead > 0) os << " lookahead=" << lookahead;
    if (drafts > 0) os << " drafts=" << drafts << " accepted=" << accepted;
  }
};

// A scheduler step starts: Mamba states cached so far can be hit from now on.
struct HybridNewStep final : HybridCommand {
  void apply(HybridModel&) const override {}
  void run(const HybridModel&, HybridSut& sut) const override {
    sut.manager->new_step();
    sut.cached_this_step.clear();
    check_pool(sut);
  }
  void show(std::ostream& os) const override { os << "new_step"; }
};

struct HybridFree final : HybridCommand {
  std::string id;
  explicit HybridFree(std::string i) : id(std::move(i)) {}
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

struct HybridDrain final : HybridCommand {
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

// The Mamba group whose hit state was cached in this step, or -1: such a hit cannot be
// allocated until the next step.
int group_with_fresh_state(const HybridSut& sut, const CacheHit& hit) {
  for (std::size_t g = 0; g < hit.blocks.size(); ++g) {
    if (!is_mamba(spec_of(sut, g)) || hit.blocks[g].empty() || hit.blocks[g].back() == 0) continue;
    const BlockHash& state = sut.manager->pool().block(hit.blocks[g].back()).hash;
    auto it = sut.cached_this_step.find(g);
    if (it != sut.cached_this_step.end() && std::find(it->second.begin(), it->second.end(), state) != it->second.end())
      return static_cast<int>(g);
  }
  return -1;
}

void HybridAdmit::run(const HybridModel&, HybridSut& sut) const {
  Request& req = *sut.requests.at(id);
  const CacheHit hit = sut.manager->get_computed_blocks(req);
  check_hit(sut, req, hit);
  const std::int64_t count = std::clamp<std::int64_t>(n, 1, req.num_tokens() - hit.num_tokens);
  const std::vector<std::int64_t> before = pool_state(sut);
  const int fresh_state = group_with_fresh_state(sut, hit);
  const auto fresh = sut.manager->allocate_slots(req, count, hit, lookahead, fullfit);
  note_cached(sut);
  if (!fresh) {
    if (pool_state(sut) != before) RC_FAIL("a failed first allocation of " + id + " changed the pool");
    check_pool(sut);
    return;
  }
  if (fresh_state >= 0) {
    RC_FAIL("admit " + id + ": its hit ends on a state Mamba group " + std::to_string(fresh_state) +
            " cached in this step, yet the allocation succeeded");
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

void append_token(Request& req) {
  const TokenId next = static_cast<TokenId>(req.num_tokens() % 2);
  req.append_tokens(std::span<const TokenId>(&next, 1));
}

void HybridGrow::run(const HybridModel& m, HybridSut& sut) const {
  if (sut.held.count(id) == 0) return;  // its admission failed
  Request& req = *sut.requests.at(id);
  if (req.num_computed_tokens == req.num_tokens()) {
    if (req.num_tokens() + 1 >= m.c.max_model_len) return;
    append_token(req);
  }
  const std::int64_t left = req.num_tokens() - req.num_computed_tokens;
  const std::int64_t count = std::clamp<std::int64_t>(n, 1, left);
  // Drafts follow the last known token, within max_model_len - 1.
  const std::int64_t d =
      count < left ? 0 : std::clamp<std::int64_t>(drafts, 0, m.c.max_model_len - 1 - req.num_tokens());
  const auto fresh = sut.manager->allocate_slots(req, count + d, {}, lookahead);
  note_cached(sut);
  sut.last_total[id] = req.num_computed_tokens;  // skipped blocks are dropped even on failure
  if (fresh) {
    const std::int64_t a = std::min(accepted, d);
    req.num_computed_tokens += count + a;  // the rejected drafts are rolled back
    for (std::int64_t k = 0; k < a; ++k) append_token(req);
    if (a < d) sut.rolled_back.insert(id);
  }
  check_pool(sut);
}

rc::Gen<std::shared_ptr<const HybridCommand>> gen_hybrid_command(const HybridModel& m) {
  return rc::gen::exec([m]() -> std::shared_ptr<const HybridCommand> {
    std::vector<std::string> waiting, held;
    for (const auto& r : m.requests) {
      if (r.retired) continue;
      (r.admitted ? held : waiting).push_back(r.id);
    }
    const int kind = *rc::gen::inRange(0, 23);
    const std::int64_t n = *rc::gen::inRange<std::int64_t>(1, 4 * m.c.block_size + 1);
    const std::int64_t lookahead =
        *rc::gen::inRange(0, 4) == 0 ? *rc::gen::inRange<std::int64_t>(1, 2 * m.c.block_size + 1) : 0;
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
      return std::make_shared<HybridArrive>("r" + std::to_string(m.requests.size()), std::move(tokens));
    }
    if (kind < 11 && !waiting.empty())
      return std::make_shared<HybridAdmit>(*rc::gen::elementOf(waiting), n, *rc::gen::inRange(0, 4) == 3, lookahead);
    if (kind < 17 && !held.empty()) {
      const std::int64_t drafts = *rc::gen::inRange(0, 3) == 0 ? *rc::gen::inRange<std::int64_t>(1, 4) : 0;
      const std::int64_t accepted = *rc::gen::inRange<std::int64_t>(0, drafts + 1);
      return std::make_shared<HybridGrow>(*rc::gen::elementOf(held), n, lookahead, drafts, accepted);
    }
    if (kind < 19 && !held.empty()) return std::make_shared<HybridFree>(*rc::gen::elementOf(held));
    if (kind < 22) return std::make_shared<HybridNewStep>();
    return std::make_shared<HybridDrain>();
  });
}

// A Mamba layer of one layout (all its Mamba layers share it): align or all, 0..2 speculative
// blocks, a state of one attention page (every group keeps the block size) or two (attention
// blocks double, so Mamba hits align to two of its blocks).
KvCacheSpec gen_mamba_spec(const KvCacheSpec& attention) {
  KvCacheSpec s = attention;
  s.type = AttentionType::kMamba;
  s.mamba_mode = *rc::gen::element(MambaCacheMode::kAlign, MambaCacheMode::kAll);
  s.mamba_state_bytes = attention.page_size_bytes() * *rc::gen::inRange(1, 3);
  s.num_speculative_blocks = *rc::gen::inRange(0, 3);
  return s;
}

// 1 to 4 layers, each full, sliding (window 2..4B+1), chunked (chunk 1..4B, aligned to the
// block or not) or, in a third of the layouts, Mamba; attention pages are equal.
HybridCase gen_hybrid_case() {
  HybridCase hc;
  hc.block_size = *rc::gen::inRange(1, 5);
  hc.num_blocks = *rc::gen::inRange(4, 25);
  hc.max_model_len = *rc::gen::inRange(4 * hc.block_size, 16 * hc.block_size + 1);
  const int layers = *rc::gen::inRange(1, 5);
  const KvCacheSpec full{AttentionType::kFullAttention, hc.block_size, 1, 8, 8, 2, 0, 0};
  const bool with_mamba = *rc::gen::inRange(0, 3) == 0;
  const KvCacheSpec mamba = with_mamba ? gen_mamba_spec(full) : full;
  for (int i = 0; i < layers; ++i) {
    KvCacheSpec s = full;
    const int kind = *rc::gen::inRange(0, with_mamba ? 4 : 3);
    if (kind == 1) {
      s.type = AttentionType::kSlidingWindow;
      s.window = *rc::gen::inRange(2, 4 * hc.block_size + 2);
    } else if (kind == 2) {
      s.type = AttentionType::kChunkedLocalAttention;
      s.chunk = *rc::gen::inRange(1, 4 * hc.block_size + 1);
    } else if (kind == 3) {
      s = mamba;
    }
    hc.layers.push_back(s);
  }
  if (with_mamba && std::none_of(hc.layers.begin(), hc.layers.end(), is_mamba)) {
    hc.layers[*rc::gen::inRange<std::size_t>(0, hc.layers.size())] = mamba;
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
