// The project's stateful properties, one function per level and variant. Each is a RapidCheck
// property (`void()`, drawing its inputs with `*gen`); all_properties() (harness.h) lists them
// with names for ctest and `kvsim fuzz`.
#pragma once

#include <string>

#include "model/policies/eviction_policy.h"
#include "model/types.h"

namespace kv::props {

// Level (a): FreeBlockQueue against a std::vector model.
void queue_property();

// Level (b): KvCacheManager (and its BlockPool) against ManagerModel.
enum class ManagerVariant {
  kCaching,       // prefix caching on, eagle off
  kCachingEagle,  // prefix caching on, eagle on
  kNoCaching,     // prefix caching off
};
const char* to_string(ManagerVariant v);
// `policy`: the eviction policy under test; ManagerModel follows it through ModelPolicy, so
// every check (free queue order included) applies to every policy.
void manager_property(FreeOrder order, ManagerVariant variant, EvictionPolicyKind policy = EvictionPolicyKind::kLru);

// Level (b'): KvCacheManager on random layouts of full, sliding, chunked and Mamba groups, with
// eagle, lookahead slots, rolled-back drafts, new_step and every eviction policy, against
// brute-force hit lengths and each group type's invariants.
void hybrid_property();

// Level (c): Scheduler + SimDevice with full shadow-memory verification, speculative decoding
// included.
void scheduler_property(FreeOrder order);

// Level (c): Scheduler against ReferenceScheduler (vLLM's rules, written apart), every step's
// decisions on random workloads over the scheduler's options, speculative decoding and the
// Mamba align chunk split included.
void scheduler_reference_property();

}  // namespace kv::props
