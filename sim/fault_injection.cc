#include "sim/fault_injection.h"

#include <cerrno>
#include <cstdlib>

#include "model/util/check.h"

namespace kv::sim {

namespace {

constexpr std::pair<FaultSpec::Kind, std::string_view> kKindNames[] = {
    {FaultSpec::Kind::kOverwrite, "overwrite"},
    {FaultSpec::Kind::kDrop, "drop"},
    {FaultSpec::Kind::kMisdirect, "misdirect"},
    {FaultSpec::Kind::kSwap, "swap"},
};

std::string_view kind_name(FaultSpec::Kind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "?";
}

const ScheduledRequest* find_in_plan(const StepPlan& plan, const RequestId& id) {
  for (const ScheduledRequest& r : plan.requests) {
    if (id.empty() || r.id == id) return &r;
  }
  return nullptr;
}

// The request's block table as the step's kernels will see it.
std::vector<BlockId> table_in_step(const ShadowKv& shadow, const ScheduledRequest& r) {
  std::vector<BlockId> table;
  if (!r.is_new) {
    const auto before = shadow.table(r.id);
    table.assign(before.begin(), before.end());
  }
  table.insert(table.end(), r.block_ids.begin(), r.block_ids.end());
  return table;
}

}  // namespace

std::string FaultSpec::to_string() const {
  std::string s = std::string(kind_name(kind)) + "@" + std::to_string(step);
  if (!request.empty()) s += ":" + request;
  return s;
}

StatusOr<FaultSpec> parse_fault_spec(std::string_view text) {
  const std::string usage =
      "expected KIND@STEP[:REQUEST] with KIND overwrite, drop, misdirect or swap, got '" + std::string(text) + "'";
  const std::size_t at = text.find('@');
  if (at == std::string_view::npos) return Status::error(usage);
  FaultSpec spec;
  bool known = false;
  for (const auto& [k, name] : kKindNames) {
    if (name == text.substr(0, at)) {
      spec.kind = k;
      known = true;
    }
  }
  if (!known) return Status::error(usage);
  const std::size_t colon = text.find(':', at);
  const std::string step(
      text.substr(at + 1, colon == std::string_view::npos ? std::string_view::npos : colon - at - 1));
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(step.c_str(), &end, 10);
  if (step.empty() || *end != '\0' || errno == ERANGE || v < 0) {
    return Status::error("step '" + step + "' is not a non-negative integer; " + usage);
  }
  spec.step = v;
  if (colon != std::string_view::npos) {
    spec.request = std::string(text.substr(colon + 1));
    if (spec.request.empty()) return Status::error("empty request id; " + usage);
  }
  return spec;
}

FaultInjectingDevice::FaultInjectingDevice(std::unique_ptr<SimDevice> inner) : inner_(std::move(inner)) {
  KV_CHECK(inner_ != nullptr);
}

void FaultInjectingDevice::overwrite_slot(std::int64_t step, std::int64_t slot, std::uint64_t fingerprint) {
  Fault f;
  f.kind = Fault::Kind::kOverwrite;
  f.step = step;
  f.slot = slot;
  f.fingerprint = fingerprint;
  pending_.push_back(std::move(f));
}

void FaultInjectingDevice::drop_cache_write(std::int64_t step, const RequestId& request, std::int64_t position) {
  Fault f;
  f.kind = Fault::Kind::kDrop;
  f.step = step;
  f.request = request;
  f.position = position;
  pending_.push_back(std::move(f));
}

void FaultInjectingDevice::misdirect_cache_write(std::int64_t step, const RequestId& request, std::int64_t position,
                                                 std::int64_t slot) {
  Fault f;
  f.kind = Fault::Kind::kMisdirect;
  f.step = step;
  f.request = request;
  f.position = position;
  f.slot = slot;
  pending_.push_back(std::move(f));
}

void FaultInjectingDevice::swap_block_table_entries(std::int64_t step, const RequestId& request, std::size_t i,
                                                    std::size_t j) {
  Fault f;
  f.kind = Fault::Kind::kSwap;
  f.step = step;
  f.request = request;
  f.i = i;
  f.j = j;
  pending_.push_back(std::move(f));
}

void FaultInjectingDevice::inject(const FaultSpec& spec) { specs_.push_back(spec); }

std::optional<FaultInjectingDevice::Fault> FaultInjectingDevice::resolve(const FaultSpec& spec, const StepPlan& plan,
                                                                         std::string* description) {
  const ShadowKv& shadow = inner_->shadow();
  const std::int64_t b = plan.block_size;
  Fault f;
  f.step = plan.step;
  std::string what;
  if (spec.kind == FaultSpec::Kind::kOverwrite) {
    // The named request (scheduled in this step or not), or the step's first one with computed
    // tokens: a live request that relies on its position 0.
    f.request = spec.request;
    for (std::size_t i = 0; f.request.empty() && i < plan.requests.size(); ++i) {
      if (shadow.num_computed(plan.requests[i].id) > 0) f.request = plan.requests[i].id;
    }
    if (f.request.empty() || shadow.num_computed(f.request) <= 0) return std::nullopt;
    f.kind = Fault::Kind::kOverwrite;
    f.slot = shadow.table(f.request)[0] * b;
    f.fingerprint = 0xbadc0ffee0ddf00dULL;
    what = "position 0, slot " + std::to_string(f.slot) + " (a stray store)";
  } else {
    const ScheduledRequest* r = find_in_plan(plan, spec.request);
    if (r == nullptr || r->token_ids.empty()) return std::nullopt;
    const std::vector<BlockId> table = table_in_step(shadow, *r);
    f.request = r->id;
    if (spec.kind == FaultSpec::Kind::kSwap) {
      if (table.size() < 2) return std::nullopt;
      f.kind = Fault::Kind::kSwap;
      f.i = 0;
      f.j = table.size() - 1;
      what = "table entries 0 and " + std::to_string(f.j) + " (blocks " + std::to_string(table[0]) + " and " +
             std::to_string(table[f.j]) + ", slots " + std::to_string(table[0] * b) + " and " +
             std::to_string(table[f.j] * b) + ")";
    } else {
      f.kind = spec.kind == FaultSpec::Kind::kDrop ? Fault::Kind::kDrop : Fault::Kind::kMisdirect;
      f.position = r->num_computed_tokens;
      f.slot = spec.kind == FaultSpec::Kind::kDrop ? -1 : 0;
      const std::int64_t home = table[static_cast<std::size_t>(f.position / b)] * b + f.position % b;
      what = "position " + std::to_string(f.position) + ", slot " + std::to_string(home) +
             (f.slot < 0 ? " (the cache write is skipped)" : " (written to slot 0 instead)");
    }
  }
  *description = std::string(kind_name(spec.kind)) + " at step " + std::to_string(plan.step) + ": request " +
                 f.request + ", " + what;
  return f;
}

StepResult FaultInjectingDevice::execute(const StepPlan& plan) {
  std::vector<FaultSpec> waiting;
  for (const FaultSpec& spec : specs_) {
    std::string description;
    std::optional<Fault> f = spec.step <= plan.step ? resolve(spec, plan, &description) : std::nullopt;
    if (!f) {
      waiting.push_back(spec);
      continue;
    }
    pending_.push_back(std::move(*f));
    fired_.push_back(std::move(description));
  }
  specs_ = std::move(waiting);
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
