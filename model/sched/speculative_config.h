// SpeculativeConfig: which drafter proposes tokens for verification and how many, as vLLM's
// SpeculativeConfig, and the three numbers vLLM derives from it for the scheduler
// (docs/semantics.md §5.9): whether the prefix-cache hit drops its last block (use_eagle),
// how many slots are allocated beyond the scheduled tokens (num_lookahead_tokens), and how many
// slots per sequence the drafter adds to a batch (drafting_slots_per_seq), which lowers the
// scheduler's token budget.
// Invariants:
//   1. method == kNone exactly when speculation is off; then K == 0, parallel drafting is off
//      and every derived number is 0 (the scheduler makes the decisions it makes without it).
//   2. dflash and dspark always draft in parallel (vLLM forces it); lookup drafters (ngram,
//      suffix) and medusa never do.
//   3. The derived numbers are pure functions of (method, K, parallel drafting).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "model/util/status.h"

namespace kv {

enum class SpecMethod {
  kNone,
  kEagle,
  kEagle3,
  kMtp,  // multi-token prediction heads, run as eagle
  kDspark,
  kDflash,
  kDraftModel,  // a smaller model of the same family
  kNgram,       // lookup in the request's own tokens: 0..K drafts
  kSuffix,      // lookup in a suffix tree: 0..K drafts
  kMedusa,
};

// "eagle", "eagle3", "mtp", "dspark", "dflash", "draft_model", "ngram", "suffix", "medusa"
// ("none" for kNone), as vLLM's --speculative-config names them.
const char* to_string(SpecMethod method);
std::optional<SpecMethod> parse_spec_method(std::string_view name);

struct SpeculativeConfig {
  SpecMethod method = SpecMethod::kNone;
  int num_speculative_tokens = 0;  // K: drafts proposed per request and step (at most)
  bool parallel_drafting = false;  // as asked; dflash and dspark draft in parallel anyway
  // Not vLLM's: the simulated device's synthetic rejection sampler (sim/sim_device.h), one
  // probability per draft position; position i is accepted only if every earlier one was.
  // The scheduler never reads it.
  std::vector<double> acceptance_rates;

  bool enabled() const { return method != SpecMethod::kNone; }
  // Parallel drafting as vLLM resolves it (invariant 2).
  bool drafts_in_parallel() const;
  // Eagle-style drafters (eagle, eagle3, mtp, dspark, dflash) reuse the target's KV: the
  // prefix-cache hit drops its last block.
  bool use_eagle() const;
  // Slots allocated beyond a step's scheduled tokens for the drafter's own KV: K for model
  // drafters, K + 1 for dflash, 0 for lookup drafters and medusa.
  int num_lookahead_tokens() const;
  // Extra slots the drafter inserts per sequence into a batch: K - 1 for eagle-style parallel
  // drafting, 1 (K in parallel) for a draft model, 0 otherwise.
  int drafting_slots_per_seq() const;
  // What vLLM refuses: K below 1 with a method, K or parallel drafting without one, parallel
  // drafting for a drafter that cannot do it.
  Status validate() const;
};

}  // namespace kv
