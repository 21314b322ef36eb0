// KernelProfile: the per-kernel times a profiling CUDA device measures step by step, reduced to
// the profile CSV the simulator's cost model and kvsim calibrate read (sim/profile_format.md).
// Invariants:
//   1. One row per key, as the format requires: attention is keyed by (num_seqs, num_tokens,
//      context_tokens), every other kernel by num_tokens alone (the reader ignores its other
//      two cells; the row keeps those of the key's first measurement).
//   2. A row's time is the median of its key's measurements (the lower middle one of an even
//      count): a shape measured many times gives one robust figure, and a first launch that
//      paid a one-time cost (cuBLAS's lazy set-up: tens of milliseconds) does not become the
//      shape's time.
//   3. Rows come in the order their keys were first measured, so one step's profile lists its
//      kernels in launch order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace kv::gpuref {

class KernelProfile {
 public:
  void add(const std::string& kernel, std::int64_t num_tokens, std::int64_t num_seqs, std::int64_t context_tokens,
           std::int64_t time_ns);
  // The CSV text: the header line, then one line per key (invariants 1-3).
  std::string csv() const;
  std::size_t num_keys() const { return rows_.size(); }

 private:
  using Key = std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>;
  struct Row {
    std::int64_t num_tokens, num_seqs, context_tokens;
    std::string kernel;
    std::vector<std::int64_t> times;
  };
  std::map<Key, std::size_t> index_;  // key -> position in rows_
  std::vector<Row> rows_;
};

}  // namespace kv::gpuref
