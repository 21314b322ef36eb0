// KV-cache events in vLLM's shape (vllm/distributed/kv_events.py): what a KV-aware router or
// an external cache learns about this cache. The pool queues them only when events are
// enabled; the caller drains them with take_events().
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "model/block.h"
#include "model/block_extra_keys.h"
#include "model/block_hash.h"
#include "model/types.h"

namespace kv {

// Full blocks newly cached, in chain order. For a hybrid model one event per group and step;
// null blocks (positions a windowed group skipped) are not listed, as in vLLM.
struct BlockStored {
  std::vector<BlockHash> block_hashes;
  std::optional<BlockHash> parent_block_hash;  // none when the first stored block starts the chain
  std::vector<TokenId> token_ids;              // the tokens of exactly those blocks
  int block_size = 0;
  std::string lora_name;  // empty = none
  std::string medium = "GPU";
  // One entry per block of block_hashes: the extra keys its hash was computed with (nullopt:
  // none). Empty only when block_hashes is (vLLM then sends None for the whole field).
  std::vector<BlockExtraKeys> extra_keys;
  KvCacheGroupId group_idx = 0;  // the KV-cache group the blocks were cached for
};

// A cached block evicted (its hash dropped) when the block was reused.
struct BlockRemoved {
  std::vector<BlockHash> block_hashes;
  std::string medium = "GPU";
  KvCacheGroupId group_idx = 0;
};

// The whole prefix cache cleared by reset_prefix_cache().
struct AllBlocksCleared {};

using KvEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

}  // namespace kv
