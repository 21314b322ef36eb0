// ManagerModel: a reference model of the KV-cache manager, written from docs/semantics.md alone and
// kept deliberately naive (plain vectors, linear searches) so it can be read against the spec
// line by line. Block hashes come from ReferenceHasher (properties/reference_hasher.h), written
// apart from kv::BlockHasher.
// Each operation also records what `kvsim ops` prints for it, so a command sequence can be
// written out as an ops script with its expected output.
// With an eviction policy other than lru, the free queue's order comes from ModelPolicy
// (properties/model_policy.h), the policy's naive reference, recomputed after every change.
// Invariants of the model itself (it is the oracle, so they hold by construction):
//   1. queue holds exactly the non-null blocks with ref_cnt == 0, head first (next victim).
//   2. map lists each hashed block once, under its own hash, oldest insertion first.
//   3. A request's table is the blocks it holds, in allocation order; held == !table.empty().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/block_hasher.h"
#include "model/policies/eviction_policy.h"
#include "model/types.h"
#include "properties/model_policy.h"
#include "properties/reference_hasher.h"

namespace kv::props {

struct ModelConfig {
  int num_blocks = 8;  // including the null block
  int block_size = 2;
  FreeOrder free_order = FreeOrder::kClassic;
  EvictionPolicyKind policy = EvictionPolicyKind::kLru;
  bool caching = true;
  bool eagle = false;
  std::int64_t max_model_len = 1 << 20;
  HashAlgo algo = HashAlgo::kSha256Cbor;
  std::string seed = std::string(kDefaultHashSeed);

  std::string ops_config_line() const;
};

struct ModelBlock {
  int ref_cnt = 0;
  std::optional<BlockHash> hash;
};

struct ModelHit {
  std::vector<BlockId> blocks;
  std::int64_t tokens = 0;
};

struct ModelRequest {
  std::string id;
  std::vector<TokenId> tokens;
  std::string salt, lora;
  std::vector<MultiModalItem> mm;  // in offset order
  BlockRetention retention;
  std::vector<BlockHash> hashes;  // one per full block (none with caching off)
  std::int64_t computed = 0;
  std::vector<BlockId> table;       // blocks held, in allocation order
  std::size_t num_cached = 0;       // leading table blocks already inserted in the map
  bool held = false;                // a successful allocation happened and no free since
  bool retired = false;             // freed after holding blocks: the scheduler never reuses it
  std::optional<ModelHit> pending;  // remembered by `lookup`, consumed by the next `alloc`
};

// One KV event, in the manager's shape (see model/kv_events.h).
struct ModelEvent {
  enum Kind { kStored, kRemoved, kCleared } kind = kStored;
  std::vector<BlockHash> hashes;
  std::optional<BlockHash> parent;
  std::vector<TokenId> tokens;
  int block_size = 0;
  std::string lora;
};

struct ModelStats {
  std::int64_t lookups = 0, queries = 0, hits = 0;
};

// What an allocation printed: new block ids, a failure, or a skip (`alloc ID rest` with
// nothing left to compute).
struct ModelAlloc {
  enum Kind { kNew, kFail, kSkip } kind = kNew;
  std::vector<BlockId> fresh;
};

class ManagerModel {
 public:
  explicit ManagerModel(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }

  // The operations of docs/semantics.md §3. Each adds to events() and printed(); a command calls
  // begin_command() once before its operations.
  void add_request(const std::string& id, std::vector<TokenId> tokens, const std::string& salt, const std::string& lora,
                   std::vector<MultiModalItem> mm = {}, BlockRetention retention = {});
  ModelHit lookup(const std::string& id);
  // n < 0 means `rest`.
  ModelAlloc alloc(const std::string& id, std::int64_t n, std::int64_t lookahead, bool fullfit);
  void append(const std::string& id, const std::vector<TokenId>& tokens);
  void free(const std::string& id);
  bool reset();
  // Prints the observable state as `queue`, `num_free`, `stats` would.
  void print_queries();
  void begin_command();  // clears events() and printed()

  const ModelRequest* find(const std::string& id) const;
  ModelRequest* find(const std::string& id);
  const std::vector<ModelRequest>& requests() const { return requests_; }
  const std::vector<ModelBlock>& blocks() const { return blocks_; }
  const std::vector<BlockId>& queue() const { return queue_; }
  const ModelStats& stats() const { return stats_; }
  const std::vector<ModelEvent>& events() const { return events_; }
  const std::vector<std::string>& printed() const { return printed_; }
  // Blocks cached under `hash`, oldest first (empty when none).
  std::vector<BlockId> cached_under(const BlockHash& hash) const;
  std::size_t num_cached_blocks() const;
  std::vector<std::pair<BlockHash, std::vector<BlockId>>> map() const { return map_; }
  const ModelRequest* pending_request() const;  // the request holding a remembered hit
  bool any_block_in_use() const;

  // Lines as `kvsim ops` prints them.
  std::string queue_line() const;
  std::string stats_line() const;

 private:
  std::int64_t blocks_for(std::int64_t tokens) const;
  std::int64_t blocks_needed(std::int64_t tokens, const ModelRequest& r, const ModelHit& hit) const;
  void pop_free_block_into(ModelRequest& r, std::vector<BlockId>& fresh);
  void uncache(BlockId b);
  void remove_from_queue(BlockId b);
  void sync_queue();  // queue_ from policy_ (non-lru policies only)

  ModelConfig config_;
  std::shared_ptr<const ReferenceHasher> hasher_;
  std::vector<ModelBlock> blocks_;
  std::vector<BlockId> queue_;
  std::optional<ModelPolicy> policy_;  // set for every policy but lru
  std::vector<std::pair<BlockHash, std::vector<BlockId>>> map_;
  std::vector<ModelRequest> requests_;
  ModelStats stats_;
  std::vector<ModelEvent> events_;
  std::vector<std::string> printed_;
};

std::string ids_text(const std::vector<BlockId>& ids);
std::string tokens_text(const std::vector<TokenId>& tokens);

}  // namespace kv::props
