// The slot formula of a paged KV cache, in one place. A KV cache of N blocks of B tokens has
// N * B slots; position p of a request lives in block table[p / B] at offset p % B, so its slot
// is table[p / B] * B + p % B (vLLM's slot mapping). Slot -1 marks a padding token: no cache
// write, no read. The shadow memory, the CUDA kernels and their CPU reference all compute
// slots through these functions.
// C++17 and constexpr on purpose: the CUDA kernels (compiled as C++17 with relaxed constexpr)
// call slot_in_block from device code.
#pragma once

#include <cstdint>

namespace kv {

inline constexpr std::int64_t kPaddingSlot = -1;

// The slot of `position` when `block` is the block that holds it.
constexpr std::int64_t slot_in_block(std::int64_t block, std::int64_t block_size, std::int64_t position) {
  return block * block_size + position % block_size;
}

// The index into a block table of the block that holds `position`.
constexpr std::int64_t block_index(std::int64_t position, std::int64_t block_size) { return position / block_size; }

}  // namespace kv
