// The policies by name, for KvCacheConfig::eviction_policy and the command line.
#include <array>
#include <utility>

#include "model/policies/eviction_policy.h"
#include "model/policies/leaf_lru_policy.h"
#include "model/policies/lfu_policy.h"
#include "model/policies/priority_policy.h"
#include "model/policies/slru_policy.h"

namespace kv {
namespace {

constexpr std::array<std::pair<EvictionPolicyKind, const char*>, 5> kNames = {{
    {EvictionPolicyKind::kLru, "lru"},
    {EvictionPolicyKind::kLfu, "lfu"},
    {EvictionPolicyKind::kSlru, "slru"},
    {EvictionPolicyKind::kLeafLru, "leaf-lru"},
    {EvictionPolicyKind::kPriority, "priority"},
}};

}  // namespace

const char* to_string(EvictionPolicyKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "?";
}

bool parse_eviction_policy(const std::string& text, EvictionPolicyKind* out) {
  for (const auto& [k, name] : kNames) {
    if (text == name) {
      *out = k;
      return true;
    }
  }
  return false;
}

const char* eviction_policy_names() { return "lru, lfu, slru, leaf-lru, priority"; }

std::unique_ptr<EvictionPolicy> make_eviction_policy(EvictionPolicyKind kind, std::span<Block> blocks, FreeOrder order,
                                                     bool caching_enabled) {
  switch (kind) {
    case EvictionPolicyKind::kLru:
      return make_lru_policy(blocks, order, caching_enabled);
    case EvictionPolicyKind::kLfu:
      return make_lfu_policy(blocks);
    case EvictionPolicyKind::kSlru:
      return make_slru_policy(blocks);
    case EvictionPolicyKind::kLeafLru:
      return make_leaf_lru_policy(blocks);
    case EvictionPolicyKind::kPriority:
      return make_priority_policy(blocks);
  }
  return make_lru_policy(blocks, order, caching_enabled);
}

}  // namespace kv
