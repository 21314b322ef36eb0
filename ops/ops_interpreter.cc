#include "ops/ops_interpreter.h"

#include <algorithm>
#include <charconv>
#include <istream>
#include <ostream>
#include <set>

#include "model/mamba_cache_mode.h"

namespace kv {
namespace {

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  return words;
}

// A non-negative decimal integer, the whole string.
bool parse_nonneg(std::string_view s, std::int64_t* out) {
  if (s.empty() || s.front() == '+' || s.front() == '-') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

Status bad_int(std::string_view what, std::string_view text) {
  return Status::error(std::string(what) + " must be a non-negative integer, got '" + std::string(text) + "'");
}

// key=value arguments after the positional ones; flags are keys with no '='.
struct Args {
  std::map<std::string, std::string, std::less<>> kv;
  std::set<std::string, std::less<>> flags;
};

Status parse_args(const std::vector<std::string_view>& words, std::size_t first, const std::set<std::string_view>& keys,
                  const std::set<std::string_view>& flags, Args* args) {
  for (std::size_t i = first; i < words.size(); ++i) {
    const std::string_view w = words[i];
    const auto eq = w.find('=');
    if (eq == std::string_view::npos) {
      if (!flags.count(w)) return Status::error("unknown argument '" + std::string(w) + "'");
      args->flags.emplace(w);
      continue;
    }
    const std::string_view key = w.substr(0, eq);
    if (!keys.count(key)) return Status::error("unknown argument '" + std::string(key) + "'");
    if (!args->kv.emplace(std::string(key), std::string(w.substr(eq + 1))).second) {
      return Status::error("argument '" + std::string(key) + "' given twice");
    }
  }
  return {};
}

std::string join_ids(const std::vector<BlockId>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

// One list per group, separated by '/': `[1,2]` for one group, `[1,2]/[0,3]` for two.
std::string join_groups(const GroupBlockIds& groups) {
  std::string s;
  for (std::size_t g = 0; g < groups.size(); ++g) s += (g ? "/" : "") + join_ids(groups[g]);
  return s;
}

// How `groups` names a group's spec as the layer list spells it: full, sliding_window:W,
// chunked_local:C, mamba, cross_attention, rswa:W.
std::string spec_name(const KvCacheSpec& spec) {
  switch (spec.type) {
    case AttentionType::kSlidingWindow:
      return "sliding_window:" + std::to_string(spec.window);
    case AttentionType::kChunkedLocalAttention:
      return "chunked_local:" + std::to_string(spec.chunk);
    case AttentionType::kRSwa:
      return "rswa:" + std::to_string(spec.window);
    default:
      return to_string(spec.type);
  }
}

Status on_off(const Args& a, const char* key, bool* out) {
  auto it = a.kv.find(key);
  if (it == a.kv.end()) return {};
  if (it->second == "on")
    *out = true;
  else if (it->second == "off")
    *out = false;
  else
    return Status::error(std::string(key) + " must be on or off, got '" + it->second + "'");
  return {};
}

// The config line's settings for its layer list: `mamba=` (default align with caching on,
// none with it off, as vLLM), `spec_tokens=` and the block size and max_model_len already read.
StatusOr<LayerListDefaults> layer_defaults(const Args& a, const KvCacheConfig& c) {
  LayerListDefaults d;
  d.block_size = c.block_size;
  d.max_model_len = c.max_model_len;
  d.mamba_mode = c.enable_caching ? MambaCacheMode::kAlign : MambaCacheMode::kNone;
  if (auto it = a.kv.find("mamba"); it != a.kv.end()) {
    const std::optional<MambaCacheMode> mode = parse_mamba_cache_mode(it->second);
    if (!mode) return Status::error("mamba must be none, align or all, got '" + it->second + "'");
    if ((*mode == MambaCacheMode::kNone) == c.enable_caching) {
      return Status::error("mamba=" + it->second + " with caching " + (c.enable_caching ? "on" : "off") +
                           ": vLLM uses none without prefix caching, align or all with it");
    }
    d.mamba_mode = *mode;
  }
  if (auto it = a.kv.find("spec_tokens"); it != a.kv.end()) {
    std::int64_t k = 0;
    if (!parse_nonneg(it->second, &k) || k > 1024) {
      return Status::error("spec_tokens must be an integer from 0 to 1024, got '" + it->second + "'");
    }
    d.num_speculative_blocks = static_cast<int>(k);
  }
  return d;
}

}  // namespace

StatusOr<std::vector<TokenId>> parse_token_spec(std::string_view spec) {
  constexpr std::size_t kMaxSpecTokens = std::size_t{1} << 24;  // one item's limit is the whole list's too
  std::vector<TokenId> tokens;
  if (spec.empty()) return Status::error("empty token list");
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = spec.substr(start, comma - start);
    if (item.empty()) return Status::error("empty item in token list '" + std::string(spec) + "'");
    const auto star = item.find('*');
    const auto colon = item.find(':');
    std::int64_t a = 0, b = 0;
    if (star != std::string_view::npos) {
      if (!parse_nonneg(item.substr(0, star), &a)) return bad_int("token", item.substr(0, star));
      if (!parse_nonneg(item.substr(star + 1), &b)) return bad_int("repeat count", item.substr(star + 1));
      if (b > (1 << 24) || static_cast<std::size_t>(b) > kMaxSpecTokens - tokens.size()) {
        return Status::error("repeat count too large in '" + std::string(item) + "'");
      }
      tokens.insert(tokens.end(), static_cast<std::size_t>(b), a);
    } else if (colon != std::string_view::npos) {
      if (!parse_nonneg(item.substr(0, colon), &a)) return bad_int("range start", item.substr(0, colon));
      if (!parse_nonneg(item.substr(colon + 1), &b)) return bad_int("range end", item.substr(colon + 1));
      if (b < a) return Status::error("range '" + std::string(item) + "' ends before it starts");
      if (b - a > (1 << 24) || static_cast<std::size_t>(b - a) > kMaxSpecTokens - tokens.size()) {
        return Status::error("range too large in '" + std::string(item) + "'");
      }
      for (std::int64_t t = a; t < b; ++t) tokens.push_back(t);
    } else {
      if (!parse_nonneg(item, &a)) return bad_int("token", item);
      tokens.push_back(a);
    }
    if (tokens.size() > kMaxSpecTokens) {
      return Status::error("token list has more than " + std::to_string(kMaxSpecTokens) + " tokens");
    }
    start = comma + 1;
  }
  return tokens;
}

StatusOr<std::vector<MultiModalItem>> parse_mm_spec(std::string_view spec) {
  std::vector<MultiModalItem> items;
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = spec.substr(start, comma - start);
    const auto at = item.find('@');
    const auto plus = item.find('+', at == std::string_view::npos ? 0 : at);
    if (at == 0 || at == std::string_view::npos || plus == std::string_view::npos) {
      return Status::error("multimodal item '" + std::string(item) + "' is not ID@OFFSET+LENGTH");
    }
    MultiModalItem mm;
    mm.identifier = std::string(item.substr(0, at));
    const std::string_view offset = item.substr(at + 1, plus - at - 1);
    if (!parse_nonneg(offset, &mm.offset)) return bad_int("mm offset", offset);
    if (!parse_nonneg(item.substr(plus + 1), &mm.length)) return bad_int("mm length", item.substr(plus + 1));
    if (mm.length < 1) return Status::error("mm length must be at least 1 in '" + std::string(item) + "'");
    if (!items.empty() && mm.offset < items.back().offset) {
      return Status::error("multimodal items must be in offset order, '" + std::string(item) + "' is not");
    }
    items.push_back(std::move(mm));
    start = comma + 1;
  }
  return items;
}

