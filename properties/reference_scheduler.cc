#include "properties/reference_scheduler.h"

#include <algorithm>
#include <span>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "model/util/check.h"

namespace kv::props {
namespace {

template <typename T>
std::string show(const std::vector<T>& items) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if constexpr (std::is_same_v<T, StepDecisions::Admitted>) {
      const auto& a = items[i];
      os << (i ? "," : "") << a.id << ":" << a.tokens << "/hit " << a.hit << (a.resumed ? "/resumed" : "");
    } else if constexpr (std::is_same_v<T, std::pair<RequestId, std::int64_t>>) {
      os << (i ? "," : "") << items[i].first << ":" << items[i].second;
    } else {
      os << (i ? "," : "") << items[i];
    }
  }
  return os.str() + "]";
}

std::string show(const std::map<RequestId, std::pair<std::int64_t, std::int64_t>>& counters) {
  std::ostringstream os;
  os << "{";
  for (const auto& [id, c] : counters) os << id << ":" << c.first << "/" << c.second << " ";
  return os.str() + "}";
}

std::string show(const std::map<RequestId, std::int64_t>& held) {
  std::ostringstream os;
  os << "{";
  for (const auto& [id, n] : held) os << id << ":" << n << " ";
  return os.str() + "}";
}

std::string show(const std::array<std::int64_t, 3>& stats) {
  return "[" + std::to_string(stats[0]) + "," + std::to_string(stats[1]) + "," + std::to_string(stats[2]) + "]";
}

}  // namespace

std::vector<TokenId> draft_tokens(const OutputTokens& outputs, std::int64_t num_outputs, int n) {
  std::vector<TokenId> drafts;
  for (int k = 0; k < n; ++k) {
    const auto at = static_cast<std::size_t>(num_outputs + k);
    drafts.push_back(outputs[std::min(at, outputs.size() - 1)]);
  }
  return drafts;
}

std::string first_difference(const StepDecisions& want, const StepDecisions& got) {
  const auto differ = [](const char* field, const std::string& w, const std::string& g) {
    return std::string(field) + ": want " + w + ", got " + g;
  };
  if (want.scheduled_running != got.scheduled_running) {
    return differ("scheduled_running", show(want.scheduled_running), show(got.scheduled_running));
  }
  if (want.admitted != got.admitted) return differ("admitted", show(want.admitted), show(got.admitted));
  if (want.total_tokens != got.total_tokens) {
    return differ("total_tokens", std::to_string(want.total_tokens), std::to_string(got.total_tokens));
  }
  if (want.preempted != got.preempted) return differ("preempted", show(want.preempted), show(got.preempted));
  if (want.finished != got.finished) return differ("finished", show(want.finished), show(got.finished));
  if (want.waiting != got.waiting) return differ("waiting", show(want.waiting), show(got.waiting));
  if (want.running != got.running) return differ("running", show(want.running), show(got.running));
  if (want.counters != got.counters) return differ("computed/outputs", show(want.counters), show(got.counters));
  if (want.scheduled_drafts != got.scheduled_drafts) {
    return differ("scheduled_drafts", show(want.scheduled_drafts), show(got.scheduled_drafts));
  }
  if (want.held_drafts != got.held_drafts) return differ("held_drafts", show(want.held_drafts), show(got.held_drafts));
  if (want.spec_stats != got.spec_stats) return differ("spec_stats", show(want.spec_stats), show(got.spec_stats));
  if (want.free_blocks_after_schedule != got.free_blocks_after_schedule) {
    return differ("free_blocks_after_schedule", std::to_string(want.free_blocks_after_schedule),
                  std::to_string(got.free_blocks_after_schedule));
  }
  if (want.free_blocks != got.free_blocks) {
    return differ("free_blocks", std::to_string(want.free_blocks), std::to_string(got.free_blocks));
  }
  return "";
}

// The golden-spec README's table: what the scheduler derives from the speculative method.
ReferenceScheduler::Derived ReferenceScheduler::derive(const SchedulerConfig& config) {
  Derived d;
  const SpeculativeConfig& spec = config.speculative;
  d.use_eagle = config.cache.use_eagle;
  d.lookahead = config.num_lookahead_tokens;
  if (spec.method == SpecMethod::kNone) return d;
  const int k = spec.num_speculative_tokens;
  d.k = k;
  d.lookahead = 0;
  switch (spec.method) {
    case SpecMethod::kEagle:
    case SpecMethod::kEagle3:
    case SpecMethod::kMtp:
      d.use_eagle = true;
      d.lookahead = k;
      d.drafting_slots = spec.parallel_drafting ? k - 1 : 0;
      break;
    case SpecMethod::kDspark:
    case SpecMethod::kDflash:
      d.use_eagle = true;
      d.lookahead = spec.method == SpecMethod::kDflash ? k + 1 : k;
      d.drafting_slots = k - 1;
      break;
    case SpecMethod::kDraftModel:
      d.lookahead = k;
      d.drafting_slots = spec.parallel_drafting ? k : 1;
      break;
    default:  // ngram, suffix, medusa: no drafter KV, no slots
      break;
  }
  return d;
}

