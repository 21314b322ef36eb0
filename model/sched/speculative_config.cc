#include "model/sched/speculative_config.h"

#include <string>

namespace kv {
namespace {

constexpr SpecMethod kMethods[] = {
    SpecMethod::kNone,   SpecMethod::kEagle,      SpecMethod::kEagle3, SpecMethod::kMtp,    SpecMethod::kDspark,
    SpecMethod::kDflash, SpecMethod::kDraftModel, SpecMethod::kNgram,  SpecMethod::kSuffix, SpecMethod::kMedusa};

bool is_eagle_style(SpecMethod m) {
  return m == SpecMethod::kEagle || m == SpecMethod::kEagle3 || m == SpecMethod::kMtp || m == SpecMethod::kDspark ||
         m == SpecMethod::kDflash;
}

// Drafters that look their drafts up instead of running a model, and medusa's heads: no
// drafter KV, no extra batch slots, no parallel drafting.
bool drafts_without_kv(SpecMethod m) {
  return m == SpecMethod::kNgram || m == SpecMethod::kSuffix || m == SpecMethod::kMedusa;
}

}  // namespace

const char* to_string(SpecMethod method) {
  switch (method) {
    case SpecMethod::kNone:
      return "none";
    case SpecMethod::kEagle:
      return "eagle";
    case SpecMethod::kEagle3:
      return "eagle3";
    case SpecMethod::kMtp:
      return "mtp";
    case SpecMethod::kDspark:
      return "dspark";
    case SpecMethod::kDflash:
      return "dflash";
    case SpecMethod::kDraftModel:
      return "draft_model";
    case SpecMethod::kNgram:
      return "ngram";
    case SpecMethod::kSuffix:
      return "suffix";
    case SpecMethod::kMedusa:
      return "medusa";
  }
  return "?";
}

std::optional<SpecMethod> parse_spec_method(std::string_view name) {
  for (SpecMethod m : kMethods) {
    if (name == to_string(m)) return m;
  }
  return std::nullopt;
}

bool SpeculativeConfig::drafts_in_parallel() const {
  return method == SpecMethod::kDflash || method == SpecMethod::kDspark ||
         (parallel_drafting && enabled() && !drafts_without_kv(method));
}

bool SpeculativeConfig::use_eagle() const { return is_eagle_style(method); }

int SpeculativeConfig::num_lookahead_tokens() const {
  if (!enabled() || drafts_without_kv(method)) return 0;
  return method == SpecMethod::kDflash ? num_speculative_tokens + 1 : num_speculative_tokens;
}

int SpeculativeConfig::drafting_slots_per_seq() const {
  if (!enabled() || drafts_without_kv(method)) return 0;
  const int k = num_speculative_tokens;
  if (method == SpecMethod::kDraftModel) return drafts_in_parallel() ? k : 1;
  return drafts_in_parallel() ? k - 1 : 0;
}

Status SpeculativeConfig::validate() const {
  const std::string k = std::to_string(num_speculative_tokens);
  if (!enabled()) {
    if (num_speculative_tokens != 0 || parallel_drafting) {
      return Status::error("num_speculative_tokens (" + k +
                           ") or parallel drafting given without a speculative method");
    }
    return {};
  }
  if (num_speculative_tokens < 1) {
    return Status::error(std::string("num_speculative_tokens must be at least 1 for ") + to_string(method) + ", got " +
                         k);
  }
  if (parallel_drafting && drafts_without_kv(method)) {
    return Status::error(std::string("parallel drafting needs a model drafter (eagle, eagle3, mtp, dspark, ") +
                         "dflash or draft_model), not " + to_string(method));
  }
  return {};
}

}  // namespace kv
