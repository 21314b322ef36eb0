#include "model/policies/keyed_policy.h"

#include "model/util/check.h"

namespace kv {

KeyedPolicy::KeyedPolicy(std::span<Block> blocks)
    : blocks_(blocks), unhashed_(blocks), key_(blocks.size()), state_(blocks.size(), State::kUnhashed) {}

void KeyedPolicy::insert_key(const Key& k) {
  keyed_.insert(k);
  key_[static_cast<std::size_t>(k.id)] = k;
  state_[static_cast<std::size_t>(k.id)] = State::kKeyed;
  on_key_added(k);
}

void KeyedPolicy::erase_key(BlockId id) {
  const Key k = key_[static_cast<std::size_t>(id)];
  keyed_.erase(k);
  state_[static_cast<std::size_t>(id)] = State::kOut;
  on_key_erased(k);
}

void KeyedPolicy::on_freed(std::span<Block* const> blocks, const BlockRetention& retention) {
  before_release();
  for (Block* b : blocks) {
    KV_CHECK(state_[index(b)] == State::kOut, "block " << b->id << " released twice");
    if (b->hash.empty()) {
      unhashed_.append(b);
      state_[index(b)] = State::kUnhashed;
    } else {
      insert_key(Key{rank_on_release(*b, retention), ++clock_, b->id});
    }
  }
  after_release();
}

void KeyedPolicy::remove(Block* b) {
  const State s = state_[index(b)];
  KV_CHECK(s != State::kOut, "removing block " << b->id << ", which is not free");
  if (s == State::kUnhashed) {
    unhashed_.remove(b);
    state_[index(b)] = State::kOut;
    on_leave(*b, nullptr, false);
    return;
  }
  const Key k = key_[index(b)];
  erase_key(b->id);
  on_leave(*b, &k, false);
}

Block* KeyedPolicy::pop_one() {
  if (!unhashed_.empty()) {
    Block* b = unhashed_.popleft();
    state_[index(b)] = State::kOut;
    on_leave(*b, nullptr, true);
    return b;
  }
  KV_CHECK(!keyed_.empty(), "pop from an empty policy");
  const Key k = *keyed_.begin();
  erase_key(k.id);
  Block& b = block(k.id);
  on_leave(b, &k, true);
  return &b;
}

void KeyedPolicy::pop_n(std::size_t n, std::vector<Block*>& out) {
  KV_CHECK(n <= size(), "popping " << n << " of " << size() << " free blocks");
  for (std::size_t i = 0; i < n; ++i) out.push_back(pop_one());
}

void KeyedPolicy::on_uncached(Block* b) {
  if (state_[index(b)] == State::kKeyed) {
    erase_key(b->id);
    unhashed_.append(b);
    state_[index(b)] = State::kUnhashed;
  }
  after_uncached(*b);
}

void KeyedPolicy::rekey(BlockId id, std::int64_t rank, bool new_stamp) {
  if (!is_keyed(id)) return;
  Key k = key_[static_cast<std::size_t>(id)];
  erase_key(id);
  k.rank = rank;
  if (new_stamp) k.stamp = ++clock_;
  insert_key(k);
}

std::vector<BlockId> KeyedPolicy::order() const {
  std::vector<BlockId> out = unhashed_.ids();
  for (const Key& k : keyed_) out.push_back(k.id);
  return out;
}

bool KeyedPolicy::check(std::string* why) const {
  if (!unhashed_.check(why)) return false;
  std::size_t keyed = 0;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    const State s = state_[i];
    const auto name = [&] { return "block " + std::to_string(b.id); };
    if ((s == State::kUnhashed) != unhashed_.contains(&b)) {
      *why = name() + " is " + (s == State::kUnhashed ? "not " : "") + "in the unhashed queue against its state";
      return false;
    }
    if (s == State::kUnhashed && !b.hash.empty())
      return (*why = name() + " has a hash but is queued as unhashed"), false;
    if (s != State::kKeyed) continue;
    ++keyed;
    if (b.hash.empty()) return (*why = name() + " is keyed but has no hash"), false;
    if (key_[i].id != b.id || keyed_.count(key_[i]) != 1)
      return (*why = name() + "'s key is not in the key set"), false;
    if (key_[i].stamp > clock_) return (*why = name() + " has a stamp from the future"), false;
  }
  if (keyed != keyed_.size()) {
    *why =
        "the key set holds " + std::to_string(keyed_.size()) + " keys for " + std::to_string(keyed) + " keyed blocks";
    return false;
  }
  return check_policy(why);
}

}  // namespace kv