namespace {

KvCacheConfig reference_cache(const SchedulerConfig& config, bool use_eagle) {
  KvCacheConfig cache = config.cache;
  cache.use_eagle = use_eagle;
  cache.max_in_flight_tokens = config.max_num_batched_tokens;
  return cache;
}

std::int64_t mamba_align_block(const KvCacheConfig& cache) {
  for (const KvCacheGroupSpec& g : cache.groups) {
    if (g.spec.type == AttentionType::kMamba && g.spec.mamba_mode == MambaCacheMode::kAlign) return g.spec.block_size;
  }
  return 0;
}

}  // namespace

ReferenceScheduler::ReferenceScheduler(const SchedulerConfig& config)
    : config_(config),
      spec_(derive(config)),
      budget_(config.max_num_batched_tokens - spec_.drafting_slots * config.max_num_seqs),
      align_block_(mamba_align_block(config.cache)),
      hasher_(config.hash_algo, config.hash_seed),
      kv_(reference_cache(config, spec_.use_eagle)) {}

void ReferenceScheduler::add_request(const RequestSpec& spec) {
  auto seq = std::make_unique<Seq>();
  seq->request = std::make_unique<Request>(spec.id, spec.prompt, spec.extras,
                                           config_.cache.enable_caching ? &hasher_ : nullptr, config_.cache.block_size);
  seq->outputs = spec.outputs;
  seq->priority = spec.priority;
  seq->arrival = spec.arrival_time_us;
  waiting_.push_back(seq.get());
  live_[spec.id] = std::move(seq);
}

void ReferenceScheduler::abort(const RequestId& id) {
  auto it = live_.find(id);
  if (it != live_.end()) drop(it->second.get());
}

void ReferenceScheduler::drop(Seq* s) {
  const RequestId id = s->request->id();
  kv_.free(*s->request);
  std::erase(waiting_, s);
  std::erase(running_, s);
  live_.erase(id);  // s is gone
}

StepDecisions ReferenceScheduler::step(std::int64_t step, const SpecAnswers* answers) {
  KV_CHECK(spec_.k == 0 || answers != nullptr, "reference: speculative decoding needs the executor's answers");
  StepDecisions d;
  std::vector<Chunk> chunks;  // running ones first, then admitted ones: the schedule order
  std::int64_t budget = budget_;
  kv_.new_step();  // the states cached in the last step can be hit from now on
  running_pass(chunks, budget, d);
  if (d.preempted.empty()) waiting_pass(chunks, budget, d);
  std::vector<RequestId> scheduled;
  for (const Chunk& c : chunks) {
    Request& r = *c.seq->request;
    r.num_computed_tokens += c.tokens;
    c.seq->prefilling = r.num_computed_tokens < r.num_tokens();
    d.total_tokens += c.tokens;
    if (c.drafts > 0) d.scheduled_drafts.emplace_back(r.id(), c.drafts);
    scheduled.push_back(r.id());
  }
  d.free_blocks_after_schedule = kv_.num_free_blocks();
  sample_and_stop(chunks, step, answers, d);
  if (d.total_tokens > 0) propose_drafts(scheduled, step, answers);
  d.waiting = waiting_order();
  for (const Seq* s : running_) d.running.push_back(s->request->id());
  for (const auto& [id, s] : live_) {
    d.counters[id] = {s->request->num_computed_tokens, s->request->num_output_tokens()};
    d.held_drafts[id] = static_cast<std::int64_t>(s->drafts.size());
  }
  d.free_blocks = kv_.num_free_blocks();
  return d;
}

