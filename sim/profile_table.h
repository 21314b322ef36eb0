// ProfileTable: measured kernel times (sim/profile_format.md), looked up by interpolation.
// Invariants after a successful load:
//   1. Every row had a known kernel name, integers >= 0, num_tokens >= 1, keys at most
//      kMaxProfileKey and times at most kMaxProfileNs; no two rows share a key (kernel,
//      num_tokens) -- for attention (num_seqs, num_tokens, context_tokens).
//   2. Points are sorted by their keys, so lookup is a pure function of the query.
// lookup_ns interpolates piecewise linearly in num_tokens and, for attention, in
// context_tokens within the group of rows whose num_seqs is nearest the query's (ties go to
// the smaller); beyond the table's ends the end segments are extended; results are in
// [0, kMaxProfileNs] (far extrapolation saturates) and rounded to the nearest integer ns. Kernels without rows are
// has() == false (the cost model falls back to its roofline). Immutable after load.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/util/status.h"
#include "sim/kernels.h"

namespace kv::sim {

// One launch of one kernel takes at most 1000 s; a larger time is a broken measurement, and the
// bound keeps the cost model's cycle sums (times layers, clock, nodes) inside int64_t.
inline constexpr std::int64_t kMaxProfileNs = 1'000'000'000'000;
// num_tokens, num_seqs and context_tokens of a row are at most 2^40.
inline constexpr std::int64_t kMaxProfileKey = std::int64_t{1} << 40;

struct KernelQuery {
  std::int64_t num_tokens = 0;
  std::int64_t num_seqs = 0;
  std::int64_t context_tokens = 0;  // attention: KV tokens read, summed over sequences
};

// One measured host step (kernel name `host_step`): the host's time for a step of `num_seqs`
// requests and `num_tokens` tokens (scheduling, input preparation, sampling, detokenization).
struct HostRow {
  std::int64_t num_tokens = 0, num_seqs = 0, time_ns = 0;
};

// One measured step (kernel name `decode_step` or `prefill_step`): the GPU time of a whole step
// of `num_tokens` tokens over `num_seqs` sequences, evenly split, reading `context_tokens` KV
// tokens in all, run as one CUDA graph (the forward and lm_head; no host work). A decode step
// computes one token per sequence; a prefill step whole prompts with no cached prefix
// (context_tokens == num_tokens). Calibration checks the fitted preset against them; the cost
// model never looks them up.
struct StepRow {
  bool decode = true;
  std::int64_t num_tokens = 0, num_seqs = 0, context_tokens = 0, time_ns = 0;
};

// One measured row, as the file gives it.
struct ProfileRow {
  Kernel kernel = Kernel::kSlotMapping;
  std::int64_t num_tokens = 0, num_seqs = 0, context_tokens = 0, time_ns = 0;
};

class ProfileTable {
 public:
  // Reads a CSV file; the Status names the file, line and column of the first bad field.
  static StatusOr<ProfileTable> load(const std::string& path);
  // The same from text in memory; `name` stands for the file name in messages.
  static StatusOr<ProfileTable> parse(const std::string& name, std::string_view text);

  bool has(Kernel k) const { return !rows_[static_cast<int>(k)].empty(); }
  std::size_t num_rows() const { return num_rows_; }
  // Every kernel row, by kernel and then in key order (host_step rows are not kernels).
  std::vector<ProfileRow> all_rows() const;
  // The host_step rows, in file order (calibration fits the host terms to them).
  const std::vector<HostRow>& host_rows() const { return host_rows_; }
  // The decode_step and prefill_step rows, in file order.
  const std::vector<StepRow>& step_rows() const { return step_rows_; }
  // Time of one launch of `k` for one layer, in ns. Requires has(k).
  std::int64_t lookup_ns(Kernel k, const KernelQuery& q) const;

  struct Row {
    std::int64_t num_seqs = 0;  // used by attention only
    std::int64_t num_tokens = 0;
    std::int64_t context_tokens = 0;  // used by attention only
    std::int64_t time_ns = 0;
    bool operator<(const Row& o) const;
  };

 private:
  static StatusOr<ProfileTable> read(const std::string& name, const char* begin, const char* end);

  std::array<std::vector<Row>, kNumKernels> rows_;  // sorted by Row::operator<
  std::vector<HostRow> host_rows_;
  std::vector<StepRow> step_rows_;
  std::size_t num_rows_ = 0;
};

// Piecewise-linear interpolation through (xs[i], ys[i]) (xs strictly increasing), extended
// beyond the ends along the end segments, rounded to nearest, clamped to [0, kMaxProfileNs].
// Exposed for tests.
std::int64_t interpolate(const std::vector<std::int64_t>& xs, const std::vector<std::int64_t>& ys, std::int64_t x);

}  // namespace kv::sim