namespace {

// One item of a layer list without its `*COUNT`: the spec it names, or an error.
StatusOr<KvCacheSpec> parse_layer_item(std::string_view item, const LayerListDefaults& d) {
  const auto colon = item.find(':');
  const std::string_view type = item.substr(0, colon);
  // Every layer has the same page: 2 KV heads of 64 (K and V), 2 bytes.
  KvCacheSpec s{AttentionType::kFullAttention, d.block_size, 2, 64, 64, 2, 0, 0};
  if (colon == std::string_view::npos) {
    if (type == "full") return s;
    if (type == "cross_attention") {
      s.type = AttentionType::kCrossAttention;
      return s;
    }
    if (type == "mamba") {
      s.mamba_state_bytes = s.page_size_bytes();  // one attention page: no padding
      s.type = AttentionType::kMamba;
      s.mamba_mode = d.mamba_mode;
      s.num_speculative_blocks = d.num_speculative_blocks;
      // Mode none: one block holds the request's state for its whole life.
      if (d.mamba_mode == MambaCacheMode::kNone) {
        if (d.max_model_len > (1 << 30)) return Status::error("a Mamba layer in mode none needs max_model_len <= 2^30");
        s.block_size = static_cast<int>(d.max_model_len);
      }
      return s;
    }
  }
  std::int64_t reach = 0;
  if (colon != std::string_view::npos && parse_nonneg(item.substr(colon + 1), &reach) && reach >= 1 &&
      reach <= (1 << 24)) {
    if (type == "sliding_window" || type == "rswa") {
      s.type = type == "rswa" ? AttentionType::kRSwa : AttentionType::kSlidingWindow;
      s.window = static_cast<int>(reach);
      return s;
    }
    if (type == "chunked_local") {
      s.type = AttentionType::kChunkedLocalAttention;
      s.chunk = static_cast<int>(reach);
      return s;
    }
  }
  return Status::error("layer '" + std::string(item) +
                       "' is not full, sliding_window:W, chunked_local:C, mamba, cross_attention or rswa:W "
                       "(W, C from 1 to 16777216)");
}

}  // namespace