// README 1: every running request in list order (its held drafts after its tokens), capped by
// the threshold, the budget and max_model_len - computed - 1, then cut by the Mamba split (0:
// skipped); a request that does not fit preempts until it does. The drafts inside the chunk
// are verified; the request holds none afterwards.
void ReferenceScheduler::running_pass(std::vector<Chunk>& chunks, std::int64_t& budget, StepDecisions& d) {
  const std::int64_t threshold = config_.long_prefill_token_threshold;
  std::size_t index = 0;
  while (index < running_.size() && budget > 0) {
    Seq& s = *running_[index];
    const Request& r = *s.request;
    std::int64_t n = r.num_tokens() + static_cast<std::int64_t>(s.drafts.size()) - r.num_computed_tokens;
    if (threshold > 0 && n > threshold) n = threshold;
    n = std::min(n, budget);
    n = std::min(n, config_.cache.max_model_len - r.num_computed_tokens - 1);
    if (align_block_ > 0 && n > 0) n = align_split(s, r.num_computed_tokens, n);
    if (n <= 0) {
      ++index;
      continue;
    }
    if (!fit_or_preempt(s, n, chunks, budget, index, d)) return;  // s preempted itself
    const std::int64_t verified = std::max<std::int64_t>(r.num_computed_tokens + n - r.num_tokens(), 0);
    chunks.push_back({&s, n, verified, false});
    s.drafts.clear();
    budget -= n;
    d.scheduled_running.emplace_back(r.id(), n);
    ++index;
  }
}

// Allocates n slots for s, preempting one victim at a time. FCFS: the last running request;
// priority: the first running request with the largest (priority, arrival), and a victim
// already scheduled in this step gives its tokens back. False when the victim was s itself.
bool ReferenceScheduler::fit_or_preempt(Seq& s, std::int64_t n, std::vector<Chunk>& chunks, std::int64_t& budget,
                                        std::size_t& index, StepDecisions& d) {
  while (!kv_.allocate_slots(*s.request, n, {}, spec_.lookahead)) {
    std::size_t at = running_.size() - 1;
    if (config_.policy == SchedulingPolicy::kPriority) {
      at = 0;
      for (std::size_t k = 1; k < running_.size(); ++k) {
        const Seq* a = running_[k];
        const Seq* best = running_[at];
        if (a->priority > best->priority || (a->priority == best->priority && a->arrival > best->arrival)) at = k;
      }
    }
    Seq* victim = running_[at];
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(at));
    if (at < index) --index;  // every request before s was scheduled in this step
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      if (chunks[k].seq != victim) continue;
      budget += chunks[k].tokens;
      chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(k));
      d.scheduled_running.erase(d.scheduled_running.begin() + static_cast<std::ptrdiff_t>(k));
      break;
    }
    kv_.free(*victim->request);
    victim->request->num_computed_tokens = 0;
    victim->drafts.clear();
    victim->was_preempted = true;
    if (config_.policy == SchedulingPolicy::kFcfs) {
      waiting_.insert(waiting_.begin(), victim);
    } else {
      waiting_.push_back(victim);
    }
    d.preempted.push_back(victim->request->id());
    if (victim == &s) return false;
  }
  return true;
}

// README 2: admit from the head while budget, max_num_seqs and the pool allow; the first
// request that does not fit stops the pass. With speculation, a one-token admission next to
// running decodes only is padded to 1 + K tokens (K padding drafts) or not admitted.
void ReferenceScheduler::waiting_pass(std::vector<Chunk>& chunks, std::int64_t& budget, StepDecisions& d) {
  const std::int64_t threshold = config_.long_prefill_token_threshold;
  const bool pad = spec_.k > 0 && !chunks.empty() &&
                   std::none_of(chunks.begin(), chunks.end(), [](const Chunk& c) { return c.seq->prefilling; });
  while (budget > 0 && !waiting_.empty()) {
    if (static_cast<int>(running_.size()) >= config_.max_num_seqs) return;
    const std::size_t head = waiting_head();
    Seq& s = *waiting_[head];
    Request& r = *s.request;
    const CacheHit hit = config_.cache.enable_caching ? kv_.get_computed_blocks(r) : CacheHit{};
    s.junction = hit.shared_prefix_boundary;
    std::int64_t n = r.num_tokens() - hit.num_tokens;
    const bool padded = pad && n == 1;
    if (padded) {
      n = 1 + spec_.k;
      if (n > budget || hit.num_tokens + n > config_.cache.max_model_len) return;
    }
    if (threshold > 0 && n > threshold) n = threshold;
    if (!config_.enable_chunked_prefill && n > budget) return;
    n = std::min(n, budget);
    if (align_block_ > 0 && !padded) {
      n = align_split(s, hit.num_tokens, n);
      if (n == 0) return;
    }
    if (!kv_.allocate_slots(r, n, hit, spec_.lookahead, config_.full_sequence_gate)) return;
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(head));
    running_.push_back(&s);
    r.num_computed_tokens = hit.num_tokens;
    chunks.push_back({&s, n, padded ? spec_.k : 0, padded});
    budget -= n;
    d.admitted.push_back({r.id(), n, hit.num_tokens, s.was_preempted});
  }
}

