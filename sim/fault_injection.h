// FaultInjectingDevice: wraps a SimDevice and corrupts its shadow KV memory on command, so
// tests can prove the verifier catches each kind of corruption in every verify mode.
// Each fault is tied to a step number and takes effect while the plan with that step runs:
//   - overwrite_slot: a stray store into a slot, just before the step's kernels;
//   - drop_cache_write: the cache write of one (request, position) of the step is skipped;
//   - misdirect_cache_write: that write lands in another slot;
//   - swap_block_table_entries: two entries of the request's device-side block table are
//     swapped after the step's tables are uploaded (the bookkeeping keeps the right ones).
// Invariants: a fault fires at most once; faults_fired() counts the ones that took effect (a
// fault whose request or position is not in its step does nothing).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/sim_device.h"

namespace kv::sim {

class FaultInjectingDevice final : public Device {
 public:
  explicit FaultInjectingDevice(std::unique_ptr<SimDevice> inner);

  void overwrite_slot(std::int64_t step, std::int64_t slot, std::uint64_t fingerprint);
  void drop_cache_write(std::int64_t step, const RequestId& request, std::int64_t position);
  void misdirect_cache_write(std::int64_t step, const RequestId& request, std::int64_t position,
                             std::int64_t slot);
  void swap_block_table_entries(std::int64_t step, const RequestId& request, std::size_t i,
                                std::size_t j);

  std::string name() const override { return "faulty-" + inner_->name(); }
  StepResult execute(const StepPlan& plan) override;
  std::vector<std::string> finish_run() override { return inner_->finish_run(); }

  std::int64_t faults_fired() const { return inner_->shadow_stats().faults_fired + overwrites_fired_; }
  SimDevice& inner() { return *inner_; }

 private:
  struct Fault {
    enum class Kind { kOverwrite, kDrop, kMisdirect, kSwap };
    Kind kind = Kind::kOverwrite;
    std::int64_t step = 0;
    RequestId request;
    std::int64_t position = 0;
    std::int64_t slot = -1;
    std::uint64_t fingerprint = 0;
    std::size_t i = 0, j = 0;
  };
  std::unique_ptr<SimDevice> inner_;
  std::vector<Fault> pending_;  // in the order given
  std::int64_t overwrites_fired_ = 0;
};

}  // namespace kv::sim
