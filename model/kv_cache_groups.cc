#include "model/kv_cache_groups.h"

#include <algorithm>
#include <numeric>

namespace kv {
namespace {

// vLLM's uniform-type test puts full attention and its variants (R-SWA) in one kind.
AttentionType kind_of(AttentionType type) {
  return type == AttentionType::kRSwa ? AttentionType::kFullAttention : type;
}

// Case 2: one kind, one block size, and the kind's own parameter (window, chunk, or Mamba's
// speculative blocks).
bool same_kind(const KvCacheSpec& a, const KvCacheSpec& b) {
  if (kind_of(a.type) != kind_of(b.type) || a.block_size != b.block_size) return false;
  switch (a.type) {
    case AttentionType::kSlidingWindow:
      return a.window == b.window;
    case AttentionType::kChunkedLocalAttention:
      return a.chunk == b.chunk;
    case AttentionType::kMamba:
      return a.num_speculative_blocks == b.num_speculative_blocks;
    default:
      return true;
  }
}

std::int64_t sum_of_pages(std::span<const LayerKvCacheSpec> layers) {
  std::int64_t sum = 0;
  for (const LayerKvCacheSpec& l : layers) sum += l.spec.page_size_bytes();
  return sum;
}

KvCacheGroupSpec one_group(std::span<const LayerKvCacheSpec> layers) {
  KvCacheGroupSpec g;
  g.spec = layers.front().spec;
  for (const LayerKvCacheSpec& l : layers) g.layer_names.push_back(l.name);
  g.group_page_size_bytes = sum_of_pages(layers);
  return g;
}

// vLLM unify_kv_cache_spec_page_size: a smaller attention page grows by multiplying the
// block size; a smaller Mamba page is padded (its block size stays).
Status unify_page_sizes(std::vector<LayerKvCacheSpec>& layers) {
  std::int64_t max_page = 0;
  for (const LayerKvCacheSpec& l : layers) max_page = std::max(max_page, l.spec.page_size_bytes());
  for (LayerKvCacheSpec& l : layers) {
    const std::int64_t page = l.spec.page_size_bytes();
    if (page == max_page) continue;
    if (l.spec.type == AttentionType::kMamba) {
      l.spec.mamba_page_bytes = max_page;
      continue;
    }
    if (max_page % page != 0) {
      return Status::error("layer " + l.name + ": page size " + std::to_string(page) +
                           " does not divide the largest page size " + std::to_string(max_page) +
                           " (vLLM refuses pages that are not whole multiples of each other)");
    }
    const std::int64_t block_size = l.spec.block_size * (max_page / page);
    if (block_size > (std::int64_t{1} << 30)) {
      return Status::error("layer " + l.name + ": a page of " + std::to_string(page) + " bytes grown to " +
                           std::to_string(max_page) + " needs a block of " + std::to_string(block_size) +
                           " tokens, too many");
    }
    l.spec.block_size = static_cast<int>(block_size);
  }
  return Status();
}

// Buckets of layer indexes with one spec each, ordered by each spec's first layer.
std::vector<std::vector<std::size_t>> bucket_by_spec(std::span<const LayerKvCacheSpec> layers) {
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<const KvCacheSpec*> specs;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto it = std::find_if(specs.begin(), specs.end(), [&](const KvCacheSpec* s) { return *s == layers[i].spec; });
    if (it == specs.end()) {
      specs.push_back(&layers[i].spec);
      buckets.emplace_back();
      it = specs.end() - 1;
    }
    buckets[static_cast<std::size_t>(it - specs.begin())].push_back(i);
  }
  return buckets;
}

std::size_t group_size_of(const std::vector<std::vector<std::size_t>>& buckets) {
  std::size_t smallest = buckets.front().size(), largest = smallest;
  for (const auto& b : buckets) {
    smallest = std::min(smallest, b.size());
    largest = std::max(largest, b.size());
  }
  // Few padded layers when the buckets are of similar size: one group per bucket.
  return 2 * largest < 3 * smallest ? largest : smallest;
}

std::vector<KvCacheGroupSpec> groups_of_uniform_pages(std::span<const LayerKvCacheSpec> layers) {
  const auto buckets = bucket_by_spec(layers);
  const std::size_t group_size = group_size_of(buckets);
  std::vector<KvCacheGroupSpec> groups;
  for (const auto& bucket : buckets) {
    const std::size_t num_groups = (bucket.size() + group_size - 1) / group_size;
    for (std::size_t i = 0; i < num_groups; ++i) {
      KvCacheGroupSpec g;
      g.spec = layers[bucket.front()].spec;
      for (std::size_t k = i; k < bucket.size(); k += num_groups) {
        g.layer_names.push_back(layers[bucket[k]].name);
      }
      g.group_page_size_bytes = g.spec.page_size_bytes() * static_cast<std::int64_t>(g.layer_names.size());
      groups.push_back(std::move(g));
    }
  }
  return groups;
}

// One group runs one manager: full attention and R-SWA layers of one block size would share
// a group in vLLM, which kvsim cannot manage with one type.
Status check_one_type(std::span<const LayerKvCacheSpec> layers) {
  for (const LayerKvCacheSpec& l : layers) {
    if (l.spec.type != layers.front().spec.type) {
      return Status::error("layers " + layers.front().name + " (" + describe(layers.front().spec) + ") and " + l.name +
                           " (" + describe(l.spec) +
                           ") would share one KV-cache group of two types; kvsim does not "
                           "support that");
    }
  }
  return Status();
}

}  // namespace

