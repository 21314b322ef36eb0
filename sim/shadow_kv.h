// ShadowKv: a shadow of the paged KV cache. Every slot (model/slot.h)
// holds a 64-bit fingerprint of (token, position, whole prefix, LoRA, cache salt) -- a chained
// token-level hash, so requests with the same prefix write the same fingerprints and prefix-cache
// hits can be checked, while a hit across adapters or tenants (salts) is a mismatch. Cache writes go through the
// request's block table exactly as the cache-write kernel's slot mapping (model/block_table.h). Invariants (what makes
// a violation-free run correct):
//   1. A live request relies on the slots of its positions [0, num_computed): it wrote them,
//      or verified them when it was admitted with prefix-cache hits (hits are verified after
//      the cache writes of the admitting step: vLLM caches a block when it is allocated, so a
//      request may hit a block that another request of the same step is computing).
//   2. holders_[b] lists (request, table index) for every live request whose registered table
//      holds block b; a write into a slot some holder relies on is reported at the write.
//   3. fast: hits are verified at admission, every write is checked against the holders, and
//      a request's whole context is verified through its table when it leaves (finished,
//      preempted) -- O(tokens written + tokens hit + blocks). full: the same plus every
//      attention read of every step (O(context) per request per step).
//   4. Violations are reported, never fatal; state stays consistent after one.
//   5. Hybrid plans (StepPlan::group_windows set): one table per KV-cache group. Every write
//      goes through every group's table (group g stores the fingerprint salted with g, so a
//      block one group reads that another wrote mismatches). A group with a window (sliding
//      w, chunked c) relies on, and reads, only the positions its next query attends
//      (reach_begin); a read there through the null block is a violation. Violations of a
//      hybrid run name the group. One group: exactly the behaviour above.
//   7. Speculative decoding: reject_drafts(id, n) rolls a request back by n positions, as the
//      scheduler does for rejected drafts; their slots are poisoned (the KV a rejected draft
//      wrote is not the sampled token's), so a later read of one before it is written again
//      mismatches ("read" or "release"), and the next plan must start at the rolled-back count.
//   8. Mamba groups (StepPlan::group_state_block_sizes > 0): the group's table holds one
//      recurrent state per block, not per-token slots. After a request's tokens of a step are
//      written, the block holding its last position (index (n - 1) / group block) stores the
//      state of that prefix (the fingerprint of position n - 1, salted with the group). A
//      request reads back the state it wrote in its previous step (checked before its writes,
//      unless rolled-back drafts moved num_computed off it), an admitted prefix-cache hit reads
//      the state of exactly its hit prefix, and a leaving request still finds its last state.
//      Per-token writes, windows and holders skip these groups (nulls in the table are normal).
//   9. Cross-attention groups (StepPlan::group_cross_attention): the group's table holds the
//      request's encoder outputs, positions [0, num_encoder_tokens) of its admission, never
//      the decoder's tokens. They are written once, in the step that admits the request (its
//      own chain of fingerprints, seeded by the request id: the encoder input is the
//      request's), and every later check (admission, read, release) reads all of them back; a
//      write into one while its request lives is an overwrite. A request admitted without
//      encoder tokens, or with a cross table too short for them, is a bad plan.
//   6. Second-tier copies (StepPlan invariant 5): a store keeps the block's fingerprints
//      under its hash (stores_before before the step's writes, stores_after after them); a
//      load writes the kept fingerprints into the new request's block and compares them, at
//      once, with the fingerprints the request expects there ("tier load" mismatches); a
//      drop forgets the kept copy. A load of a hash never stored is a bad plan.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/block_hash.h"
#include "model/block_table.h"
#include "model/sched/step_plan.h"

