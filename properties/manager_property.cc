// Level (b): the KV-cache manager (and its block pool) against ManagerModel, as a RapidCheck
// state machine. Commands: new request, lookup, allocate (whole prompt, a chunk, after
// appends; lookahead; the full-sequence gate), append, free, reset, and drain (free all, then
// the cache must be whole and resettable). After every command every observable agrees with the
// model: returned block ids, hits, the free queue, every block's ref_cnt and hash, the hash map,
// each request's block table and hashes, statistics, KV events; and check_invariants() holds.
// The model hashes with ReferenceHasher (written apart from BlockHasher), requests draw two
// salts, two LoRA adapters and multimodal items, and an isolation property holds: no request is ever given a hit
// block that another tenant (salt, LoRA) computed.
// Every command prints itself as `ops` lines, so a failing case comes out as an ops script with
// its expected output; the generated script is also replayed through OpsInterpreter in every
// case, so the printed reproducer is known to be faithful.
#include <algorithm>
#include <map>
#include <memory>
#include <sstream>

#include "model/kv_cache_manager.h"
#include "ops/ops_interpreter.h"
#include "properties/manager_model.h"
#include "properties/manager_script.h"
#include "properties/properties.h"
#include "properties/state_runner.h"

namespace kv::props {

const char* to_string(ManagerVariant v) {
  switch (v) {
    case ManagerVariant::kCaching:
      return "caching";
    case ManagerVariant::kCachingEagle:
      return "caching_eagle";
    case ManagerVariant::kNoCaching:
      return "no_caching";
  }
  return "?";
}

ManagerSut::ManagerSut(const ModelConfig& c) {
  config.num_blocks = c.num_blocks;
  config.block_size = c.block_size;
  config.enable_caching = c.caching;
  config.free_order = c.free_order;
  config.eviction_policy = c.policy;
  config.use_eagle = c.eagle;
  config.max_model_len = c.max_model_len;
  config.enable_kv_events = true;
  hasher = std::make_unique<BlockHasher>(c.algo, c.seed);
  manager = std::make_unique<KvCacheManager>(config);
}

namespace {

std::string hex_or_none(const std::optional<BlockHash>& h) { return h ? h->hex().substr(0, 12) : "none"; }

std::string event_text(const KvEvent& e) {
  std::ostringstream os;
  if (const auto* s = std::get_if<BlockStored>(&e)) {
    os << "stored[";
    for (const BlockHash& h : s->block_hashes) os << h.hex().substr(0, 12) << ' ';
    os << "] parent=" << hex_or_none(s->parent_block_hash) << " tokens=" << tokens_text(s->token_ids)
       << " bs=" << s->block_size << " lora=" << s->lora_name << " medium=" << s->medium;
  } else if (const auto* r = std::get_if<BlockRemoved>(&e)) {
    os << "removed[";
    for (const BlockHash& h : r->block_hashes) os << h.hex().substr(0, 12) << ' ';
    os << "] medium=" << r->medium;
  } else {
    os << "cleared";
  }
  return os.str();
}

std::string event_text(const ModelEvent& e) {
  std::ostringstream os;
  if (e.kind == ModelEvent::kStored) {
    os << "stored[";
    for (const BlockHash& h : e.hashes) os << h.hex().substr(0, 12) << ' ';
    os << "] parent=" << hex_or_none(e.parent) << " tokens=" << tokens_text(e.tokens) << " bs=" << e.block_size
       << " lora=" << e.lora << " medium=GPU";
  } else if (e.kind == ModelEvent::kRemoved) {
    os << "removed[";
    for (const BlockHash& h : e.hashes) os << h.hex().substr(0, 12) << ' ';
    os << "] medium=GPU";
  } else {
    os << "cleared";
  }
  return os.str();
}

template <typename T>
std::string join(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

void fail_if(bool bad, const std::string& what) {
  if (bad) RC_FAIL(what);
}

// Every observable of the real manager agrees with the model state `m`.
void compare_all(const ManagerModel& m, ManagerSut& sut) {
  const KvCacheManager& mgr = *sut.manager;
  const BlockPool& pool = mgr.pool();
  const std::vector<BlockId> order = pool.policy().order();
  fail_if(order != m.queue(), "free queue " + ids_text(order) + ", model " + ids_text(m.queue()));
  fail_if(mgr.num_free_blocks() != m.queue().size(),
          "num_free " + std::to_string(mgr.num_free_blocks()) + ", model " + std::to_string(m.queue().size()));
  for (BlockId b = 0; b < pool.num_blocks(); ++b) {
    const Block& blk = pool.block(b);
    const ModelBlock& mb = m.blocks()[static_cast<std::size_t>(b)];
    fail_if(blk.is_null != (b == 0), "block " + std::to_string(b) + " is_null is wrong");
    fail_if(blk.ref_cnt != mb.ref_cnt, "block " + std::to_string(b) + " ref_cnt " + std::to_string(blk.ref_cnt) +
                                           ", model " + std::to_string(mb.ref_cnt));
    const std::optional<BlockHash> h = blk.hash.empty() ? std::nullopt : std::optional<BlockHash>(blk.hash);
    fail_if(h != mb.hash, "block " + std::to_string(b) + " hash " + hex_or_none(h) + ", model " + hex_or_none(mb.hash));
  }
  fail_if(
      pool.num_cached_blocks() != m.num_cached_blocks(),
      "cached blocks " + std::to_string(pool.num_cached_blocks()) + ", model " + std::to_string(m.num_cached_blocks()));
  for (const auto& [hash, ids] : m.map()) {
    const BlockId got = pool.get_cached_block(hash);
    fail_if(got != ids.front(), "lookup of hash " + hash.hex().substr(0, 12) + " gives block " + std::to_string(got) +
                                    ", model " + std::to_string(ids.front()));
  }
  for (const ModelRequest& r : m.requests()) {
    const Request& req = *sut.requests.at(r.id);
    fail_if(req.block_hashes() != r.hashes, "request " + r.id + " has different block hashes");
    fail_if(req.num_computed_tokens != r.computed, "request " + r.id + " computed tokens differ");
    const auto held = mgr.blocks_of(r.id);
    const std::vector<BlockId> table(held.begin(), held.end());
    fail_if(table != r.table, "request " + r.id + " block table " + ids_text(table) + ", model " + ids_text(r.table));
    fail_if(mgr.holds_blocks(r.id) != r.held, "request " + r.id + " holds_blocks differs");
  }
  const PrefixCacheStats& st = mgr.stats();
  fail_if(st.lookups != m.stats().lookups || st.queries != m.stats().queries || st.hits != m.stats().hits,
          "stats lookups=" + std::to_string(st.lookups) + " queries=" + std::to_string(st.queries) +
              " hits=" + std::to_string(st.hits) + ", model " + m.stats_line());
  std::vector<std::string> got_events, want_events;
  for (const KvEvent& e : sut.manager->take_events()) got_events.push_back(event_text(e));
  for (const ModelEvent& e : m.events()) want_events.push_back(event_text(e));
  fail_if(got_events != want_events, "KV events " + join(got_events) + ", model " + join(want_events));
  std::string why;
  fail_if(!mgr.check_invariants(&why), "check_invariants: " + why);
}

// A snapshot of everything a failed allocation must leave unchanged.
struct Snapshot {
  std::vector<BlockId> queue;
  std::vector<std::pair<int, std::string>> blocks;
  std::vector<std::vector<BlockId>> tables;
  std::int64_t lookups, queries, hits;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const ManagerSut& sut) {
  Snapshot s;
  const KvCacheManager& mgr = *sut.manager;
  s.queue = mgr.pool().policy().order();
  for (BlockId b = 0; b < mgr.pool().num_blocks(); ++b) {
    s.blocks.emplace_back(mgr.pool().block(b).ref_cnt, mgr.pool().block(b).hash.hex());
  }
  for (const auto& [id, req] : sut.requests) {
    const auto t = mgr.blocks_of(id);
    s.tables.emplace_back(t.begin(), t.end());
  }
  s.lookups = mgr.stats().lookups;
  s.queries = mgr.stats().queries;
  s.hits = mgr.stats().hits;
  return s;
}

}  // namespace

void ManagerCommand::run(const ManagerModel& before, ManagerSut& sut) const {
  ManagerModel after = before;
  after.begin_command();
  do_apply(after);
  do_run(before, after, sut);
  compare_all(after, sut);
}

namespace {

// ---- commands ----

struct NewRequest final : ManagerCommand {
  std::string id;
  std::vector<TokenId> tokens;
  std::string salt, lora;
  std::vector<MultiModalItem> mm;
  BlockRetention retention;
  NewRequest(std::string i, std::vector<TokenId> t, std::string s, std::string l, std::vector<MultiModalItem> items,
             BlockRetention r)
      : id(std::move(i)),
        tokens(std::move(t)),
        salt(std::move(s)),
        lora(std::move(l)),
        mm(std::move(items)),
        retention(r) {}
  void checkPreconditions(const ManagerModel& m) const override {
    require(m.find(id) == nullptr);
    require(!tokens.empty() && static_cast<std::int64_t>(tokens.size()) <= m.config().max_model_len);
  }
  void do_apply(ManagerModel& m) const override { m.add_request(id, tokens, salt, lora, mm, retention); }
  void do_run(const ManagerModel&, const ManagerModel& after, ManagerSut& sut) const override {
    HashExtras extras;
    extras.cache_salt = salt;
    extras.lora_name = lora;
    extras.mm_items = mm;
    const bool caching = after.config().caching;
    sut.requests[id] =
        std::make_unique<Request>(id, tokens, extras, caching ? sut.hasher.get() : nullptr, after.config().block_size);
    sut.requests[id]->retention = retention;
  }
  std::vector<std::string> ops_lines(const ManagerModel&) const override {
    std::string line = "request " + id + " tokens=" + tokens_text(tokens);
    if (!salt.empty()) line += " salt=" + salt;
    if (!lora.empty()) line += " lora=" + lora;
    for (std::size_t i = 0; i < mm.size(); ++i) {
      line += (i == 0 ? " mm=" : ",") + mm[i].identifier + "@" + std::to_string(mm[i].offset) + "+" +
              std::to_string(mm[i].length);
    }
    if (retention != BlockRetention{}) {
      line += " retention=" + std::to_string(retention.priority) + "/" + std::to_string(retention.duration);
    }
    return {line};
  }
};

bool pending_elsewhere(const ManagerModel& m, const std::string& id) {
  const ModelRequest* p = m.pending_request();
  return p != nullptr && p->id != id;
}

struct Lookup final : ManagerCommand {
  std::string id;
  explicit Lookup(std::string i) : id(std::move(i)) {}
  void checkPreconditions(const ManagerModel& m) const override {
    const ModelRequest* r = m.find(id);
    require(r != nullptr && r->computed == 0 && !r->retired);
    require(m.pending_request() == nullptr);
  }
  void do_apply(ManagerModel& m) const override { m.lookup(id); }
  void do_run(const ManagerModel&, const ManagerModel& after, ManagerSut& sut) const override {
    const Request& req = *sut.requests.at(id);
    const CacheHit hit = sut.manager->get_computed_blocks(req);
    const std::vector<BlockId> hit_blocks(hit.group(0).begin(), hit.group(0).end());
    const ModelHit& want = *after.find(id)->pending;
    fail_if(hit_blocks != want.blocks || hit.num_tokens != want.tokens,
            "lookup " + id + " hit " + ids_text(hit_blocks) + " tokens=" + std::to_string(hit.num_tokens) + ", model " +
                ids_text(want.blocks) + " tokens=" + std::to_string(want.tokens));
    // Independently of the model: hits are a contiguous prefix of the request's hashes, capped.
    const auto cap = static_cast<std::size_t>((req.num_tokens() - 1) / after.config().block_size);
    fail_if(hit_blocks.size() > cap, "lookup " + id + " hits more than (num_tokens-1)/block_size blocks");
    for (std::size_t i = 0; i < hit_blocks.size(); ++i) {
      fail_if(!(sut.manager->pool().block(hit_blocks[i]).hash == req.block_hashes()[i]),
              "lookup " + id + " hit block " + std::to_string(hit_blocks[i]) + " is not cached under hash " +
                  std::to_string(i));
    }
    fail_if(hit.num_tokens != static_cast<std::int64_t>(hit_blocks.size()) * after.config().block_size,
            "lookup " + id + " hit tokens are not hits * block_size");
    sut.pending[id] = hit;
  }
  std::vector<std::string> ops_lines(const ManagerModel&) const override { return {"lookup " + id}; }
};

std::string tenant(const Request& r) {
  return "salt '" + r.extras().cache_salt + "', lora '" + r.extras().lora_name + "'";
}

// The isolation property: a request with another cache salt or another LoRA adapter never gets
// a block (as a hit) whose KV a different tenant computed. Fresh blocks become the request's.
void check_isolation(ManagerSut& sut, const Request& r, std::span<const BlockId> hits,
                     const std::vector<BlockId>& fresh) {
  const std::string who = tenant(r);
  for (BlockId b : hits) {
    const auto it = sut.tenant_of.find(b);
    fail_if(it == sut.tenant_of.end() || it->second != who,
            "request " + r.id() + " (" + who + ") hit block " + std::to_string(b) + ", computed by " +
                (it == sut.tenant_of.end() ? std::string("nobody") : it->second));
  }
  for (BlockId b : fresh) sut.tenant_of[b] = who;
}

struct Alloc final : ManagerCommand {
  std::string id;
  std::int64_t n;  // < 0: rest
  std::int64_t lookahead;
  bool fullfit;
  Alloc(std::string i, std::int64_t count, std::int64_t la, bool ff)
      : id(std::move(i)), n(count), lookahead(la), fullfit(ff) {}
  void checkPreconditions(const ManagerModel& m) const override {
    const ModelRequest* r = m.find(id);
    require(r != nullptr && !r->retired);
    require(!pending_elsewhere(m, id));
    if (n >= 0) {
      const std::int64_t hit = r->pending ? r->pending->tokens : 0;
      require(n >= 1 && r->computed + hit + n <= static_cast<std::int64_t>(r->tokens.size()));
    }
  }
  void do_apply(ManagerModel& m) const override { m.alloc(id, n, lookahead, fullfit); }
  void do_run(const ManagerModel&, const ManagerModel& after, ManagerSut& sut) const override {
    Request& req = *sut.requests.at(id);
    CacheHit hit;
    if (auto it = sut.pending.find(id); it != sut.pending.end()) {
      hit = it->second;
      sut.pending.erase(it);
    }
    std::int64_t count = n;
    const std::string& want = after.printed().front();
    if (count < 0) {
      count = req.num_tokens() - req.num_computed_tokens - hit.num_tokens;
      if (count <= 0) {
        fail_if(want != "alloc " + id + " skip", "alloc " + id + " skips, model: " + want);
        return;
      }
    }
    const Snapshot before = snapshot(sut);
    const auto fresh = sut.manager->allocate_slots(req, count, hit, lookahead, fullfit);
    if (fresh) {
      req.num_computed_tokens += hit.num_tokens + count;
      check_isolation(sut, req, hit.group(0), fresh->front());
    } else {
      fail_if(!(snapshot(sut) == before), "a failed allocation of " + id + " changed the state");
    }
    const std::string got = "alloc " + id + (fresh ? " new=" + ids_text(fresh->front()) : std::string(" fail"));
    fail_if(got != want, got + ", model: " + want);
  }
  std::vector<std::string> ops_lines(const ManagerModel&) const override {
    std::string line = "alloc " + id + " " + (n < 0 ? std::string("rest") : std::to_string(n));
    if (lookahead > 0) line += " lookahead=" + std::to_string(lookahead);
    if (fullfit) line += " fullfit";
    return {line};
  }
};

struct Append final : ManagerCommand {
  std::string id;
  std::vector<TokenId> tokens;
  Append(std::string i, std::vector<TokenId> t) : id(std::move(i)), tokens(std::move(t)) {}
  void checkPreconditions(const ManagerModel& m) const override {
    const ModelRequest* r = m.find(id);
    require(r != nullptr && r->held && m.pending_request() == nullptr && !tokens.empty());
    require(r->computed == static_cast<std::int64_t>(r->tokens.size()));
    require(static_cast<std::int64_t>(r->tokens.size() + tokens.size()) <= m.config().max_model_len);
  }
  void do_apply(ManagerModel& m) const override { m.append(id, tokens); }
  void do_run(const ManagerModel&, const ManagerModel&, ManagerSut& sut) const override {
    sut.requests.at(id)->append_tokens(tokens);
  }
  std::vector<std::string> ops_lines(const ManagerModel&) const override {
    return {"append " + id + " tokens=" + tokens_text(tokens)};
  }
};

struct Free final : ManagerCommand {
  std::string id;
  explicit Free(std::string i) : id(std::move(i)) {}
  void checkPreconditions(const ManagerModel& m) const override {
    require(m.find(id) != nullptr && m.pending_request() == nullptr);
  }
  void do_apply(ManagerModel& m) const override { m.free(id); }
  void do_run(const ManagerModel&, const ManagerModel&, ManagerSut& sut) const override {
    sut.manager->free(*sut.requests.at(id));
  }
  std::vector<std::string> ops_lines(const ManagerModel&) const override { return {"free " + id}; }
};

struct Reset final : ManagerCommand {
  void checkPreconditions(const ManagerModel& m) const override { require(m.pending_request() == nullptr); }
  void do_apply(ManagerModel& m) const override { m.reset(); }
  void do_run(const ManagerModel&, const ManagerModel& after, ManagerSut& sut) const override {
    const bool ok = sut.manager->reset_prefix_cache();
    const std::string got = std::string("reset ") + (ok ? "ok" : "fail");
    fail_if(got != after.printed().front(), got + ", model: " + after.printed().front());
  }
  std::vector<std::string> ops_lines(const ManagerModel&) const override { return {"reset"}; }
};

// Frees every request still holding blocks, in creation order; then the whole cache must be
// free (N-1 blocks) and reset_prefix_cache() must succeed.
struct Drain final : ManagerCommand {
  void checkPreconditions(const ManagerModel& m) const override { require(m.pending_request() == nullptr); }
  void do_apply(ManagerModel& m) const override {
    for (const ModelRequest& r : m.requests()) {
      if (r.held) m.free(r.id);
    }
    m.print_queries();
    m.reset();
  }
  void do_run(const ManagerModel& before, const ManagerModel&, ManagerSut& sut) const override {
    for (const ModelRequest& r : before.requests()) {
      if (r.held) sut.manager->free(*sut.requests.at(r.id));
    }
    const auto n = static_cast<std::size_t>(before.config().num_blocks - 1);
    fail_if(sut.manager->num_free_blocks() != n, "after freeing everything num_free is " +
                                                     std::to_string(sut.manager->num_free_blocks()) + ", not " +
                                                     std::to_string(n));
    fail_if(!sut.manager->reset_prefix_cache(), "reset fails after freeing everything");
  }
  std::vector<std::string> ops_lines(const ManagerModel& before) const override {
    std::vector<std::string> lines;
    for (const ModelRequest& r : before.requests()) {
      if (r.held) lines.push_back("free " + r.id);
    }
    lines.insert(lines.end(), {"queue", "num_free", "stats", "reset"});
    return lines;
  }
};

// ---- generation ----

std::vector<TokenId> gen_tokens(std::size_t min_len, std::size_t max_len) {
  const std::size_t len = *rc::gen::inRange<std::size_t>(min_len, max_len + 1);
  return *rc::gen::container<std::vector<TokenId>>(len, rc::gen::inRange<TokenId>(0, 3));
}

std::shared_ptr<const ManagerCommand> gen_new_request(const ManagerModel& m) {
  const int b = m.config().block_size;
  const std::size_t max_len = static_cast<std::size_t>(std::min<std::int64_t>(m.config().max_model_len, 6 * b));
  std::vector<TokenId> tokens;
  if (!m.requests().empty() && *rc::gen::inRange(0, 2) == 0) {
    // Share a prefix with an earlier request, so that lookups hit.
    const ModelRequest& base = *rc::gen::elementOf(m.requests());
    const std::size_t keep = *rc::gen::inRange<std::size_t>(0, std::min(base.tokens.size(), max_len) + 1);
    tokens.assign(base.tokens.begin(), base.tokens.begin() + static_cast<std::ptrdiff_t>(keep));
    const std::size_t room = max_len - tokens.size();
    const auto tail = gen_tokens(tokens.empty() ? 1 : 0, std::min<std::size_t>(room, 2 * static_cast<std::size_t>(b)));
    tokens.insert(tokens.end(), tail.begin(), tail.end());
  } else {
    tokens = gen_tokens(1, max_len);
  }
  const std::string salt = *rc::gen::element<std::string>("", "", "", "s1", "s2");
  const std::string lora = *rc::gen::element<std::string>("", "", "", "l1", "l2");
  // Multimodal items (a quarter of the requests): one or two, in offset order, inside the prompt.
  std::vector<MultiModalItem> mm;
  const int items = *rc::gen::inRange(0, 4) == 3 ? *rc::gen::inRange(1, 3) : 0;
  for (std::int64_t from = 0, k = 0; k < items && from < static_cast<std::int64_t>(tokens.size()); ++k) {
    MultiModalItem item;
    item.identifier = *rc::gen::element<std::string>("img1", "img2");
    item.offset = *rc::gen::inRange<std::int64_t>(from, static_cast<std::int64_t>(tokens.size()));
    item.length = *rc::gen::inRange<std::int64_t>(1, static_cast<std::int64_t>(tokens.size()) - item.offset + 1);
    from = item.offset + item.length;
    mm.push_back(std::move(item));
  }
  BlockRetention retention;  // drawn for the priority policy only; shrinks to the default
  if (m.config().policy == EvictionPolicyKind::kPriority && *rc::gen::inRange(0, 3) != 0) {
    retention.priority = *rc::gen::element(0, 20, 35, 60, 100);
    retention.duration = *rc::gen::inRange<std::int64_t>(0, 4);
  }
  return std::make_shared<NewRequest>("r" + std::to_string(m.requests().size()), std::move(tokens), salt, lora,
                                      std::move(mm), retention);
}

std::shared_ptr<const ManagerCommand> gen_alloc(const ModelRequest& r) {
  const std::int64_t hit = r.pending ? r.pending->tokens : 0;
  const std::int64_t left = static_cast<std::int64_t>(r.tokens.size()) - r.computed - hit;
  std::int64_t n = -1;
  if (left >= 1 && *rc::gen::inRange(0, 2) == 1) n = *rc::gen::inRange<std::int64_t>(1, left + 1);
  const std::int64_t lookahead = *rc::gen::inRange(0, 5) < 3 ? 0 : *rc::gen::inRange<std::int64_t>(1, 5);
  const bool fullfit = *rc::gen::inRange(0, 4) == 3;  // shrinks to off
  return std::make_shared<Alloc>(r.id, n, lookahead, fullfit);
}

using ManagerCommandBase = rc::state::Command<ManagerModel, ManagerSut>;

rc::Gen<std::shared_ptr<const ManagerCommandBase>> gen_manager_command(const ManagerModel& m) {
  return rc::gen::exec([m]() -> std::shared_ptr<const ManagerCommandBase> {
    if (const ModelRequest* p = m.pending_request()) return gen_alloc(*p);
    // Indices, not pointers: RapidCheck keeps the drawn elements for shrinking, after this copy
    // of the model is gone.
    std::vector<std::size_t> lookupable, allocatable, appendable;
    for (std::size_t i = 0; i < m.requests().size(); ++i) {
      const ModelRequest& r = m.requests()[i];
      if (r.retired) continue;
      allocatable.push_back(i);
      if (r.computed == 0) lookupable.push_back(i);
      if (r.held && r.computed == static_cast<std::int64_t>(r.tokens.size()) &&
          static_cast<std::int64_t>(r.tokens.size()) < m.config().max_model_len) {
        appendable.push_back(i);
      }
    }
    enum Kind { kNew, kLookup, kAlloc, kAppend, kFree, kReset, kDrain };
    std::vector<std::pair<std::size_t, int>> weights;
    if (m.requests().size() < 10) weights.emplace_back(3, kNew);
    if (!lookupable.empty()) weights.emplace_back(4, kLookup);
    if (!allocatable.empty()) weights.emplace_back(5, kAlloc);
    if (!appendable.empty()) weights.emplace_back(3, kAppend);
    if (!m.requests().empty()) weights.emplace_back(3, kFree);
    weights.emplace_back(1, kReset);
    weights.emplace_back(1, kDrain);
    std::size_t total = 0;
    for (const auto& wk : weights) total += wk.first;
    std::size_t pick = *rc::gen::inRange<std::size_t>(0, total);
    int kind = weights.front().second;
    for (const auto& [w, k] : weights) {
      if (pick < w) {
        kind = k;
        break;
      }
      pick -= w;
    }
    switch (kind) {
      case kNew:
        return gen_new_request(m);
      case kLookup:
        return std::make_shared<Lookup>(m.requests()[*rc::gen::elementOf(lookupable)].id);
      case kAlloc:
        return gen_alloc(m.requests()[*rc::gen::elementOf(allocatable)]);
      case kAppend: {
        const ModelRequest& r = m.requests()[*rc::gen::elementOf(appendable)];
        const std::int64_t room = m.config().max_model_len - static_cast<std::int64_t>(r.tokens.size());
        return std::make_shared<Append>(r.id, gen_tokens(1, static_cast<std::size_t>(std::min<std::int64_t>(room, 3))));
      }
      case kFree:
        return std::make_shared<Free>((*rc::gen::elementOf(m.requests())).id);
      case kReset:
        return std::make_shared<Reset>();
      default:
        return std::make_shared<Drain>();
    }
  });
}

ModelConfig gen_config(FreeOrder order, ManagerVariant variant, EvictionPolicyKind policy) {
  ModelConfig c;
  c.free_order = order;
  c.policy = policy;
  c.caching = variant != ManagerVariant::kNoCaching;
  c.eagle = variant == ManagerVariant::kCachingEagle;
  c.num_blocks = *rc::gen::inRange(2, 13);
  c.block_size = *rc::gen::inRange(2, 5);
  if (*rc::gen::inRange(0, 4) == 3) c.max_model_len = *rc::gen::inRange(2 * c.block_size, 6 * c.block_size + 1);
  if (*rc::gen::inRange(0, 4) == 3) c.algo = HashAlgo::kXxhashCbor;  // shrinks to sha256
  return c;
}

// Replays the case's ops script through the interpreter and compares with the model's output:
// the reproducer printed on failure must be faithful.
CaseOutcome replay_through_ops(const ManagerScript& script) {
  CaseOutcome o;
  std::ostringstream out;
  std::istringstream in(script.text);
  std::ostringstream err;
  const int rc = OpsInterpreter::run_script(in, out, err);
  if (rc != 0 || out.str() != script.expected) {
    o.passed = false;
    o.message = "the ops script of this case does not replay as the model predicts (exit " + std::to_string(rc) + ", " +
                err.str() + ")\n--- ops output:\n" + out.str() + "--- expected:\n" + script.expected;
  }
  return o;
}

}  // namespace

void manager_property(FreeOrder order, ManagerVariant variant, EvictionPolicyKind policy) {
  const ModelConfig config = gen_config(order, variant, policy);
  const ManagerModel initial(config);
  const auto commands = *rc::state::gen::commands(initial, &gen_manager_command);
  const CaseOutcome o = run_isolated([&] {
    ManagerSut sut(config);
    CaseOutcome r = run_commands(commands, initial, sut);
    if (r.passed) r = replay_through_ops(write_manager_script(config, commands, -1));
    return r;
  });
  if (!o.passed) {
    const ManagerScript script = write_manager_script(config, commands, o.failed_step);
    RC_FAIL(o.message + "\n" + format_reproducer(script));
  }
}

}  // namespace kv::props
