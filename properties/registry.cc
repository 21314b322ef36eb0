#include <algorithm>

#include "properties/harness.h"
#include "properties/properties.h"

// Default case counts are scaled by KVSIM_PROPS_CASE_PERCENT (a compile definition: smaller
// under sanitizers) so that the whole default ctest run stays within its time budget.
#ifndef KVSIM_PROPS_CASE_PERCENT
#define KVSIM_PROPS_CASE_PERCENT 1000
#endif

namespace kv::props {
namespace {

int scaled(int cases) { return std::max(1, cases * KVSIM_PROPS_CASE_PERCENT / 100); }

}  // namespace

const std::vector<PropertyDef>& all_properties() {
  static const std::vector<PropertyDef> defs = [] {
    std::vector<PropertyDef> d;
    d.push_back({"queue", "queue", [] { queue_property(); }, scaled(500)});
    for (FreeOrder order : {FreeOrder::kClassic, FreeOrder::kUnhashedFirst}) {
      for (ManagerVariant v : {ManagerVariant::kCaching, ManagerVariant::kCachingEagle, ManagerVariant::kNoCaching}) {
        d.push_back({std::string("manager/") + to_string(order) + "/" + to_string(v), "manager",
                     [order, v] { manager_property(order, v); }, scaled(v == ManagerVariant::kNoCaching ? 150 : 300)});
      }
    }
    // The other eviction policies (their free order is their own: classic is just a label).
    for (EvictionPolicyKind p : {EvictionPolicyKind::kLfu, EvictionPolicyKind::kSlru, EvictionPolicyKind::kLeafLru,
                                 EvictionPolicyKind::kPriority}) {
      for (ManagerVariant v : {ManagerVariant::kCaching, ManagerVariant::kCachingEagle}) {
        d.push_back({std::string("manager/") + to_string(p) + "/" + to_string(v), "manager",
                     [p, v] { manager_property(FreeOrder::kClassic, v, p); },
                     scaled(v == ManagerVariant::kCaching ? 150 : 50)});
      }
    }
    d.push_back({"hybrid", "hybrid", [] { hybrid_property(); }, scaled(200)});
    for (FreeOrder order : {FreeOrder::kClassic, FreeOrder::kUnhashedFirst}) {
      d.push_back({std::string("scheduler/") + to_string(order), "scheduler", [order] { scheduler_property(order); },
                   scaled(200)});
    }
    d.push_back({"scheduler/reference", "scheduler", [] { scheduler_reference_property(); }, scaled(100)});
    return d;
  }();
  return defs;
}

}  // namespace kv::props
