// KernelClass: the three classes of kernels that a GPU preset may give roofline terms of their
// own (sim/hardware_specs.h: per-class efficiencies and a fixed time per launch) and that
// `kvsim calibrate` fits one by one (sim/calibration.h).
// Invariants: every Kernel belongs to exactly one class, by kernel_class() alone (the cost model
// and the calibration fit both use it); the projections and the LM head are gemm, attention is
// attention, every other kernel (norms, rotary, SiLU, slot mapping, cache write) is elementwise.
// Work the cost model prices without a Kernel of its own (sim/cost_model.h) is classed the same
// way: Mamba and encoder GEMMs are gemm, encoder and cross attention are attention, the Mamba
// state read/write and scan and the cross K/V cache write are elementwise.
#pragma once

#include <array>
#include <string_view>

#include "sim/kernels.h"

namespace kv::sim {

enum class KernelClass { kGemm, kAttention, kElementwise };
inline constexpr int kNumKernelClasses = 3;

inline constexpr std::array<std::string_view, kNumKernelClasses> kKernelClassNames = {"gemm", "attention",
                                                                                      "elementwise"};

inline std::string_view kernel_class_name(KernelClass c) { return kKernelClassNames[static_cast<int>(c)]; }

inline KernelClass kernel_class(Kernel k) {
  switch (k) {
    case Kernel::kQkvProj:
    case Kernel::kOProj:
    case Kernel::kGateUpProj:
    case Kernel::kDownProj:
    case Kernel::kLmHead:
      return KernelClass::kGemm;
    case Kernel::kAttention:
      return KernelClass::kAttention;
    default:
      return KernelClass::kElementwise;
  }
}

}  // namespace kv::sim