StatusOr<std::vector<KvCacheGroupSpec>> get_kv_cache_groups(std::span<const LayerKvCacheSpec> layers) {
  if (layers.empty()) return Status::error("a model needs at least one attention layer");
  for (const LayerKvCacheSpec& l : layers) {
    if (Status s = validate_spec(l.spec); !s.ok()) return s.with_context("layer " + l.name + ": ");
  }
  // Cases 1 and 2 (one spec is one kind).
  const bool uniform_kind =
      std::all_of(layers.begin(), layers.end(), [&](const auto& l) { return same_kind(l.spec, layers.front().spec); });
  if (uniform_kind) {
    if (Status s = check_one_type(layers); !s.ok()) return s;
    return std::vector<KvCacheGroupSpec>{one_group(layers)};
  }
  std::vector<LayerKvCacheSpec> unified(layers.begin(), layers.end());
  if (Status s = unify_page_sizes(unified); !s.ok()) return s;
  return groups_of_uniform_pages(unified);
}

std::vector<std::vector<int>> lookup_sets(std::span<const KvCacheGroupSpec> groups) {
  std::vector<std::vector<int>> sets;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto it = std::find_if(sets.begin(), sets.end(), [&](const std::vector<int>& s) {
      return groups[static_cast<std::size_t>(s.front())].spec == groups[g].spec;
    });
    if (it == sets.end()) {
      sets.push_back({static_cast<int>(g)});
    } else {
      it->push_back(static_cast<int>(g));
    }
  }
  std::stable_sort(sets.begin(), sets.end(), [&](const auto& a, const auto& b) {
    const auto is_full = [&](const std::vector<int>& s) {
      return groups[static_cast<std::size_t>(s.front())].spec.type == AttentionType::kFullAttention;
    };
    return is_full(a) && !is_full(b);
  });
  return sets;
}

StatusOr<KvCachePoolSize> size_pool_for_budget(std::span<const KvCacheGroupSpec> groups,
                                               std::int64_t memory_budget_bytes) {
  if (groups.empty()) return Status::error("no KV-cache groups to size a pool for");
  KvCachePoolSize size;
  size.page_size_bytes = groups.front().spec.page_size_bytes();
  std::int64_t blocks = 0;
  if (groups.size() == 1) {
    size.layers_per_group = static_cast<int>(groups.front().layer_names.size());
    blocks = memory_budget_bytes / groups.front().group_page_size_bytes;
  } else {
    for (const KvCacheGroupSpec& g : groups) {
      if (g.spec.page_size_bytes() != size.page_size_bytes) {
        return Status::error("KV-cache groups with different page sizes cannot share a pool");
      }
      size.layers_per_group = std::max(size.layers_per_group, static_cast<int>(g.layer_names.size()));
    }
    blocks = memory_budget_bytes / size.page_size_bytes / size.layers_per_group;
  }
  if (blocks < 2) {
    return Status::error("memory budget " + std::to_string(memory_budget_bytes) + " bytes holds " +
                         std::to_string(blocks) + " blocks; a pool needs the null block and one more");
  }
  size.num_blocks = static_cast<int>(blocks);
  return size;
}

int scheduler_block_size(std::span<const KvCacheGroupSpec> groups) {
  int lcm = 1;
  for (const KvCacheGroupSpec& g : groups) lcm = std::lcm(lcm, g.spec.block_size);
  return lcm;
}

int cache_block_size(std::span<const KvCacheGroupSpec> groups) {
  int smallest = 0;
  for (const KvCacheGroupSpec& g : groups) {
    smallest = smallest == 0 ? g.spec.block_size : std::min(smallest, g.spec.block_size);
  }
  return smallest;
}

int hash_block_size(std::span<const KvCacheGroupSpec> groups, bool enable_caching) {
  if (groups.size() == 1) return groups.front().spec.block_size;
  if (!enable_caching) return scheduler_block_size(groups);
  const int cache_block = cache_block_size(groups);
  for (const KvCacheGroupSpec& g : groups) {
    if (g.spec.type == AttentionType::kMamba && g.spec.block_size != cache_block) {
      return scheduler_block_size(groups);
    }
  }
  int gcd = 0;
  for (const KvCacheGroupSpec& g : groups) gcd = std::gcd(gcd, g.spec.block_size);
  return gcd;
}

}  // namespace kv