StatusOr<std::vector<LayerKvCacheSpec>> parse_layers_spec(std::string_view spec, const LayerListDefaults& defaults) {
  std::vector<LayerKvCacheSpec> layers;
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view item = spec.substr(start, comma - start);
    std::int64_t count = 1;
    if (const auto star = item.find('*'); star != std::string_view::npos) {
      if (!parse_nonneg(item.substr(star + 1), &count) || count < 1 || count > 1024) {
        return Status::error("layer count in '" + std::string(item) + "' must be from 1 to 1024");
      }
      item = item.substr(0, star);
    }
    auto s = parse_layer_item(item, defaults);
    if (!s.ok()) return s.status();
    for (std::int64_t i = 0; i < count; ++i) {
      layers.push_back({"layer." + std::to_string(layers.size()), *s});
    }
    if (layers.size() > 4096) return Status::error("more than 4096 layers");
    start = comma + 1;
  }
  return layers;
}

StatusOr<OpsInterpreter::OpsRequest*> OpsInterpreter::find(std::string_view id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return Status::error("unknown request '" + std::string(id) + "'");
  return &it->second;
}

Status OpsInterpreter::cmd_config(const std::vector<std::string_view>& words) {
  Args a;
  Status s = parse_args(words, 1,
                        {"blocks", "block_size", "hash", "seed", "free_order", "caching", "eagle", "max_model_len",
                         "layers", "policy", "mamba", "spec_tokens"},
                        {}, &a);
  if (!s.ok()) return s;
  for (const char* required : {"blocks", "block_size"}) {
    if (!a.kv.count(required)) return Status::error("config needs " + std::string(required) + "=");
  }
  KvCacheConfig c;
  std::int64_t v = 0;
  if (!parse_nonneg(a.kv["blocks"], &v) || v < 2 || v > (1 << 22)) {
    return Status::error("blocks must be an integer from 2 to 4194304, got '" + a.kv["blocks"] + "'");
  }
  c.num_blocks = static_cast<int>(v);
  if (!parse_nonneg(a.kv["block_size"], &v) || v < 1 || v > (1 << 20)) {
    return Status::error("block_size must be a positive integer, got '" + a.kv["block_size"] + "'");
  }
  c.block_size = static_cast<int>(v);
  HashAlgo algo = HashAlgo::kSha256Cbor;
  if (a.kv.count("hash")) {
    auto parsed = parse_hash_algo(a.kv["hash"]);
    if (!parsed) return Status::error("hash must be sha256_cbor or xxhash_cbor, got '" + a.kv["hash"] + "'");
    algo = *parsed;
  }
  const std::string seed = a.kv.count("seed") ? a.kv["seed"] : std::string(kDefaultHashSeed);
  if (a.kv.count("free_order") && !parse_free_order(a.kv["free_order"], &c.free_order)) {
    return Status::error("free_order must be classic or unhashed_first, got '" + a.kv["free_order"] + "'");
  }
  if (a.kv.count("policy") && !parse_eviction_policy(a.kv["policy"], &c.eviction_policy)) {
    return Status::error("policy must be one of " + std::string(eviction_policy_names()) + ", got '" + a.kv["policy"] +
                         "'");
  }
  if (s = on_off(a, "caching", &c.enable_caching); !s.ok()) return s;
  if (s = on_off(a, "eagle", &c.use_eagle); !s.ok()) return s;
  if (a.kv.count("max_model_len")) {
    if (!parse_nonneg(a.kv["max_model_len"], &v) || v < 1) {
      return Status::error("max_model_len must be a positive integer, got '" + a.kv["max_model_len"] + "'");
    }
    c.max_model_len = v;
  }
  auto defaults = layer_defaults(a, c);
  if (!defaults.ok()) return defaults.status();
  std::vector<KvCacheGroupSpec> groups;
  if (a.kv.count("layers")) {
    auto layers = parse_layers_spec(a.kv["layers"], *defaults);
    if (!layers.ok()) return layers.status().with_context("layers: ");
    auto built = get_kv_cache_groups(*layers);
    if (!built.ok()) return built.status().with_context("layers: ");
    groups = std::move(*built);
    c.block_size = cache_block_size(groups);  // a Mamba-only model in mode none: max_model_len
  } else if (a.kv.count("mamba") || a.kv.count("spec_tokens")) {
    return Status::error(std::string(a.kv.count("mamba") ? "mamba" : "spec_tokens") + "= needs layers=");
  }
  c.groups = std::move(groups);
  if (Status valid = c.validate(); !valid.ok()) return valid;
  config_ = c;
  requests_.clear();
  hasher_ = std::make_unique<BlockHasher>(algo, seed);
  manager_ = std::make_unique<KvCacheManager>(c);
  return {};
}