namespace kv::sim {

enum class VerifyMode { kOff, kFast, kFull };
const char* to_string(VerifyMode mode);  // "off", "fast", "full"
std::optional<VerifyMode> parse_verify_mode(std::string_view text);

struct Violation {
  enum class Kind {
    kMismatch,   // a slot read through the table does not hold the expected fingerprint
    kOverwrite,  // a cache write into a slot a live request relies on
    kBadPlan,    // the plan contradicts the device's state (unknown request, short table, ...)
  };
  Kind kind = Kind::kMismatch;
  std::int64_t step = 0;
  RequestId request;
  std::int64_t position = -1;
  BlockId block = kNoBlock;
  std::int64_t slot = -1;
  std::uint64_t expected = 0;  // kOverwrite: what the slot holds
  std::uint64_t found = 0;     // kOverwrite: what was written
  const char* when = "";       // kMismatch: "admission", "read" or "release"
  RequestId other_request;     // kOverwrite: who relies on the slot
  std::int64_t other_position = -1;
  std::int64_t more = 0;  // further mismatching positions of the same check
  std::string detail;     // kBadPlan
  int group = -1;         // hybrid runs: the KV-cache group (-1: one group, not named)

  std::string to_string() const;
};

struct ShadowStats {
  std::int64_t slots_written = 0;
  std::int64_t slots_verified = 0;
  std::int64_t faults_fired = 0;
};

// Faults for FaultInjectingDevice; armed for one apply() and fired at most once.
struct CacheWriteFault {
  RequestId request;
  std::int64_t position = 0;
  std::int64_t redirect_slot = -1;  // -1: the write is dropped
};
struct TableSwapFault {
  RequestId request;
  std::size_t i = 0, j = 0;  // swapped after the step's tables are set up
};

class ShadowKv {
 public:
  explicit ShadowKv(VerifyMode mode);

  VerifyMode mode() const { return mode_; }
  // Drops finished and preempted requests, sets up tables, runs the cache writes and the
  // checks of the mode. Does nothing when the mode is kOff.
  void apply(const StepPlan& plan, std::vector<Violation>* out);
  // Invariant 7: after apply() of the step that verified the drafts. Does nothing when off.
  void reject_drafts(const RequestId& id, std::int64_t count);
  // Verifies the context of every live request (in admission order); for the end of a run.
  void verify_live(std::int64_t step, std::vector<Violation>* out);

  const ShadowStats& stats() const { return stats_; }
  std::size_t num_live() const { return handle_of_.size(); }
  std::size_t num_tier_copies() const { return tier_.size(); }

  static std::uint64_t chain_seed(std::string_view lora_name, std::string_view cache_salt = {});
  static std::uint64_t fingerprint(std::uint64_t prev, TokenId token, std::int64_t position);

  // Inspection and fault hooks.
  std::uint64_t slot(std::int64_t slot) const;                   // 0: never written
  void store_raw(std::int64_t slot, std::uint64_t fingerprint);  // a stray store, unchecked
  std::span<const BlockId> table(const RequestId& id) const;     // empty if not live
  std::int64_t num_computed(const RequestId& id) const;          // -1 if not live
  void arm(CacheWriteFault fault) { write_faults_.push_back(std::move(fault)); }
  // Disaggregated prefill (invariant 6 across two devices): the fingerprints a block holds, on
  // the prefill side, kept under its hash on the decode side as a tier copy its load checks.
  std::vector<std::uint64_t> block_fingerprints(BlockId block) const;
  void keep_tier_copy(const BlockHash& hash, std::vector<std::uint64_t> fingerprints);
  void arm(TableSwapFault fault) { swap_faults_.push_back(std::move(fault)); }

 private:
  struct Holder {
    std::int32_t request;  // handle into live_
    std::int32_t index;    // position in that request's registered table of `group`
    std::int32_t group;
  };
  struct Live {
    RequestId id;
    bool in_use = false;
    std::uint64_t seed = 0;
    std::int64_t num_computed = 0;
    std::int64_t rely_begin = 0;                   // relies on [rely_begin, num_computed); > 0 only for
                                                   // unverified hits during the step of admission
    BlockTable table;                              // what the kernels use (one list per group)
    std::vector<std::vector<BlockId>> registered;  // per group, what holders_ records
                                                   // (differs from table only after a fault)
    std::vector<std::uint64_t> expected;           // expected fingerprint of each position written
    std::int64_t admitted = 0;                     // admission sequence number (verify_live order)
    std::int64_t state_end = -1;                   // Mamba groups: the prefix whose state it last wrote
    std::int64_t num_encoder = 0;                  // cross groups: encoder positions written (invariant 9)
    std::vector<std::uint64_t> encoder_expected;   // their fingerprints, by position
  };

