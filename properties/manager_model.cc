#include "properties/manager_model.h"

#include <algorithm>
#include <sstream>

namespace kv::props {

std::string ids_text(const std::vector<BlockId>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

std::string tokens_text(const std::vector<TokenId>& tokens) {
  std::string s;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(tokens[i]);
  }
  return s;
}

std::string ModelConfig::ops_config_line() const {
  std::ostringstream os;
  os << "config blocks=" << num_blocks << " block_size=" << block_size << " hash=" << to_string(algo)
     << " seed=" << seed << " free_order=" << to_string(free_order) << " caching=" << (caching ? "on" : "off")
     << " eagle=" << (eagle ? "on" : "off");
  if (policy != EvictionPolicyKind::kLru) os << " policy=" << to_string(policy);
  if (max_model_len != (1 << 20)) os << " max_model_len=" << max_model_len;
  return os.str();
}

ManagerModel::ManagerModel(const ModelConfig& config)
    : config_(config),
      hasher_(std::make_shared<const ReferenceHasher>(config.algo, config.seed)),
      blocks_(static_cast<std::size_t>(config.num_blocks)) {
  // Blocks 1..N-1 start free in id order; block 0 is the null block, never queued.
  for (BlockId b = 1; b < config.num_blocks; ++b) queue_.push_back(b);
  if (config.policy != EvictionPolicyKind::kLru) policy_.emplace(config.policy, config.num_blocks);
}

void ManagerModel::sync_queue() {
  if (!policy_) return;
  std::vector<bool> hashed(blocks_.size());
  for (std::size_t b = 0; b < blocks_.size(); ++b) hashed[b] = blocks_[b].hash.has_value();
  queue_ = policy_->order(hashed);
}

void ManagerModel::begin_command() {
  events_.clear();
  printed_.clear();
}

const ModelRequest* ManagerModel::find(const std::string& id) const {
  for (const ModelRequest& r : requests_) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

ModelRequest* ManagerModel::find(const std::string& id) {
  for (ModelRequest& r : requests_) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

const ModelRequest* ManagerModel::pending_request() const {
  for (const ModelRequest& r : requests_) {
    if (r.pending) return &r;
  }
  return nullptr;
}

bool ManagerModel::any_block_in_use() const {
  for (std::size_t b = 1; b < blocks_.size(); ++b) {
    if (blocks_[b].ref_cnt != 0) return true;
  }
  return false;
}

std::vector<BlockId> ManagerModel::cached_under(const BlockHash& hash) const {
  for (const auto& [h, ids] : map_) {
    if (h == hash) return ids;
  }
  return {};
}

std::size_t ManagerModel::num_cached_blocks() const {
  std::size_t n = 0;
  for (const auto& entry : map_) n += entry.second.size();
  return n;
}

std::string ManagerModel::queue_line() const { return "queue " + ids_text(queue_); }

std::string ManagerModel::stats_line() const {
  return "stats lookups=" + std::to_string(stats_.lookups) + " queries=" + std::to_string(stats_.queries) +
         " hits=" + std::to_string(stats_.hits);
}

void ManagerModel::print_queries() {
  printed_.push_back(queue_line());
  printed_.push_back("num_free " + std::to_string(queue_.size()));
  printed_.push_back(stats_line());
}

void ManagerModel::add_request(const std::string& id, std::vector<TokenId> tokens, const std::string& salt,
                               const std::string& lora, std::vector<MultiModalItem> mm, BlockRetention retention) {
  ModelRequest r;
  r.id = id;
  r.retention = retention;
  r.tokens = std::move(tokens);
  r.salt = salt;
  r.lora = lora;
  r.mm = std::move(mm);
  requests_.push_back(std::move(r));
  append(id, {});
}

void ManagerModel::append(const std::string& id, const std::vector<TokenId>& tokens) {
  ModelRequest& r = *find(id);
  r.tokens.insert(r.tokens.end(), tokens.begin(), tokens.end());
  if (!config_.caching) return;
  // Hash every newly full block with the reference hasher (docs/semantics.md §2): the whole
  // chain is recomputed and the new tail appended, so earlier hashes are never rewritten.
  HashExtras extras;
  extras.lora_name = r.lora;
  extras.cache_salt = r.salt;
  extras.mm_items = r.mm;
  const std::vector<BlockHash> all = hasher_->hashes(r.tokens, config_.block_size, extras);
  r.hashes.insert(r.hashes.end(), all.begin() + static_cast<std::ptrdiff_t>(r.hashes.size()), all.end());
}

ModelHit ManagerModel::lookup(const std::string& id) {
  ModelRequest& r = *find(id);
  ModelHit hit;
  if (config_.caching) {
    // Only the first (num_tokens - 1) / B hashes: the last token is always recomputed.
    const std::int64_t n_tokens = static_cast<std::int64_t>(r.tokens.size());
    const std::int64_t cap = n_tokens >= 1 ? (n_tokens - 1) / config_.block_size : 0;
    for (std::int64_t i = 0; i < cap && i < static_cast<std::int64_t>(r.hashes.size()); ++i) {
      const std::vector<BlockId> under = cached_under(r.hashes[static_cast<std::size_t>(i)]);
      if (under.empty()) break;
      hit.blocks.push_back(under.front());  // the oldest one inserted
    }
    if (config_.eagle && !hit.blocks.empty()) hit.blocks.pop_back();
    hit.tokens = static_cast<std::int64_t>(hit.blocks.size()) * config_.block_size;
    ++stats_.lookups;
    stats_.queries += n_tokens;
    stats_.hits += hit.tokens;
  }
  r.pending = hit;
  printed_.push_back("hit " + id + " blocks=" + ids_text(hit.blocks) + " tokens=" + std::to_string(hit.tokens));
  return hit;
}

std::int64_t ManagerModel::blocks_for(std::int64_t tokens) const {
  return (tokens + config_.block_size - 1) / config_.block_size;
}

std::int64_t ManagerModel::blocks_needed(std::int64_t tokens, const ModelRequest& r, const ModelHit& hit) const {
  const std::int64_t required = blocks_for(tokens);
  if (r.held) return std::max<std::int64_t>(required - static_cast<std::int64_t>(r.table.size()), 0);
  std::int64_t n = std::max<std::int64_t>(required - static_cast<std::int64_t>(hit.blocks.size()), 0);
  for (BlockId b : hit.blocks) {
    if (blocks_[static_cast<std::size_t>(b)].ref_cnt == 0) ++n;  // must leave the free queue
  }
  return n;
}

void ManagerModel::remove_from_queue(BlockId b) { queue_.erase(std::find(queue_.begin(), queue_.end(), b)); }

void ManagerModel::uncache(BlockId b) {
  ModelBlock& blk = blocks_[static_cast<std::size_t>(b)];
  if (!blk.hash) return;
  for (auto it = map_.begin(); it != map_.end(); ++it) {
    if (!(it->first == *blk.hash)) continue;
    it->second.erase(std::find(it->second.begin(), it->second.end(), b));
    if (it->second.empty()) map_.erase(it);
    break;
  }
  ModelEvent e;
  e.kind = ModelEvent::kRemoved;
  e.hashes.push_back(*blk.hash);
  events_.push_back(std::move(e));
  blk.hash.reset();
  if (policy_) policy_->uncached(b);
}

void ManagerModel::pop_free_block_into(ModelRequest& r, std::vector<BlockId>& fresh) {
  sync_queue();
  const BlockId b = queue_.front();
  queue_.erase(queue_.begin());
  if (policy_) policy_->popped(b, blocks_[static_cast<std::size_t>(b)].hash.has_value());
  uncache(b);  // lazy eviction: the reused block loses its cached hash now
  blocks_[static_cast<std::size_t>(b)].ref_cnt = 1;
  r.table.push_back(b);
  fresh.push_back(b);
}

ModelAlloc ManagerModel::alloc(const std::string& id, std::int64_t n, std::int64_t lookahead, bool fullfit) {
  ModelRequest& r = *find(id);
  const ModelHit hit = r.pending.value_or(ModelHit{});
  r.pending.reset();
  const std::int64_t n_tokens = static_cast<std::int64_t>(r.tokens.size());
  ModelAlloc out;
  if (n < 0) {
    n = n_tokens - r.computed - hit.tokens;
    if (n <= 0) {
      out.kind = ModelAlloc::kSkip;
      printed_.push_back("alloc " + id + " skip");
      return out;
    }
  }
  const std::int64_t free = static_cast<std::int64_t>(queue_.size());
  const std::int64_t computed = std::min(r.computed + hit.tokens, config_.max_model_len);
  const bool gate_fails = fullfit && blocks_needed(std::min(n_tokens, config_.max_model_len), r, hit) > free;
  const std::int64_t slots = std::min(computed + n + lookahead, config_.max_model_len);
  if (gate_fails || blocks_needed(slots, r, hit) > free) {
    out.kind = ModelAlloc::kFail;
    printed_.push_back("alloc " + id + " fail");
    return out;
  }
  if (!r.held) {
    for (BlockId b : hit.blocks) {
      ModelBlock& blk = blocks_[static_cast<std::size_t>(b)];
      if (blk.ref_cnt == 0) remove_from_queue(b);  // keeps its hash
      if (policy_) policy_->hit(b, blk.ref_cnt == 0);
      ++blk.ref_cnt;
    }
    r.table = hit.blocks;
    r.num_cached = hit.blocks.size();
    r.held = true;
  }
  while (static_cast<std::int64_t>(r.table.size()) < blocks_for(slots)) pop_free_block_into(r, out.fresh);
  if (config_.caching) {
    const std::int64_t to_cache = std::min(computed + n, n_tokens);
    const std::size_t full = static_cast<std::size_t>(to_cache / config_.block_size);
    if (full > r.num_cached) {
      ModelEvent e;
      e.kind = ModelEvent::kStored;
      e.block_size = config_.block_size;
      e.lora = r.lora;
      if (r.num_cached > 0) e.parent = r.hashes[r.num_cached - 1];
      const auto bs = static_cast<std::size_t>(config_.block_size);
      e.tokens.assign(r.tokens.begin() + static_cast<std::ptrdiff_t>(r.num_cached * bs),
                      r.tokens.begin() + static_cast<std::ptrdiff_t>(full * bs));
      for (std::size_t i = r.num_cached; i < full; ++i) {
        const BlockId b = r.table[i];
        const BlockHash& h = r.hashes[i];
        blocks_[static_cast<std::size_t>(b)].hash = h;
        bool listed = false;
        for (auto& entry : map_) {
          if (entry.first == h) {
            entry.second.push_back(b);  // duplicates kept, in insertion order
            listed = true;
            break;
          }
        }
        if (!listed) map_.emplace_back(h, std::vector<BlockId>{b});
        e.hashes.push_back(h);
      }
      events_.push_back(std::move(e));
      if (policy_) {
        policy_->cached(r.num_cached > 0 ? r.table[r.num_cached - 1] : kNoBlock,
                        std::vector<BlockId>(r.table.begin() + static_cast<std::ptrdiff_t>(r.num_cached),
                                             r.table.begin() + static_cast<std::ptrdiff_t>(full)));
      }
      r.num_cached = full;
    }
  }
  sync_queue();
  r.computed += hit.tokens + n;
  printed_.push_back("alloc " + id + " new=" + ids_text(out.fresh));
  return out;
}

void ManagerModel::free(const std::string& id) {
  ModelRequest& r = *find(id);
  if (!r.held) return;  // freeing twice, or a request without blocks, does nothing
  std::vector<BlockId> reached_zero;
  for (auto it = r.table.rbegin(); it != r.table.rend(); ++it) {  // last block first
    if (--blocks_[static_cast<std::size_t>(*it)].ref_cnt == 0) reached_zero.push_back(*it);
  }
  if (policy_) {
    std::vector<bool> hashed(blocks_.size());
    for (std::size_t b = 0; b < blocks_.size(); ++b) hashed[b] = blocks_[b].hash.has_value();
    policy_->released(reached_zero, hashed, r.retention);
    sync_queue();
  } else if (config_.free_order == FreeOrder::kClassic || !config_.caching) {
    queue_.insert(queue_.end(), reached_zero.begin(), reached_zero.end());
  } else {
    std::vector<BlockId> unhashed, hashed;
    for (BlockId b : reached_zero) (blocks_[static_cast<std::size_t>(b)].hash ? hashed : unhashed).push_back(b);
    queue_.insert(queue_.begin(), unhashed.begin(), unhashed.end());
    queue_.insert(queue_.end(), hashed.begin(), hashed.end());
  }
  r.table.clear();
  r.num_cached = 0;
  r.held = false;
  r.retired = true;
}

bool ManagerModel::reset() {
  const bool ok = !any_block_in_use();
  if (ok) {
    map_.clear();
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const bool had = blocks_[b].hash.has_value();
      blocks_[b].hash.reset();
      if (policy_ && had) policy_->uncached(static_cast<BlockId>(b));
    }
    sync_queue();
    ModelEvent e;
    e.kind = ModelEvent::kCleared;
    events_.push_back(std::move(e));
  }
  printed_.push_back(std::string("reset ") + (ok ? "ok" : "fail"));
  return ok;
}

}  // namespace kv::props