Status OpsInterpreter::cmd_request(const std::vector<std::string_view>& words) {
  if (words.size() < 2) return Status::error("request needs an id");
  const std::string id(words[1]);
  if (id.find('=') != std::string::npos) return Status::error("request needs an id before its arguments");
  if (requests_.count(id)) return Status::error("request id '" + id + "' already used");
  Args a;
  if (Status s = parse_args(words, 2, {"tokens", "salt", "lora", "mm", "retention"}, {}, &a); !s.ok()) return s;
  if (!a.kv.count("tokens")) return Status::error("request needs tokens=");
  auto tokens = parse_token_spec(a.kv["tokens"]);
  if (!tokens.ok()) return tokens.status();
  HashExtras extras;
  extras.cache_salt = a.kv.count("salt") ? a.kv["salt"] : "";
  extras.lora_name = a.kv.count("lora") ? a.kv["lora"] : "";
  if (a.kv.count("mm")) {
    auto mm = parse_mm_spec(a.kv["mm"]);
    if (!mm.ok()) return mm.status();
    extras.mm_items = std::move(mm.value());
  }
  BlockRetention retention;
  if (a.kv.count("retention")) {  // PRIORITY/DURATION, for the priority eviction policy
    const std::string& text = a.kv["retention"];
    const std::size_t slash = text.find('/');
    std::int64_t p = 0, d = 0;
    if (slash == std::string::npos || !parse_nonneg(text.substr(0, slash), &p) ||
        !parse_nonneg(text.substr(slash + 1), &d) || p > BlockRetention::kMaxPriority) {
      return Status::error("retention must be PRIORITY/DURATION (priority 0..100, duration >= 0 releases), got '" +
                           text + "'");
    }
    retention = BlockRetention{static_cast<int>(p), d};
  }
  OpsRequest r;
  r.request = std::make_unique<Request>(id, std::move(tokens.value()), std::move(extras),
                                        config_.enable_caching ? hasher_.get() : nullptr, config_.hash_block_size());
  r.request->retention = retention;
  requests_.emplace(id, std::move(r));
  return {};
}

