// KvLayout: how the layers of the synthetic transformer map onto KV-cache groups and KV
// tensors, shared by the CUDA device and its CPU reference. A dense model is one
// full-attention group holding every layer, one tensor per layer. A hybrid model
// (docs/hybrid-groups.md) has one block table per group per request and, as vLLM lays the
// pool out, layers_per_group tensors: layer i of every group lives in tensor i, so a block id
// names the same slots in every tensor, and a block belongs to one group at a time.
// Invariants (make_kv_layout checks them):
//   1. Every layer is in exactly one group; group_windows has one entry per group in the
//      StepPlan::group_windows convention (0 full, w sliding, -c chunked).
//   2. layer_tensor[l] is l's index within its group, < num_tensors = the largest group's size.
//   3. plain() (one full-attention group) exactly when the scheduler's plans carry block_ids;
//      otherwise they carry one group_block_ids list per group and block 0 is the null block.
//   4. Mamba groups (group_state_block_sizes[g] > 0, StepPlan's convention): a block of such a
//      group holds one recurrent state per layer, not per-token K/V; a Mamba layer's state
//      lives in its tensor's K page of that block (fp32, kv_dim values; the page is shared as
//      vLLM shares one page between a block's attention K/V and its Mamba state). Its table
//      covers group_state_block_sizes[g] tokens per block; window 0.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/kv_cache_groups.h"
#include "model/util/status.h"

namespace kv::gpuref {

struct KvLayout {
  std::vector<std::int64_t> group_windows;        // per group
  std::vector<int> group_state_block_sizes;       // per group: 0 attention, the block size of a Mamba group
  std::vector<MambaCacheMode> group_mamba_modes;  // per group (kNone for attention groups)
  std::vector<int> layer_group;                   // per layer
  std::vector<int> layer_tensor;                  // per layer
  int num_tensors = 0;

  int num_groups() const { return static_cast<int>(group_windows.size()); }
  int num_layers() const { return static_cast<int>(layer_group.size()); }
  bool plain() const { return group_windows.size() == 1 && group_windows[0] == 0 && !has_mamba(); }
  bool has_mamba() const {
    for (int b : group_state_block_sizes) {
      if (b > 0) return true;
    }
    return false;
  }
  bool is_state_group(int g) const {
    return !group_state_block_sizes.empty() && group_state_block_sizes[static_cast<std::size_t>(g)] > 0;
  }
  bool is_mamba_layer(int layer) const { return is_state_group(layer_group[static_cast<std::size_t>(layer)]); }
  // StepPlan::group_state_block_sizes of a plan for this layout: empty without Mamba groups.
  std::vector<int> plan_state_block_sizes() const { return has_mamba() ? group_state_block_sizes : std::vector<int>{}; }
  std::int64_t layer_window(int layer) const {
    return group_windows[static_cast<std::size_t>(layer_group[static_cast<std::size_t>(layer)])];
  }
};

// One full-attention group of every layer, tensor l for layer l.
KvLayout dense_kv_layout(int num_layers);

// The layout of vLLM's groups (get_kv_cache_groups) over a model of num_layers layers named
// "layers.I". Empty groups: dense_kv_layout. A layer named twice, missing, or out of range, a
// cross-attention or R-SWA group, a Mamba group with speculative blocks, or attention groups of
// different block sizes is a Status (a Mamba group may have its own block size: mode none).
StatusOr<KvLayout> make_kv_layout(std::span<const KvCacheGroupSpec> groups, int num_layers);

// The StepPlan::group_windows value of a spec: 0 full, w sliding, -c chunked.
std::int64_t plan_window(const KvCacheSpec& spec);

}  // namespace kv::gpuref
