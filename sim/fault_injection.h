// FaultInjectingDevice: wraps a SimDevice and corrupts its shadow KV memory on command, so
// tests can prove the verifier catches each kind of corruption in every verify mode.
// Each fault is tied to a step number and takes effect while the plan with that step runs:
//   - overwrite_slot: a stray store into a slot, just before the step's kernels;
//   - drop_cache_write: the cache write of one (request, position) of the step is skipped;
//   - misdirect_cache_write: that write lands in another slot;
//   - swap_block_table_entries: two entries of the request's device-side block table are
//     swapped after the step's tables are uploaded (the bookkeeping keeps the right ones).
// A FaultSpec (`kvsim replay --inject-fault KIND@STEP[:REQUEST]`) names only the kind, the
// step and optionally the request; inject() picks the slot, position or entries itself when
// the step runs (see FaultSpec) and describes what it did in fired().
// Invariants: a fault fires at most once; faults_fired() counts the ones that took effect (a
// fault whose request or position is not in its step does nothing; an injected spec waits for
// the first step >= its step that has a target).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/util/status.h"
#include "sim/sim_device.h"

namespace kv::sim {

// One fault of the command line, KIND@STEP[:REQUEST], KIND one of:
//   overwrite  a stray store into the slot of REQUEST's first computed position (default: the
//              first request of the step that has computed tokens);
//   drop       the cache write of REQUEST's first position of the step is skipped (default:
//              the step's first request);
//   misdirect  that write lands in slot 0 (the null block's) instead;
//   swap       the first and last entries of REQUEST's block table are swapped (it needs two).
struct FaultSpec {
  enum class Kind { kOverwrite, kDrop, kMisdirect, kSwap };
  Kind kind = Kind::kOverwrite;
  std::int64_t step = 1;
  RequestId request;  // empty: chosen when the step runs

  std::string to_string() const;  // as parsed: "drop@3:r1"
};
StatusOr<FaultSpec> parse_fault_spec(std::string_view text);

class FaultInjectingDevice final : public Device {
 public:
  explicit FaultInjectingDevice(std::unique_ptr<SimDevice> inner);

  void overwrite_slot(std::int64_t step, std::int64_t slot, std::uint64_t fingerprint);
  void drop_cache_write(std::int64_t step, const RequestId& request, std::int64_t position);
  void misdirect_cache_write(std::int64_t step, const RequestId& request, std::int64_t position, std::int64_t slot);
  void swap_block_table_entries(std::int64_t step, const RequestId& request, std::size_t i, std::size_t j);

  // Fires at the first step >= spec.step where the fault has a target.
  void inject(const FaultSpec& spec);
  // What each injected fault did: "drop at step 3: request r1, position 16, slot 80".
  const std::vector<std::string>& fired() const { return fired_; }
  // The injected faults that have not fired yet.
  std::vector<FaultSpec> unfired() const { return specs_; }

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
  // The spec's fault resolved against `plan` and the shadow state, or nullopt (no target).
  std::optional<Fault> resolve(const FaultSpec& spec, const StepPlan& plan, std::string* description);
  void fire(Fault& f);

  std::unique_ptr<SimDevice> inner_;
  std::vector<Fault> pending_;    // in the order given
  std::vector<FaultSpec> specs_;  // injected, not fired yet
  std::vector<std::string> fired_;
  std::int64_t overwrites_fired_ = 0;
};

}  // namespace kv::sim
