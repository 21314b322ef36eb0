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

}  // namespace

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
  if (want.free_blocks_after_schedule != got.free_blocks_after_schedule) {
    return differ("free_blocks_after_schedule", std::to_string(want.free_blocks_after_schedule),
                  std::to_string(got.free_blocks_after_schedule));
  }
  if (want.free_blocks != got.free_blocks) {
    return differ("free_blocks", std::to_string(want.free_blocks), std::to_string(got.free_blocks));
  }
  return "";
}

ReferenceScheduler::ReferenceScheduler(const SchedulerConfig& config)
    : config_(config), hasher_(config.hash_algo, config.hash_seed), kv_(config.cache) {}

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

StepDecisions ReferenceScheduler::step() {
  StepDecisions d;
  std::vector<Chunk> chunks;  // running ones first, then admitted ones: the schedule order
  std::int64_t budget = config_.max_num_batched_tokens;
  running_pass(chunks, budget, d);
  if (d.preempted.empty()) waiting_pass(chunks, budget, d);
  for (const Chunk& c : chunks) {
    c.seq->request->num_computed_tokens += c.tokens;
    d.total_tokens += c.tokens;
  }
  d.free_blocks_after_schedule = kv_.num_free_blocks();
  sample_and_stop(chunks, d);
  d.waiting = waiting_order();
  for (const Seq* s : running_) d.running.push_back(s->request->id());
  for (const auto& [id, s] : live_) {
    d.counters[id] = {s->request->num_computed_tokens, s->request->num_output_tokens()};
  }
  d.free_blocks = kv_.num_free_blocks();
  return d;
}

// README 1: every running request in list order, capped by the threshold, the budget and
// max_model_len - computed - 1; a request that does not fit preempts until it does.
void ReferenceScheduler::running_pass(std::vector<Chunk>& chunks, std::int64_t& budget, StepDecisions& d) {
  const std::int64_t threshold = config_.long_prefill_token_threshold;
  std::size_t index = 0;
  while (index < running_.size() && budget > 0) {
    Seq& s = *running_[index];
    const Request& r = *s.request;
    std::int64_t n = r.num_tokens() - r.num_computed_tokens;
    if (threshold > 0 && n > threshold) n = threshold;
    n = std::min(n, budget);
    n = std::min(n, config_.cache.max_model_len - r.num_computed_tokens - 1);
    KV_CHECK(n > 0, "reference: running request " << r.id() << " has nothing to compute");
    if (!fit_or_preempt(s, n, chunks, budget, index, d)) return;  // s preempted itself
    chunks.push_back({&s, n});
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
  while (!kv_.allocate_slots(*s.request, n)) {
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
// request that does not fit stops the pass.
void ReferenceScheduler::waiting_pass(std::vector<Chunk>& chunks, std::int64_t& budget, StepDecisions& d) {
  const std::int64_t threshold = config_.long_prefill_token_threshold;
  while (budget > 0 && !waiting_.empty()) {
    if (static_cast<int>(running_.size()) >= config_.max_num_seqs) return;
    const std::size_t head = waiting_head();
    Seq& s = *waiting_[head];
    Request& r = *s.request;
    const CacheHit hit = config_.cache.enable_caching ? kv_.get_computed_blocks(r) : CacheHit{};
    std::int64_t n = r.num_tokens() - hit.num_tokens;
    if (threshold > 0 && n > threshold) n = threshold;
    if (!config_.enable_chunked_prefill && n > budget) return;
    n = std::min(n, budget);
    if (!kv_.allocate_slots(r, n, hit, 0, config_.full_sequence_gate)) return;
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(head));
    running_.push_back(&s);
    r.num_computed_tokens = hit.num_tokens;
    chunks.push_back({&s, n});
    budget -= n;
    d.admitted.push_back({r.id(), n, hit.num_tokens, s.was_preempted});
  }
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

// README 4-5: a request whose computed tokens reach its tokens samples its next output; it
// stops at max_tokens outputs or max_model_len tokens and frees its blocks, in schedule order.
void ReferenceScheduler::sample_and_stop(const std::vector<Chunk>& chunks, StepDecisions& d) {
  for (const Chunk& c : chunks) {
    Request& r = *c.seq->request;
    if (r.num_computed_tokens != r.num_tokens()) continue;
    const TokenId token = c.seq->outputs[static_cast<std::size_t>(r.num_output_tokens())];
    r.append_tokens(std::span<const TokenId>(&token, 1));
    const bool done = r.num_output_tokens() >= static_cast<std::int64_t>(c.seq->outputs.size()) ||
                      r.num_tokens() >= config_.cache.max_model_len;
    if (!done) continue;
    d.finished.push_back(r.id());
    drop(c.seq);
  }
}

}  // namespace kv::props
