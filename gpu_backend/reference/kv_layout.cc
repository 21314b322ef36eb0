#include "gpu_backend/reference/kv_layout.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace kv::gpuref {

KvLayout dense_kv_layout(int num_layers) {
  KvLayout k;
  k.group_windows = {0};
  k.group_state_block_sizes = {0};
  k.group_mamba_modes = {MambaCacheMode::kNone};
  k.layer_group.assign(static_cast<std::size_t>(num_layers), 0);
  for (int l = 0; l < num_layers; ++l) k.layer_tensor.push_back(l);
  k.num_tensors = num_layers;
  return k;
}

std::int64_t plan_window(const KvCacheSpec& spec) {
  if (spec.type == AttentionType::kSlidingWindow) return spec.window;
  if (spec.type == AttentionType::kChunkedLocalAttention) return -static_cast<std::int64_t>(spec.chunk);
  return 0;
}

namespace {

// "layers.I" -> I, or -1.
int layer_index(const std::string& name) {
  const std::string prefix = "layers.";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return -1;
  int i = -1;
  const char* end = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(name.data() + prefix.size(), end, i);
  return ec == std::errc() && ptr == end ? i : -1;
}

}  // namespace

StatusOr<KvLayout> make_kv_layout(std::span<const KvCacheGroupSpec> groups, int num_layers) {
  if (groups.empty()) return dense_kv_layout(num_layers);
  KvLayout k;
  int attention_block = 0;  // the block size of the attention groups (the first one's)
  for (const KvCacheGroupSpec& g : groups) {
    if (g.spec.type != AttentionType::kMamba && attention_block == 0) attention_block = g.spec.block_size;
  }
  k.layer_group.assign(static_cast<std::size_t>(num_layers), -1);
  k.layer_tensor.assign(static_cast<std::size_t>(num_layers), -1);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const KvCacheSpec& spec = groups[g].spec;
    const std::string where = "KV-cache group " + std::to_string(g) + ": ";
    if (Status st = validate_spec(spec); !st.ok()) return st.with_context(where);
    const bool mamba = spec.type == AttentionType::kMamba;
    if (spec.type != AttentionType::kFullAttention && spec.type != AttentionType::kSlidingWindow &&
        spec.type != AttentionType::kChunkedLocalAttention && !mamba) {
      return Status::error(where + describe(spec) +
                           " layers are not run by the device (full, "
                           "sliding-window, chunked-local attention and Mamba only)");
    }
    if (mamba && spec.num_speculative_blocks > 0) {
      return Status::error(where + "Mamba speculative state blocks are not run by the device");
    }
    if (!mamba && spec.block_size != attention_block) {
      return Status::error(where + "block size " + std::to_string(spec.block_size) +
                           " differs from the first attention group's " + std::to_string(attention_block) +
                           " (the device runs one block size)");
    }
    k.group_windows.push_back(plan_window(spec));
    k.group_state_block_sizes.push_back(mamba ? spec.block_size : 0);
    k.group_mamba_modes.push_back(mamba ? spec.mamba_mode : MambaCacheMode::kNone);
    const auto& names = groups[g].layer_names;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const int l = layer_index(names[i]);
      if (l < 0 || l >= num_layers) {
        return Status::error(where + "layer '" + names[i] + "' is not one of layers.0 .. layers." +
                             std::to_string(num_layers - 1));
      }
      if (k.layer_group[static_cast<std::size_t>(l)] >= 0)
        return Status::error(where + "layer '" + names[i] + "' is in two groups");
      k.layer_group[static_cast<std::size_t>(l)] = static_cast<int>(g);
      k.layer_tensor[static_cast<std::size_t>(l)] = static_cast<int>(i);
    }
    k.num_tensors = std::max(k.num_tensors, static_cast<int>(names.size()));
  }
  for (int l = 0; l < num_layers; ++l) {
    if (k.layer_group[static_cast<std::size_t>(l)] < 0) {
      return Status::error("KV-cache groups: layer layers." + std::to_string(l) + " is in no group");
    }
  }
  return k;
}

}  // namespace kv::gpuref
