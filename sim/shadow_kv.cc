#include "sim/shadow_kv.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "model/attention_window.h"
#include "model/util/check.h"

namespace kv::sim {

namespace {

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// What group g stores for a position whose fingerprint is fp (group 0: fp itself).
std::uint64_t salted(std::uint64_t fp, int g) {
  if (g == 0) [[likely]]
    return fp;
  const std::uint64_t h = mix64(fp + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(g));
  return h == 0 ? 1 : h;
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

const char* to_string(VerifyMode mode) {
  switch (mode) {
    case VerifyMode::kOff:
      return "off";
    case VerifyMode::kFast:
      return "fast";
    case VerifyMode::kFull:
      return "full";
  }
  return "?";
}

std::optional<VerifyMode> parse_verify_mode(std::string_view text) {
  for (VerifyMode m : {VerifyMode::kOff, VerifyMode::kFast, VerifyMode::kFull}) {
    if (text == to_string(m)) return m;
  }
  return std::nullopt;
}

std::string Violation::to_string() const {
  std::string s = "step " + std::to_string(step) + ": request " + request;
  if (group >= 0) s += " (group " + std::to_string(group) + ")";
  if (position >= 0) {
    s += ": position " + std::to_string(position) + " (block " + std::to_string(block) + ", slot " +
         std::to_string(slot) + ")";
  }
  switch (kind) {
    case Kind::kMismatch:
      s += std::string(": ") + when + " check: expected fingerprint " + hex(expected) + ", found " + hex(found);
      if (more > 0) s += " (and " + std::to_string(more) + " more positions)";
      break;
    case Kind::kOverwrite:
      s += ": cache write into a slot that request " + other_request + " still relies on (its position " +
           std::to_string(other_position) + "): slot held " + hex(expected) + ", write " + hex(found);
      break;
    case Kind::kBadPlan:
      s += ": bad plan: " + detail;
      break;
  }
  return s;
}

std::uint64_t ShadowKv::chain_seed(std::string_view lora_name, std::string_view cache_salt) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the name (and the salt), then mixed
  for (char c : lora_name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  if (!cache_salt.empty()) {
    h ^= 0x100;  // not a byte: "lora" + "" and "lo" + "ra" differ
    h *= 0x100000001b3ULL;
    for (char c : cache_salt) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
  }
  return mix64(h) | 1;
}

std::uint64_t ShadowKv::fingerprint(std::uint64_t prev, TokenId token, std::int64_t position) {
  std::uint64_t h = mix64(prev ^ (static_cast<std::uint64_t>(token) * 0x9e3779b97f4a7c15ULL) ^
                          (static_cast<std::uint64_t>(position) * 0xd6e8feb86659fd93ULL + 0x632be59bd9b4e019ULL));
  return h == 0 ? 1 : h;  // 0 means "never written"
}

ShadowKv::ShadowKv(VerifyMode mode) : mode_(mode) {}

std::uint64_t ShadowKv::slot(std::int64_t slot) const {
  return slot >= 0 && static_cast<std::size_t>(slot) < slots_.size() ? slots_[slot] : 0;
}

void ShadowKv::store_raw(std::int64_t slot, std::uint64_t fingerprint) {
  KV_CHECK(slot >= 0, "negative slot " << slot);
  if (block_size_ > 0) ensure_block(static_cast<BlockId>(slot / block_size_));
  if (static_cast<std::size_t>(slot) >= slots_.size()) slots_.resize(slot + 1, 0);
  slots_[slot] = fingerprint;
}

std::span<const BlockId> ShadowKv::table(const RequestId& id) const {
  std::int32_t h = find(id);
  if (h < 0) return {};
  return live_[h].table.group(0);
}

std::int64_t ShadowKv::num_computed(const RequestId& id) const {
  std::int32_t h = find(id);
  return h < 0 ? -1 : live_[h].num_computed;
}

void ShadowKv::reject_drafts(const RequestId& id, std::int64_t count) {
  if (mode_ == VerifyMode::kOff || count <= 0) return;
  const std::int32_t h = find(id);
  if (h < 0) return;
  Live& l = live_[h];
  const std::int64_t to = std::max<std::int64_t>(0, l.num_computed - count);
  for (std::int64_t p = to; p < l.num_computed; ++p) {
    for (int g = 0; g < num_groups(); ++g) {
      if (is_cross(g)) continue;  // invariant 9: drafts never write the encoder's outputs
      const std::int64_t s = l.table.slot(p, block_size_, g);
      if (s < 0 || static_cast<std::size_t>(s) >= slots_.size()) continue;  // null block, or never written
      slots_[s] = fingerprint(slots_[s], kPaddingDraft, -1 - p);            // a rejected draft's KV
    }
  }
  l.expected.resize(static_cast<std::size_t>(to));
  l.num_computed = to;
}

std::int32_t ShadowKv::find(const RequestId& id) const {
  auto it = handle_of_.find(id);
  return it == handle_of_.end() ? -1 : it->second;
}

void ShadowKv::ensure_block(BlockId b) {
  std::size_t need = static_cast<std::size_t>(b) + 1;
  if (need <= holders_.size()) return;
  std::size_t grown = std::max(need, holders_.size() * 2);
  holders_.resize(grown);
  if (!state_block_sizes_.empty()) states_.resize(grown, 0);
  slots_.resize(std::max(slots_.size(), grown * static_cast<std::size_t>(block_size_)), 0);
}

Violation ShadowKv::bad_plan(const RequestId& id, std::string detail) const {
  Violation v;
  v.kind = Violation::Kind::kBadPlan;
  v.step = step_;
  v.request = id;
  v.detail = std::move(detail);
  return v;
}

bool ShadowKv::add_block(std::int32_t h, int g, BlockId b, const RequestId& id, std::vector<Violation>* out) {
  Live& l = live_[h];
  auto& registered = l.registered[static_cast<std::size_t>(g)];
  if (b == kNullBlock && !windows_.empty() && (windows_[static_cast<std::size_t>(g)] != 0 || is_state(g))) {
    registered.push_back(b);  // a windowed group's dropped position: no holder, never read
    l.table.append(std::span<const BlockId>(&b, 1), g);
    return true;
  }
  if (b > 0 && is_state(g)) {  // invariant 7: a state block, no per-token holders
    ensure_block(b);
    registered.push_back(b);
    l.table.append(std::span<const BlockId>(&b, 1), g);
    return true;
  }
  if (b <= 0) {
    Violation v = bad_plan(id, "block id " + std::to_string(b) + (b == 0 ? " is the null block" : " is negative"));
    v.group = named(g);
    out->push_back(std::move(v));
    return false;
  }
  ensure_block(b);
  holders_[b].push_back({h, static_cast<std::int32_t>(registered.size()), g});
  registered.push_back(b);
  l.table.append(std::span<const BlockId>(&b, 1), g);
  return true;
}

// The plan's blocks of r into its tables: block_ids, or with groups one list per group.
bool ShadowKv::add_blocks(std::int32_t h, const ScheduledRequest& r, std::vector<Violation>* out) {
  if (windows_.empty()) {
    for (BlockId b : r.block_ids) {
      if (!add_block(h, 0, b, r.id, out)) return false;
    }
    return true;
  }
  if (r.group_block_ids.size() != windows_.size()) {
    out->push_back(bad_plan(r.id, "carries " + std::to_string(r.group_block_ids.size()) + " block lists for " +
                                      std::to_string(windows_.size()) + " groups"));
    return false;
  }
  for (int g = 0; g < num_groups(); ++g) {
    for (BlockId b : r.group_block_ids[static_cast<std::size_t>(g)]) {
      if (!add_block(h, g, b, r.id, out)) return false;
    }
  }
  return true;
}

std::int64_t ShadowKv::reach_begin(int g, std::int64_t query) const {
  if (windows_.empty()) return 0;
  return attention_begin(windows_[static_cast<std::size_t>(g)], query);  // model/attention_window.h
}

std::int32_t ShadowKv::admit(const ScheduledRequest& r, std::vector<Violation>* out) {
  if (static_cast<std::int64_t>(r.context_token_ids.size()) != r.num_computed_tokens) {
    out->push_back(bad_plan(r.id, "new request carries " + std::to_string(r.context_token_ids.size()) +
                                      " context tokens for num_computed_tokens " +
                                      std::to_string(r.num_computed_tokens)));
    return -1;
  }
  std::int32_t h;
  if (!free_handles_.empty()) {
    h = free_handles_.back();
    free_handles_.pop_back();
  } else {
    h = static_cast<std::int32_t>(live_.size());
    live_.emplace_back();
  }
  Live& l = live_[h];
  l.id = r.id;
  l.in_use = true;
  l.seed = chain_seed(r.lora_name, r.cache_salt);
  l.num_computed = 0;
  l.admitted = admissions_++;
  if (l.table.num_groups() != num_groups()) l.table = BlockTable(num_groups());
  l.registered.resize(static_cast<std::size_t>(num_groups()));
  handle_of_.emplace(r.id, h);
  if (!add_blocks(h, r, out)) {
    release(h, nullptr);
    return -1;
  }
  for (int g = 0; g < num_groups(); ++g) {
    const std::int64_t covered = is_cross(g) ? r.num_encoder_tokens : r.num_computed_tokens;
    const std::int64_t needed = (covered + block_tokens(g) - 1) / block_tokens(g);
    if (needed <= static_cast<std::int64_t>(l.table.size(g))) continue;
    Violation v =
        bad_plan(r.id, std::to_string(covered) + (is_cross(g) ? " encoder" : " computed") + " tokens need " +
                           std::to_string(needed) + " blocks, the table has " + std::to_string(l.table.size(g)));
    v.group = named(g);
    out->push_back(std::move(v));
    release(h, nullptr);
    return -1;
  }
  l.expected.reserve(static_cast<std::size_t>(std::max(r.num_prompt_tokens, r.num_computed_tokens) +
                                              static_cast<std::int64_t>(r.token_ids.size())));
  std::uint64_t prev = l.seed;
  for (std::size_t p = 0; p < r.context_token_ids.size(); ++p) {
    prev = fingerprint(prev, r.context_token_ids[p], static_cast<std::int64_t>(p));
    l.expected.push_back(prev);
  }
  // Hits are verified after the step's cache writes (a hit may be on a block another request
  // of the same step computes); until then nobody relies on them.
  l.num_computed = r.num_computed_tokens;
  l.rely_begin = r.num_computed_tokens;
  return h;
}

void ShadowKv::release(std::int32_t h, std::vector<Violation>* out) {
  Live& l = live_[h];
  if (out != nullptr) verify_groups(h, l.num_computed, l.num_computed, "release", out);
  for (std::size_t g = 0; g < l.registered.size(); ++g) {
    const std::vector<BlockId>& registered = l.registered[g];
    for (std::size_t i = 0; i < registered.size(); ++i) {
      if (registered[i] == kNullBlock) continue;
      std::vector<Holder>& hs = holders_[registered[i]];
      for (std::size_t k = 0; k < hs.size(); ++k) {
        if (hs[k].request == h && hs[k].index == static_cast<std::int32_t>(i) &&
            hs[k].group == static_cast<std::int32_t>(g)) {
          hs[k] = hs.back();
          hs.pop_back();
          break;
        }
      }
    }
  }
  handle_of_.erase(l.id);
  l.in_use = false;
  l.table.clear();
  for (auto& registered : l.registered) registered.clear();
  l.expected.clear();
  l.num_computed = 0;
  l.rely_begin = 0;
  l.state_end = -1;
  l.num_encoder = 0;
  l.encoder_expected.clear();
  free_handles_.push_back(h);
}

void ShadowKv::verify_groups(std::int32_t h, std::int64_t first_query, std::int64_t to, const char* when,
                             std::vector<Violation>* out) {
  for (int g = 0; g < num_groups(); ++g) {
    if (is_cross(g)) {  // invariant 9: every query reads all the encoder outputs
      verify(h, g, 0, live_[h].num_encoder, when, out);
      continue;
    }
    if (is_state(g)) {
      verify_state(h, g, std::string_view(when) == "admission", when, out);
      continue;
    }
    verify(h, g, reach_begin(g, first_query), to, when, out);
  }
}

// Invariant 7: the block holding position num_computed - 1 holds that prefix's state. `always`:
// check it even if the request did not write it (an admitted hit).
void ShadowKv::verify_state(std::int32_t h, int g, bool always, const char* when, std::vector<Violation>* out) {
  const Live& l = live_[h];
  const std::int64_t n = l.num_computed;
  if (n <= 0 || (!always && l.state_end != n)) return;
  const std::span<const BlockId> table = l.table.group(g);
  const auto i = static_cast<std::size_t>((n - 1) / block_tokens(g));
  const BlockId block = i < table.size() ? table[i] : kNullBlock;
  const std::uint64_t want = salted(l.expected[static_cast<std::size_t>(n - 1)], g);
  const std::uint64_t found = block > 0 && static_cast<std::size_t>(block) < states_.size() ? states_[block] : 0;
  ++stats_.slots_verified;
  if (found == want) return;
  Violation v;
  v.kind = Violation::Kind::kMismatch;
  v.step = step_;
  v.request = l.id;
  v.position = n - 1;
  v.block = block;
  v.expected = want;
  v.found = found;
  v.when = block == kNullBlock ? "null-block read" : when;
  v.group = named(g);
  out->push_back(std::move(v));
}

// Invariant 7: the state after the request's last computed position, into the block holding it.
void ShadowKv::write_state(std::int32_t h, int g, std::vector<Violation>* out) {
  Live& l = live_[h];
  const std::int64_t n = l.num_computed;
  if (n <= 0) return;
  const std::span<const BlockId> table = l.table.group(g);
  const auto i = static_cast<std::size_t>((n - 1) / block_tokens(g));
  if (i >= table.size() || table[i] == kNullBlock) {
    Violation v = bad_plan(l.id, "no state block for the state after position " + std::to_string(n - 1));
    v.group = named(g);
    out->push_back(std::move(v));
    return;
  }
  states_[static_cast<std::size_t>(table[i])] = salted(l.expected[static_cast<std::size_t>(n - 1)], g);
  ++stats_.slots_written;
  l.state_end = n;
}

void ShadowKv::verify(std::int32_t h, int g, std::int64_t from, std::int64_t to, const char* when,
                      std::vector<Violation>* out) {
  const Live& l = live_[h];
  const std::int64_t bs = block_size_;
  const std::span<const BlockId> table = l.table.group(g);
  const std::vector<std::uint64_t>& expected = is_cross(g) ? l.encoder_expected : l.expected;
  Violation* first = nullptr;
  const auto report = [&](std::int64_t p, BlockId block, std::int64_t s, std::uint64_t want, std::uint64_t found) {
    if (first != nullptr) {
      ++first->more;
      return;
    }
    Violation v;
    v.kind = Violation::Kind::kMismatch;
    v.step = step_;
    v.request = l.id;
    v.position = p;
    v.block = block;
    v.slot = s;
    v.expected = want;
    v.found = found;
    v.when = block == kNullBlock ? "null-block read" : when;
    v.group = named(g);
    out->push_back(std::move(v));
    first = &out->back();
  };
  std::int64_t p = from;
  while (p < to) {
    const auto i = static_cast<std::size_t>(block_index(p, bs));
    const BlockId block = table[i];
    const std::int64_t block_end = std::min(to, static_cast<std::int64_t>(i + 1) * bs);
    if (block == kNullBlock) [[unlikely]] {  // a windowed group reading a dropped position
      for (; p < block_end; ++p) report(p, block, -1, salted(expected[p], g), 0);
    } else if (g == 0) [[likely]] {
      for (; p < block_end; ++p) {
        const std::int64_t s = slot_in_block(block, bs, p);
        if (slots_[s] == expected[p]) [[likely]]
          continue;
        report(p, block, s, expected[p], slots_[s]);
      }
    } else {
      for (; p < block_end; ++p) {
        const std::int64_t s = slot_in_block(block, bs, p);
        const std::uint64_t want = salted(expected[p], g);
        if (slots_[s] != want) report(p, block, s, want, slots_[s]);
      }
    }
  }
  stats_.slots_verified += std::max<std::int64_t>(0, to - from);
}

// One position's write through every group's table (group g stores salted(fp, g)).
void ShadowKv::write_position(std::int32_t h, std::int64_t position, std::uint64_t fp, std::vector<Violation>* out) {
  if (windows_.empty()) [[likely]] {
    write(h, 0, position, fp, out);
    return;
  }
  for (int g = 0; g < num_groups(); ++g) {
    if (!is_state(g) && !is_cross(g)) write(h, g, position, salted(fp, g), out);
  }
}

void ShadowKv::write(std::int32_t h, int g, std::int64_t position, std::uint64_t fp, std::vector<Violation>* out) {
  Live& l = live_[h];
  const std::int64_t bs = block_size_;
  const auto index = static_cast<std::int32_t>(block_index(position, bs));
  std::int64_t s = l.table.slot(position, block_size_, g);
  if (s == kPaddingSlot) [[unlikely]] {  // only a windowed group's table holds null blocks
    Violation v = bad_plan(l.id, "position " + std::to_string(position) + " is written through the null block");
    v.group = named(g);
    out->push_back(std::move(v));
    return;
  }
  if (!write_faults_.empty()) [[unlikely]] {
    for (std::size_t k = 0; k < write_faults_.size(); ++k) {
      const CacheWriteFault& f = write_faults_[k];
      if (f.request != l.id || f.position != position) continue;
      std::int64_t redirect = f.redirect_slot;
      write_faults_.erase(write_faults_.begin() + static_cast<std::ptrdiff_t>(k));
      ++stats_.faults_fired;
      if (redirect < 0) return;  // dropped
      ensure_block(static_cast<BlockId>(redirect / bs));
      s = redirect;
      break;
    }
  }
  const BlockId block = static_cast<BlockId>(s / bs);
  const std::int64_t offset = s % bs;
  for (const Holder& holder : holders_[block]) {
    if (holder.request == h && holder.index == index && holder.group == g) continue;
    const Live& other = live_[holder.request];
    const std::int64_t other_position = std::int64_t{holder.index} * bs + offset;
    if (is_cross(holder.group)) {  // invariant 9: it relies on its encoder positions
      if (other_position >= other.num_encoder) continue;
    } else {
      if (other_position >= other.num_computed || other_position < other.rely_begin) continue;
      if (other_position < reach_begin(holder.group, other.num_computed)) continue;  // out of its window
    }
    Violation v;
    v.kind = Violation::Kind::kOverwrite;
    v.step = step_;
    v.request = l.id;
    v.position = position;
    v.block = block;
    v.slot = s;
    v.expected = slots_[s];
    v.found = fp;
    v.other_request = other.id;
    v.other_position = other_position;
    v.group = named(g);
    out->push_back(std::move(v));
    break;
  }
  slots_[s] = fp;
  ++stats_.slots_written;
}

// Invariant 9: the encoder outputs of a new request into each cross-attention group, before
// the decoder's first token reads them.
void ShadowKv::write_encoder(std::int32_t h, const ScheduledRequest& r, std::vector<Violation>* out) {
  Live& l = live_[h];
  if (r.num_encoder_tokens <= 0) {
    out->push_back(bad_plan(r.id,
                            "admitted without its encoder input: its cross-attention reads would find "
                            "unwritten slots"));
    return;
  }
  std::uint64_t prev = chain_seed("encoder", r.id);
  l.encoder_expected.clear();
  for (std::int64_t e = 0; e < r.num_encoder_tokens; ++e) {
    prev = fingerprint(prev, 0, e);
    l.encoder_expected.push_back(prev);
  }
  for (int g = 0; g < num_groups(); ++g) {
    if (!is_cross(g)) continue;
    for (std::int64_t e = 0; e < r.num_encoder_tokens; ++e) {
      write(h, g, e, salted(l.encoder_expected[static_cast<std::size_t>(e)], g), out);
    }
  }
  l.num_encoder = r.num_encoder_tokens;
}

// Tables first (as the runner uploads block tables before any kernel runs).
void ShadowKv::set_up_tables(const StepPlan& plan, std::vector<Violation>* out) {
  scratch_handles_.assign(plan.requests.size(), -1);
  for (std::size_t k = 0; k < plan.requests.size(); ++k) {
    const ScheduledRequest& r = plan.requests[k];
    std::int32_t h = find(r.id);
    if (r.is_new) {
      if (h >= 0) release(h, out);  // resumed without a preemption notice: start over
      scratch_handles_[k] = admit(r, out);
      continue;
    }
    if (h < 0) {
      out->push_back(bad_plan(r.id, "running request the device never saw as new"));
      continue;
    }
    if (r.num_computed_tokens != live_[h].num_computed) {
      out->push_back(bad_plan(r.id, "num_computed_tokens " + std::to_string(r.num_computed_tokens) +
                                        ", the device has " + std::to_string(live_[h].num_computed)));
      continue;
    }
    if (add_blocks(h, r, out)) scratch_handles_[k] = h;
  }
  for (const TableSwapFault& f : swap_faults_) {
    std::int32_t h = find(f.request);
    if (h < 0) continue;
    BlockTable& t = live_[h].table;
    if (f.i >= t.size() || f.j >= t.size()) continue;
    t.swap_entries(f.i, f.j);
    ++stats_.faults_fired;
  }
  swap_faults_.clear();
}

// Cache writes, in batch order, through the slot mapping.
void ShadowKv::write_step(const StepPlan& plan, std::vector<Violation>* out) {
  for (std::size_t k = 0; k < plan.requests.size(); ++k) {
    std::int32_t h = scratch_handles_[k];
    if (h < 0) continue;
    const ScheduledRequest& r = plan.requests[k];
    Live& l = live_[h];
    const std::int64_t end = l.num_computed + static_cast<std::int64_t>(r.token_ids.size());
    bool fits = true;
    for (int g = 0; g < num_groups() && fits; ++g) {
      if (is_cross(g) || end <= l.table.capacity_tokens(static_cast<int>(block_tokens(g)), g)) continue;
      Violation v = bad_plan(r.id, "positions up to " + std::to_string(end - 1) + " do not fit its " +
                                       std::to_string(l.table.size(g)) + " blocks");
      v.group = named(g);
      out->push_back(std::move(v));
      fits = false;
    }
    if (!fits) {
      scratch_handles_[k] = -1;
      continue;
    }
    // Invariant 7: a running request reads the state it wrote last step before computing on.
    if (!state_block_sizes_.empty() && !r.is_new) {
      for (int g = 0; g < num_groups(); ++g) {
        if (is_state(g)) verify_state(h, g, false, "read", out);
      }
    }
    if (r.is_new && !cross_.empty()) write_encoder(h, r, out);
    std::uint64_t prev = l.expected.empty() ? l.seed : l.expected.back();
    for (TokenId token : r.token_ids) {
      const std::int64_t p = l.num_computed;
      prev = fingerprint(prev, token, p);
      l.expected.push_back(prev);
      write_position(h, p, prev, out);
      l.num_computed = p + 1;
    }
    if (!state_block_sizes_.empty() && !r.token_ids.empty()) {
      for (int g = 0; g < num_groups(); ++g) {
        if (is_state(g)) write_state(h, g, out);
      }
    }
  }
  write_faults_.clear();
}

void ShadowKv::apply(const StepPlan& plan, std::vector<Violation>* out) {
  if (mode_ == VerifyMode::kOff) return;
  step_ = plan.step;
  if (block_size_ == 0) {
    KV_CHECK(plan.block_size > 0, "plan " << plan.step << " has block size " << plan.block_size);
    block_size_ = plan.block_size;
    windows_ = plan.group_windows;
    state_block_sizes_ = plan.group_state_block_sizes;
    cross_ = plan.group_cross_attention;
    if (!state_block_sizes_.empty()) states_.resize(holders_.size(), 0);
  }
  KV_CHECK(plan.block_size == block_size_, "block size changed from " << block_size_ << " to " << plan.block_size);
  KV_CHECK(plan.group_windows == windows_, "plan " << plan.step << " has " << plan.group_windows.size()
                                                   << " KV-cache groups, the run " << windows_.size());
  for (const RequestId& id : plan.finished) {
    if (std::int32_t h = find(id); h >= 0) release(h, out);
  }
  for (const RequestId& id : plan.preempted) {
    if (std::int32_t h = find(id); h >= 0) release(h, out);
  }
  tier_store(plan.tier_stores_before);
  set_up_tables(plan, out);
  tier_load(plan.tier_loads, out);
  write_step(plan, out);
  tier_store(plan.tier_stores_after);
  for (const BlockHash& h : plan.tier_dropped) tier_.erase(h);

  // Prefix-cache hits of the requests admitted in this step, now that every write is done.
  for (std::size_t k = 0; k < plan.requests.size(); ++k) {
    std::int32_t h = scratch_handles_[k];
    if (h < 0 || !plan.requests[k].is_new) continue;
    const std::int64_t hit = plan.requests[k].num_computed_tokens;
    verify_groups(h, hit, hit, "admission", out);
    live_[h].rely_begin = 0;
  }

  // Attention reads: every position of every scheduled request, after the step's writes.
  if (mode_ == VerifyMode::kFull) {
    for (std::size_t k = 0; k < plan.requests.size(); ++k) {
      std::int32_t h = scratch_handles_[k];
      if (h >= 0) verify_groups(h, plan.requests[k].num_computed_tokens, live_[h].num_computed, "read", out);
    }
  }
}

// Invariant 6: each stored block's fingerprints, kept under its hash.
void ShadowKv::tier_store(const std::vector<TierTransfer>& stores) {
  const auto bs = static_cast<std::size_t>(block_size_);
  for (const TierTransfer& t : stores) {
    if (t.block <= 0) continue;  // a bad plan; the load that relies on it reports it
    ensure_block(t.block);
    const auto first = slots_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(t.block) * bs);
    tier_[t.hash].assign(first, first + static_cast<std::ptrdiff_t>(bs));
  }
}

std::vector<std::uint64_t> ShadowKv::block_fingerprints(BlockId block) const {
  const auto bs = static_cast<std::size_t>(block_size_);
  const std::size_t first = static_cast<std::size_t>(block) * bs;
  std::vector<std::uint64_t> out(bs, 0);
  for (std::size_t j = 0; j < bs && first + j < slots_.size(); ++j) out[j] = slots_[first + j];
  return out;
}

void ShadowKv::keep_tier_copy(const BlockHash& hash, std::vector<std::uint64_t> fingerprints) {
  if (mode_ == VerifyMode::kOff) return;
  tier_[hash] = std::move(fingerprints);
}

void ShadowKv::tier_load(const std::vector<TierTransfer>& loads, std::vector<Violation>* out) {
  for (const TierTransfer& t : loads) tier_load_one(t, out);
}

// Writes the kept fingerprints into the block and compares them with what the request
// expects at those positions (its context, known since admission).
void ShadowKv::tier_load_one(const TierTransfer& t, std::vector<Violation>* out) {
  const std::int32_t h = find(t.request);
  auto kept = tier_.find(t.hash);
  if (h < 0 || kept == tier_.end() || t.index < 0 || t.block <= 0) {
    out->push_back(bad_plan(t.request, "tier load of block " + std::to_string(t.block) + " (hash " +
                                           t.hash.hex().substr(0, 16) + ") " +
                                           (kept == tier_.end() ? "that no tier store kept" : "for no live table")));
    return;
  }
  Live& l = live_[h];
  const std::int64_t bs = block_size_;
  const std::span<const BlockId> table = l.table.group(0);
  if (static_cast<std::size_t>(t.index) >= table.size() || table[static_cast<std::size_t>(t.index)] != t.block ||
      (t.index + 1) * bs > static_cast<std::int64_t>(l.expected.size())) {
    out->push_back(bad_plan(t.request, "tier load into block " + std::to_string(t.block) + " at table index " +
                                           std::to_string(t.index) + ", which the request's context does not cover"));
    return;
  }
  ensure_block(t.block);
  Violation* first = nullptr;
  for (std::int64_t j = 0; j < bs; ++j) {
    const std::int64_t s = slot_in_block(t.block, bs, t.index * bs + j);
    const std::uint64_t want = l.expected[static_cast<std::size_t>(t.index * bs + j)];
    slots_[static_cast<std::size_t>(s)] = kept->second[static_cast<std::size_t>(j)];
    ++stats_.slots_written;
    if (slots_[static_cast<std::size_t>(s)] == want) continue;
    if (first != nullptr) {
      ++first->more;
      continue;
    }
    Violation v;
    v.step = step_;
    v.request = l.id;
    v.position = t.index * bs + j;
    v.block = t.block;
    v.slot = s;
    v.expected = want;
    v.found = slots_[static_cast<std::size_t>(s)];
    v.when = "tier load";
    out->push_back(std::move(v));
    first = &out->back();
  }
}

void ShadowKv::verify_live(std::int64_t step, std::vector<Violation>* out) {
  if (mode_ == VerifyMode::kOff) return;
  step_ = step;
  std::vector<std::int32_t> order;
  for (std::int32_t h = 0; h < static_cast<std::int32_t>(live_.size()); ++h) {
    if (live_[h].in_use) order.push_back(h);
  }
  std::sort(order.begin(), order.end(),
            [&](std::int32_t a, std::int32_t b) { return live_[a].admitted < live_[b].admitted; });
  for (std::int32_t h : order) verify_groups(h, live_[h].num_computed, live_[h].num_computed, "release", out);
}

}  // namespace kv::sim
