#include "sim/fault_injection.h"

#include "model/check.h"

namespace kv::sim {

FaultInjectingDevice::FaultInjectingDevice(std::unique_ptr<SimDevice> inner)
    : inner_(std::move(inner)) {
  KV_CHECK(inner_ != nullptr);
}

void FaultInjectingDevice::overwrite_slot(std::int64_t step, std::int64_t slot,
                                          std::uint64_t fingerprint) {
  Fault f;
  f.kind = Fault::Kind::kOverwrite;
  f.step = step;
  f.slot = slot;
  f.fingerprint = fingerprint;
  pending_.push_back(std::move(f));
}

void FaultInjectingDevice::drop_cache_write(std::int64_t step, const RequestId& request,
                                            std::int64_t position) {
  Fault f;
  f.kind = Fault::Kind::kDrop;
  f.step = step;
  f.request = request;
  f.position = position;
  pending_.push_back(std::move(f));
}

void FaultInjectingDevice::misdirect_cache_write(std::int64_t step, const RequestId& request,
                                                 std::int64_t position, std::int64_t slot) {
  Fault f;
  f.kind = Fault::Kind::kMisdirect;
  f.step = step;
  f.request = request;
  f.position = position;
  f.slot = slot;
  pending_.push_back(std::move(f));
}

void FaultInjectingDevice::swap_block_table_entries(std::int64_t step, const RequestId& request,
                                                    std::size_t i, std::size_t j) {
  Fault f;
  f.kind = Fault::Kind::kSwap;
  f.step = step;
  f.request = request;
  f.i = i;
  f.j = j;
  pending_.push_back(std::move(f));
}

StepResult FaultInjectingDevice::execute(const StepPlan& plan) {
  ShadowKv& shadow = inner_->shadow();
  std::vector<Fault> later;
  for (Fault& f : pending_) {
    if (f.step != plan.step) {
      later.push_back(std::move(f));
      continue;
    }
    switch (f.kind) {
      case Fault::Kind::kOverwrite:
        shadow.store_raw(f.slot, f.fingerprint);
        ++overwrites_fired_;
        break;
      case Fault::Kind::kDrop:
        shadow.arm(CacheWriteFault{f.request, f.position, -1});
        break;
      case Fault::Kind::kMisdirect:
        shadow.arm(CacheWriteFault{f.request, f.position, f.slot});
        break;
      case Fault::Kind::kSwap:
        shadow.arm(TableSwapFault{f.request, f.i, f.j});
        break;
    }
  }
  pending_ = std::move(later);
  return inner_->execute(plan);
}

}  // namespace kv::sim