  std::int32_t find(const RequestId& id) const;
  void set_up_tables(const StepPlan& plan, std::vector<Violation>* out);
  void write_step(const StepPlan& plan, std::vector<Violation>* out);
  std::int32_t admit(const ScheduledRequest& r, std::vector<Violation>* out);
  void release(std::int32_t h, std::vector<Violation>* out);
  bool add_block(std::int32_t h, int g, BlockId b, const RequestId& id, std::vector<Violation>* out);
  bool add_blocks(std::int32_t h, const ScheduledRequest& r, std::vector<Violation>* out);
  void write(std::int32_t h, int g, std::int64_t position, std::uint64_t fp, std::vector<Violation>* out);
  void write_position(std::int32_t h, std::int64_t position, std::uint64_t fp, std::vector<Violation>* out);
  void verify(std::int32_t h, int g, std::int64_t from, std::int64_t to, const char* when, std::vector<Violation>* out);
  // Every group's positions that a query at `first_query` (and later ones, up to `to`) reads.
  void verify_groups(std::int32_t h, std::int64_t first_query, std::int64_t to, const char* when,
                     std::vector<Violation>* out);
  // The first position a query at `query` reads in group g (0 for full attention).
  std::int64_t reach_begin(int g, std::int64_t query) const;
  int num_groups() const { return windows_.empty() ? 1 : static_cast<int>(windows_.size()); }
  // Invariant 7: a Mamba group, and the tokens one block of group g covers.
  bool is_state(int g) const {
    return !state_block_sizes_.empty() && state_block_sizes_[static_cast<std::size_t>(g)] > 0;
  }
  std::int64_t block_tokens(int g) const {
    return is_state(g) ? state_block_sizes_[static_cast<std::size_t>(g)] : block_size_;
  }
  void verify_state(std::int32_t h, int g, bool always, const char* when, std::vector<Violation>* out);
  void write_state(std::int32_t h, int g, std::vector<Violation>* out);
  int named(int g) const { return windows_.empty() ? -1 : g; }
  // Invariant 9: a cross-attention group, and the encoder writes of a request's admission.
  bool is_cross(int g) const { return !cross_.empty() && cross_[static_cast<std::size_t>(g)]; }
  void write_encoder(std::int32_t h, const ScheduledRequest& r, std::vector<Violation>* out);
  void ensure_block(BlockId b);
  void tier_store(const std::vector<TierTransfer>& stores);
  void tier_load(const std::vector<TierTransfer>& loads, std::vector<Violation>* out);
  void tier_load_one(const TierTransfer& t, std::vector<Violation>* out);
  Violation bad_plan(const RequestId& id, std::string detail) const;

  VerifyMode mode_;
  int block_size_ = 0;
  std::vector<std::int64_t> windows_;   // StepPlan::group_windows of the run (empty: one group)
  std::vector<int> state_block_sizes_;  // StepPlan::group_state_block_sizes (empty: no Mamba group)
  std::vector<std::uint64_t> states_;   // by block id: the state fingerprint a Mamba block holds
  std::vector<bool> cross_;             // StepPlan::group_cross_attention (empty: no cross group)
  std::int64_t step_ = 0;
  std::int64_t admissions_ = 0;
  std::vector<Live> live_;
  std::vector<std::int32_t> free_handles_;
  std::unordered_map<RequestId, std::int32_t> handle_of_;  // lookup only, never iterated
  std::vector<std::vector<Holder>> holders_;               // by block id
  std::vector<std::uint64_t> slots_;                       // by slot
  std::vector<std::int32_t> scratch_handles_;              // per plan request, -1 = skipped
  std::vector<CacheWriteFault> write_faults_;
  std::vector<TableSwapFault> swap_faults_;
  // Invariant 6: each second-tier entry's fingerprints, block_size of them (lookup only).
  std::unordered_map<BlockHash, std::vector<std::uint64_t>, BlockHashHasher> tier_;
  ShadowStats stats_;
};

}  // namespace kv::sim