// The golden-spec README's chunk split: the chunk [start, start + n) ends where a Mamba state
// can be cached (a block end, the last cacheable position P, or the block end before J).
std::int64_t ReferenceScheduler::align_split(const Seq& s, std::int64_t start, std::int64_t n) const {
  const Request& r = *s.request;
  const std::int64_t b = align_block_;
  if (start >= std::max(r.num_prompt_tokens(), r.num_tokens() - 1)) return n;
  const std::int64_t p = std::max<std::int64_t>(r.num_tokens() / b * b - (spec_.use_eagle ? b : 0), 0);
  std::int64_t end = start + n;
  if (end < p) end = end / b * b;
  std::vector<std::int64_t> stops{p};
  if (start % b != 0 && (start / b + 1) * b <= p) stops.push_back((start / b + 1) * b);
  if (s.junction > start && s.junction < end) stops.push_back(start + (s.junction - start) / b * b);
  std::int64_t cut = end;
  for (std::int64_t pos : stops) {
    if (pos > start && pos < cut) cut = pos;
  }
  return std::max<std::int64_t>(cut - start, 0);
}

std::size_t ReferenceScheduler::waiting_head() const {
  if (config_.policy == SchedulingPolicy::kFcfs) return 0;
  std::size_t best = 0;
  for (std::size_t k = 1; k < waiting_.size(); ++k) {
    const Seq* a = waiting_[k];
    const Seq* b = waiting_[best];
    if (std::tie(a->priority, a->arrival, a->request->id()) < std::tie(b->priority, b->arrival, b->request->id())) {
      best = k;
    }
  }
  return best;
}

std::vector<RequestId> ReferenceScheduler::waiting_order() const {
  std::vector<const Seq*> order(waiting_.begin(), waiting_.end());
  if (config_.policy == SchedulingPolicy::kPriority) {
    std::sort(order.begin(), order.end(), [](const Seq* a, const Seq* b) {
      return std::tie(a->priority, a->arrival, a->request->id()) < std::tie(b->priority, b->arrival, b->request->id());
    });
  }
  std::vector<RequestId> ids;
  for (const Seq* s : order) ids.push_back(s->request->id());
  return ids;
}

// README 4-5: a request whose computed tokens reach its tokens gets its accepted drafts and
// one sampled token, its next outputs (the rejected drafts are rolled back first); it stops at
// max_tokens outputs or max_model_len tokens and frees its blocks, in schedule order.
void ReferenceScheduler::sample_and_stop(const std::vector<Chunk>& chunks, std::int64_t step,
                                         const SpecAnswers* answers, StepDecisions& d) {
  for (const Chunk& c : chunks) {
    Seq& s = *c.seq;
    Request& r = *s.request;
    if (r.num_computed_tokens < r.num_tokens()) continue;  // in the middle of a prefill
    int accepted = 0;
    if (c.drafts > 0) {
      const int real = c.padded ? 0 : static_cast<int>(c.drafts);
      accepted = std::clamp(answers->accepted(r.id(), step, real), 0, real);
      if (r.num_computed_tokens > 0) r.num_computed_tokens -= c.drafts - accepted;
      d.spec_stats[0] += 1;
      d.spec_stats[1] += c.drafts;
      d.spec_stats[2] += accepted;
    }
    for (int k = 0; k <= accepted; ++k) {
      if (append(s, s.outputs[static_cast<std::size_t>(r.num_output_tokens())], d)) break;  // s is gone
    }
  }
}

bool ReferenceScheduler::append(Seq& s, TokenId token, StepDecisions& d) {
  Request& r = *s.request;
  r.append_tokens(std::span<const TokenId>(&token, 1));
  const bool done = r.num_output_tokens() >= static_cast<std::int64_t>(s.outputs.size()) ||
                    r.num_tokens() >= config_.cache.max_model_len;
  if (!done) return false;
  d.finished.push_back(r.id());
  drop(&s);
  return true;
}

// README 6: every scheduled request still live holds the drafter's proposals (its next
// outputs), or none while it is prefilling.
void ReferenceScheduler::propose_drafts(const std::vector<RequestId>& scheduled, std::int64_t step,
                                        const SpecAnswers* answers) {
  if (spec_.k == 0) return;
  for (const RequestId& id : scheduled) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    Seq& s = *it->second;
    s.drafts.clear();
    if (s.prefilling) continue;
    const int n = std::clamp(answers->drafts(id, step, s.request->num_tokens()), 0, spec_.k);
    s.drafts = draft_tokens(s.outputs, s.request->num_output_tokens(), n);
  }
}

}  // namespace kv::props