Status OpsInterpreter::cmd_alloc(const std::vector<std::string_view>& words) {
  if (words.size() < 3) return Status::error("alloc needs an id and a token count (or rest)");
  auto found = find(words[1]);
  if (!found.ok()) return found.status();
  OpsRequest& r = **found;
  Request& req = *r.request;
  Args a;
  if (Status s = parse_args(words, 3, {"lookahead", "draft", "encoder"}, {"fullfit"}, &a); !s.ok()) return s;
  std::int64_t counts[3] = {0, 0, 0};  // lookahead, draft, encoder tokens
  const char* const keys[3] = {"lookahead", "draft", "encoder"};
  for (int i = 0; i < 3; ++i) {
    auto it = a.kv.find(keys[i]);
    if (it == a.kv.end()) continue;
    if (!parse_nonneg(it->second, &counts[i]) || counts[i] > (1 << 24)) {
      return Status::error(std::string(keys[i]) + " must be an integer from 0 to 16777216, got '" + it->second + "'");
    }
  }
  const auto [lookahead, draft, encoder] = counts;
  const CacheHit hit = r.pending_hit.value_or(CacheHit{});
  r.pending_hit.reset();
  const std::int64_t left = req.num_tokens() - req.num_computed_tokens - hit.num_tokens;
  std::int64_t n = 0;
  if (words[2] == "rest") {
    n = std::max<std::int64_t>(left, 0);
  } else {
    if (!parse_nonneg(words[2], &n)) return bad_int("token count", words[2]);
    if (n == 0) return Status::error("alloc of 0 tokens");
    if (n > left) {
      return Status::error("alloc of " + std::to_string(n) + " tokens exceeds the " + std::to_string(left) +
                           " tokens " + req.id() + " has left");
    }
  }
  if (n + draft == 0) {
    out_ << "alloc " << req.id() << " skip\n";
    return {};
  }
  // Draft tokens are scheduled past the request's tokens; the manager never caches them.
  auto fresh = manager_->allocate_slots(req, n + draft, hit, lookahead, a.flags.count("fullfit") != 0, encoder);
  if (!fresh) {
    out_ << "alloc " << req.id() << " fail\n";
    return {};
  }
  req.num_computed_tokens += hit.num_tokens + n + draft;
  out_ << "alloc " << req.id() << " new=" << join_groups(*fresh) << "\n";
  return {};
}

// `rollback ID N`: N rejected draft tokens are no longer computed (vLLM lowers
// num_computed_tokens before it appends the accepted ones); the blocks stay.
Status OpsInterpreter::cmd_rollback(const std::vector<std::string_view>& words) {
  if (words.size() != 3) return Status::error("rollback needs an id and a token count");
  auto found = find(words[1]);
  if (!found.ok()) return found.status();
  Request& req = *(*found)->request;
  std::int64_t n = 0;
  if (!parse_nonneg(words[2], &n)) return bad_int("token count", words[2]);
  if (n > req.num_computed_tokens) {
    return Status::error("rollback of " + std::to_string(n) + " tokens, " + req.id() + " has computed " +
                         std::to_string(req.num_computed_tokens));
  }
  req.num_computed_tokens -= n;
  return {};
}

// `table ID [group=G]`: the request's block table, every group or one.
Status OpsInterpreter::cmd_table(const std::vector<std::string_view>& words) {
  if (words.size() < 2 || words[1].find('=') != std::string_view::npos) {
    return Status::error("table needs a request id");
  }
  auto found = find(words[1]);
  if (!found.ok()) return found.status();
  Args a;
  if (Status s = parse_args(words, 2, {"group"}, {}, &a); !s.ok()) return s;
  GroupBlockIds table;
  for (std::size_t g = 0; g < manager_->num_groups(); ++g) {
    const auto blocks = manager_->blocks_of((*found)->request->id(), g);
    table.emplace_back(blocks.begin(), blocks.end());
  }
  if (!a.kv.count("group")) {
    out_ << "table " << words[1] << " " << join_groups(table) << "\n";
    return {};
  }
  std::int64_t g = 0;
  if (!parse_nonneg(a.kv["group"], &g) || g >= static_cast<std::int64_t>(table.size())) {
    return Status::error("group must be from 0 to " + std::to_string(table.size() - 1) + ", got '" + a.kv["group"] +
                         "'");
  }
  out_ << "table " << words[1] << " group=" << g << " " << join_ids(table[static_cast<std::size_t>(g)]) << "\n";
  return {};
}

// lookup / free / hashes of one request.
Status OpsInterpreter::cmd_request_query(std::string_view cmd, std::string_view id) {
  auto found = find(id);
  if (!found.ok()) return found.status();
  OpsRequest& r = **found;
  if (cmd == "lookup") {
    if (r.request->num_computed_tokens != 0) {
      return Status::error("lookup of '" + r.request->id() + "' after it computed tokens");
    }
    r.pending_hit = manager_->get_computed_blocks(*r.request);
    r.pending_hit->blocks.resize(manager_->num_groups());  // caching off: one empty list each
    out_ << "hit " << r.request->id() << " blocks=" << join_groups(r.pending_hit->blocks)
         << " tokens=" << r.pending_hit->num_tokens << "\n";
  } else if (cmd == "free") {
    manager_->free(*r.request);
  } else {
    out_ << "hashes " << r.request->id() << " [";
    const auto& hs = r.request->block_hashes();
    for (std::size_t i = 0; i < hs.size(); ++i) out_ << (i ? "," : "") << hs[i].hex();
    out_ << "]\n";
  }
  return {};
}

