// MambaManager: the state blocks of one Mamba (linear attention) group, as vLLM's
// MambaManager. A Mamba layer reads one state, the one after the last computed token, so its
// table holds real blocks only where a state is kept; a hit is one cached state, at a block
// boundary that is a multiple of the coordinator's alignment (right to left, the longest
// first; never dropped for eagle). The mode (KvCacheSpec::mamba_mode) decides what is kept:
//   none  (caching off): one block of max_model_len tokens, plus the speculative ones, for
//         the whole request;
//   all   slots for every block, like full attention (plus the speculative ones); all but the
//         block of the last computed token are freed at the next allocate;
//   align the state of the current chunk end at index ceil(main / B) - 1 (earlier entries
//         null), followed by num_speculative_blocks blocks; each later allocate appends one
//         block, moves the speculative blocks forward and frees the state of two allocations
//         ago (last_state). Lookahead slots are ignored.
// Invariants (on top of SingleTypeKvCacheManager's; nulls may sit anywhere in align tables):
//   1. align: a request has last_state only after an allocation that kept an earlier state
//      (a hit, or a second allocation); free() forgets last_state and the allocated mark.
//   2. cached_this_step_ holds exactly the hashes this group cached since the last
//      new_step(); a hit whose last block is one of them cannot be allocated (vLLM refuses a
//      state written in the same step).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "model/single_type_kv_cache_manager.h"

namespace kv {

class MambaManager final : public SingleTypeKvCacheManager {
 public:
  using SingleTypeKvCacheManager::SingleTypeKvCacheManager;

  std::vector<std::vector<BlockId>> find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length,
                                                           std::span<const KvCacheGroupId> group_ids, bool drop,
                                                           std::int64_t alignment) const override;
  // The per-request cap does not apply to Mamba (only windows are capped).
  std::int64_t num_blocks_to_allocate(
      const RequestId& id, const SlotDemand& demand, std::span<const BlockId> hit,
      std::int64_t max_required_blocks = std::numeric_limits<std::int64_t>::max()) const override;
  std::size_t remove_skipped_blocks(const RequestId& id, const SlotDemand& demand) override;
  void allocate_new_blocks(const RequestId& id, const SlotDemand& demand, std::vector<BlockId>& out) override;
  void cache_blocks(const Request& request, std::int64_t num_tokens) override;
  void free(const RequestId& id, const BlockRetention& retention = {}) override;
  void new_step() override { cached_this_step_.clear(); }

 protected:
  std::int64_t required_tokens(const SlotDemand& demand) const override {
    return demand.num_tokens + std::int64_t{spec_.num_speculative_blocks} * spec_.block_size;
  }
  bool nulls_form_prefix() const override { return spec_.mamba_mode != MambaCacheMode::kAlign; }

 private:
  // align mode, per request since its first allocation.
  struct AlignState {
    std::optional<std::size_t> last_state;  // the entry the next allocate frees
    bool allocated = false;                 // the group allocated for it since its last free
  };

  bool is_align() const { return spec_.mamba_mode == MambaCacheMode::kAlign; }
  bool hit_cached_this_step(std::span<const BlockId> hit) const;
  std::int64_t num_align_blocks_to_allocate(const RequestId& id, const SlotDemand& demand,
                                            std::span<const BlockId> hit) const;
  void allocate_align_blocks(const RequestId& id, const SlotDemand& demand, std::vector<BlockId>& out);

  std::unordered_map<RequestId, AlignState> align_;
  std::unordered_set<BlockHash, BlockHashHasher> cached_this_step_;
};

}  // namespace kv