// Commands of the whole pool: queue, num_free, stats, reset, groups, new_step, check.
Status OpsInterpreter::cmd_pool_query(std::string_view cmd, bool* check_failed) {
  if (cmd == "queue") {
    out_ << "queue " << join_ids(manager_->pool().policy().order()) << "\n";
  } else if (cmd == "num_free") {
    out_ << "num_free " << manager_->pool().num_free_blocks() << "\n";
  } else if (cmd == "stats") {
    const PrefixCacheStats& st = manager_->stats();
    out_ << "stats lookups=" << st.lookups << " queries=" << st.queries << " hits=" << st.hits << "\n";
  } else if (cmd == "reset") {
    out_ << "reset " << (manager_->reset_prefix_cache() ? "ok" : "fail") << "\n";
  } else if (cmd == "groups") {
    out_ << "groups";
    if (config_.groups.empty()) out_ << " full[all]";
    for (const KvCacheGroupSpec& g : config_.groups) {
      std::string layers;
      for (const std::string& name : g.layer_names) layers += (layers.empty() ? "" : ",") + name.substr(6);
      out_ << " " << spec_name(g.spec) << "[" << layers << "]";
    }
    out_ << "\n";
  } else if (cmd == "new_step") {
    manager_->new_step();
  } else if (cmd == "check") {
    std::string why;
    if (!manager_->check_invariants(&why)) {
      out_ << "check failed: " << why << "\n";
      *check_failed = true;
      return Status::error("check failed: " + why);
    }
    out_ << "check ok\n";
  }
  return {};
}

Status OpsInterpreter::dispatch(const std::vector<std::string_view>& w, bool* check_failed) {
  const std::string_view cmd = w[0];
  static constexpr std::string_view kCommands[] = {"config", "request",  "lookup",   "alloc",   "append", "free",
                                                   "queue",  "num_free", "stats",    "reset",   "hashes", "check",
                                                   "table",  "groups",   "new_step", "rollback"};
  if (std::find(std::begin(kCommands), std::end(kCommands), cmd) == std::end(kCommands)) {
    return Status::error("unknown command '" + std::string(cmd) + "'");
  }
  if (cmd == "config") return cmd_config(w);
  if (!manager_) return Status::error("'" + std::string(cmd) + "' before the first config line");
  auto no_args = [&](std::size_t n) -> Status {
    if (w.size() > n) return Status::error("unexpected argument '" + std::string(w[n]) + "'");
    if (w.size() < n) return Status::error(std::string(cmd) + " needs a request id");
    return {};
  };
  if (cmd == "request") return cmd_request(w);
  if (cmd == "alloc") return cmd_alloc(w);
  if (cmd == "rollback") return cmd_rollback(w);
  if (cmd == "table") return cmd_table(w);
  if (cmd == "lookup" || cmd == "free" || cmd == "hashes") {
    if (Status s = no_args(2); !s.ok()) return s;
    return cmd_request_query(cmd, w[1]);
  }
  if (cmd == "append") {
    if (w.size() < 2) return Status::error("append needs a request id");
    auto found = find(w[1]);
    if (!found.ok()) return found.status();
    Args a;
    if (Status s = parse_args(w, 2, {"tokens"}, {}, &a); !s.ok()) return s;
    if (!a.kv.count("tokens")) return Status::error("append needs tokens=");
    auto tokens = parse_token_spec(a.kv["tokens"]);
    if (!tokens.ok()) return tokens.status();
    (*found)->request->append_tokens(*tokens);
    return {};
  }
  if (Status s = no_args(1); !s.ok()) return s;
  return cmd_pool_query(cmd, check_failed);
}

OpsInterpreter::Outcome OpsInterpreter::execute(std::string_view line, int line_no) {
  const auto hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  const auto words = split_words(line);
  if (words.empty()) return Outcome::kOk;
  bool check_failed = false;
  Status s = dispatch(words, &check_failed);
  if (s.ok()) return Outcome::kOk;
  error_ = "line " + std::to_string(line_no) + ": " + s.message();
  return check_failed ? Outcome::kCheckFailed : Outcome::kError;
}

int OpsInterpreter::run_script(std::istream& in, std::ostream& out, std::ostream& err) {
  OpsInterpreter ops(out);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const Outcome o = ops.execute(line, line_no);
    if (o == Outcome::kOk) continue;
    out.flush();
    err << ops.error() << "\n";
    return o == Outcome::kCheckFailed ? 1 : 2;
  }
  return 0;
}

}  // namespace kv
