#include "model/scheduler.h"

#include <algorithm>

#include "model/check.h"

namespace kv {

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config), hasher_(config.hash_algo, config.hash_seed), kv_(config.cache) {
  KV_CHECK(config.max_num_batched_tokens > 0, "max_num_batched_tokens must be positive");
  KV_CHECK(config.max_num_seqs > 0, "max_num_seqs must be positive");
}

Status Scheduler::add_request(RequestSpec spec) {
  const auto reject = [&](const std::string& why) {
    ++stats_.rejected;
    return Status::error("request " + spec.id + ": " + why);
  };
  if (entries_.count(spec.id)) return reject("id already in use by a live request");
  if (spec.prompt.empty()) return reject("empty prompt");
  if (spec.outputs.empty()) return reject("output length must be at least 1");
  const std::int64_t max_len = config_.cache.max_model_len;
  const auto prompt_len = static_cast<std::int64_t>(spec.prompt.size());
  if (prompt_len > max_len) {
    return reject("prompt of " + std::to_string(prompt_len) + " tokens exceeds max_model_len " +
                  std::to_string(max_len));
  }
  const std::int64_t total =
      std::min(prompt_len + static_cast<std::int64_t>(spec.outputs.size()), max_len);
  const std::int64_t b = config_.cache.block_size;
  const std::int64_t blocks = (total + b - 1) / b;
  if (blocks > config_.cache.num_blocks - 1) {
    return reject("needs " + std::to_string(blocks) + " KV blocks, the pool has " +
                  std::to_string(config_.cache.num_blocks - 1));
  }
  auto request = std::make_unique<Request>(spec.id, std::move(spec.prompt), std::move(spec.extras),
                                           config_.cache.enable_caching ? &hasher_ : nullptr,
                                           config_.cache.block_size);
  request->priority = spec.priority;
  request->arrival_time_us = spec.arrival_time_us;
  request->max_output_tokens = static_cast<std::int64_t>(spec.outputs.size());
  Request* r = request.get();
  entries_.emplace(spec.id, Entry{std::move(request), std::move(spec.outputs)});
  insert_waiting(r);
  stats_.max_waiting = std::max<std::int64_t>(stats_.max_waiting, static_cast<std::int64_t>(waiting_.size()));
  return {};
}

void Scheduler::insert_waiting(Request* r) {
  if (config_.policy == SchedulingPolicy::kFcfs) {
    waiting_.push_back(r);
    return;
  }
  // Priority: ordered by (priority, arrival time), stable for ties.
  auto pos = std::upper_bound(waiting_.begin(), waiting_.end(), r, [](const Request* a, const Request* b) {
    return std::pair(a->priority, a->arrival_time_us) < std::pair(b->priority, b->arrival_time_us);
  });
  waiting_.insert(pos, r);
}

void Scheduler::push_waiting_front(Request* r) {
  if (config_.policy == SchedulingPolicy::kFcfs) {
    waiting_.push_front(r);
  } else {
    insert_waiting(r);
  }
}

Request* Scheduler::pick_victim() {
  if (config_.policy == SchedulingPolicy::kFcfs) return running_.back();
  // vLLM: max over running of (priority, arrival time); the last such one on ties.
  Request* victim = running_.front();
  for (Request* r : running_) {
    if (std::pair(r->priority, r->arrival_time_us) >= std::pair(victim->priority, victim->arrival_time_us)) {
      victim = r;
    }
  }
  return victim;
}

void Scheduler::preempt(Request& r, StepPlan& plan) {
  kv_.free(r);
  stats_.recomputed_tokens += r.num_computed_tokens;
  ++stats_.preemptions;
  r.status = RequestStatus::kPreempted;
  r.num_computed_tokens = 0;
  ++r.num_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), &r));
  push_waiting_front(&r);
  plan.preempted.push_back(r.id());
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  plan.step = next_step_++;
  plan.block_size = config_.cache.block_size;
  plan.finished.swap(finished_since_last_step_);
  ++stats_.steps;

  struct Scheduled {
    Request* request;
    std::int64_t num_tokens;
    std::vector<BlockId> new_blocks;
    std::int64_t hit_tokens;
    bool is_new;
  };
  std::vector<Scheduled> scheduled;
  std::int64_t budget = config_.max_num_batched_tokens;
  const std::int64_t max_len = config_.cache.max_model_len;
  const std::int64_t threshold = config_.long_prefill_token_threshold;

  // 1. Running requests, in order.
  std::size_t i = 0;
  while (i < running_.size() && budget > 0) {
    Request& r = *running_[i];
    std::int64_t n = r.num_tokens() - r.num_computed_tokens;
    if (threshold > 0) n = std::min(n, threshold);
    n = std::min({n, budget, max_len - 1 - r.num_computed_tokens});
    if (n <= 0) {
      ++i;
      continue;
    }
    std::optional<std::vector<BlockId>> blocks;
    while (true) {
      blocks = kv_.allocate(r, n, {}, config_.num_lookahead_tokens);
      if (blocks) break;
      Request* victim = pick_victim();
      auto was = std::find_if(scheduled.begin(), scheduled.end(),
                              [&](const Scheduled& s) { return s.request == victim; });
      if (was != scheduled.end()) {  // priority policy: an earlier request of this step
        budget += was->num_tokens;
        scheduled.erase(was);
        --i;
      }
      preempt(*victim, plan);
      if (victim == &r) break;
    }
    if (!blocks) break;
    scheduled.push_back({&r, n, std::move(*blocks), 0, false});
    budget -= n;
    ++i;
  }

  // 2. Waiting requests, only if nothing was preempted in this step.
  if (plan.preempted.empty()) {
    while (!waiting_.empty() && budget > 0) {
      if (running_.size() >= static_cast<std::size_t>(config_.max_num_seqs)) break;
      Request& r = *waiting_.front();
      CacheHit hit;
      std::int64_t computed = r.num_computed_tokens;
      if (computed == 0) {
        hit = kv_.lookup(r);
        computed = hit.num_tokens;
      }
      std::int64_t n = r.num_tokens() - computed;
      if (threshold > 0 && n > threshold) n = threshold;
      if (!config_.enable_chunked_prefill && n > budget) break;
      n = std::min(n, budget);
      KV_CHECK(n > 0, "request " << r.id() << " has nothing to compute");
      auto blocks = kv_.allocate(r, n, hit, config_.num_lookahead_tokens, config_.full_sequence_gate);
      if (!blocks) break;  // head-of-line: the first request that does not fit stops admission
      waiting_.pop_front();
      running_.push_back(&r);
      r.status = RequestStatus::kRunning;
      r.num_computed_tokens = computed;
      if (r.num_cached_tokens < 0) r.num_cached_tokens = computed;
      scheduled.push_back({&r, n, {}, hit.num_tokens, true});
      budget -= n;
    }
  }

  // 3. The plan, then advance computed tokens (vLLM's _update_after_schedule).
  for (Scheduled& s : scheduled) {
    Request& r = *s.request;
    ScheduledRequest sr;
    sr.id = r.id();
    sr.is_new = s.is_new;
    if (s.is_new) {
      const auto table = kv_.blocks_of(r.id());
      sr.block_ids.assign(table.begin(), table.end());
    } else {
      sr.block_ids = std::move(s.new_blocks);
    }
    sr.num_computed_tokens = r.num_computed_tokens;
    sr.num_cached_tokens = s.hit_tokens;
    const auto toks = r.tokens();
    const auto begin = static_cast<std::size_t>(r.num_computed_tokens);
    const auto count = static_cast<std::size_t>(s.num_tokens);
    if (s.is_new) sr.context_token_ids.assign(toks.begin(), toks.begin() + static_cast<std::ptrdiff_t>(begin));
    sr.token_ids.assign(toks.begin() + static_cast<std::ptrdiff_t>(begin),
                        toks.begin() + static_cast<std::ptrdiff_t>(begin + count));
    sr.num_prompt_tokens = r.num_prompt_tokens();
    sr.samples = r.num_computed_tokens + s.num_tokens == r.num_tokens();
    if (sr.samples) {
      const Entry& e = entries_.at(r.id());
      sr.next_token = e.outputs[static_cast<std::size_t>(r.num_output_tokens())];
    }
    sr.lora_name = r.extras().lora_name;
    plan.total_tokens += s.num_tokens;
    r.num_computed_tokens += s.num_tokens;
    plan.requests.push_back(std::move(sr));
  }
  // Running requests first, then new ones, each in scheduling order.
  std::stable_partition(plan.requests.begin(), plan.requests.end(),
                        [](const ScheduledRequest& s) { return !s.is_new; });
  if (!running_.empty()) {
    plan.num_common_prefix_blocks = kv_.num_common_prefix_blocks(
        running_.front()->id(), static_cast<int>(running_.size()));
  }
  stats_.scheduled_tokens += plan.total_tokens;
  stats_.max_running = std::max<std::int64_t>(stats_.max_running, static_cast<std::int64_t>(running_.size()));
  stats_.max_waiting = std::max<std::int64_t>(stats_.max_waiting, static_cast<std::int64_t>(waiting_.size()));
  return plan;
}

void Scheduler::finish(Request& r, RequestStatus status) {
  kv_.free(r);
  r.status = status;
  auto run = std::find(running_.begin(), running_.end(), &r);
  if (run != running_.end()) running_.erase(run);
  auto wait = std::find(waiting_.begin(), waiting_.end(), &r);
  if (wait != waiting_.end()) waiting_.erase(wait);
  finished_since_last_step_.push_back(r.id());
  ++stats_.finished;
  entries_.erase(r.id());  // r is gone after this line
}

std::vector<TokenEvent> Scheduler::update_from_output(const StepPlan& plan, const StepResult& result) {
  std::vector<TokenEvent> events;
  std::size_t k = 0;
  for (const ScheduledRequest& sr : plan.requests) {
    if (!sr.samples) continue;
    KV_CHECK(k < result.sampled.size() && result.sampled[k].first == sr.id,
             "device returned no token for " << sr.id << " in step " << plan.step);
    const TokenId token = result.sampled[k++].second;
    auto it = entries_.find(sr.id);
    if (it == entries_.end()) continue;  // aborted while the step ran
    Request& r = *it->second.request;
    r.append_tokens(std::span<const TokenId>(&token, 1));
    TokenEvent ev{r.id(), r.num_output_tokens() - 1, false, RequestStatus::kRunning};
    if (r.num_output_tokens() >= r.max_output_tokens) {
      ev.finished = true;
      ev.status = RequestStatus::kFinishedLength;
    } else if (r.num_tokens() >= config_.cache.max_model_len) {
      ev.finished = true;
      ev.status = RequestStatus::kFinishedMaxLen;
    }
    if (ev.finished) finish(r, ev.status);
    events.push_back(std::move(ev));
  }
  KV_CHECK(k == result.sampled.size(), "device returned " << result.sampled.size()
                                                          << " tokens for " << k << " samples");
  return events;
}

bool Scheduler::abort(const RequestId& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  finish(*it->second.request, RequestStatus::kFinishedAborted);
  return true;
}

const Request* Scheduler::find(const RequestId& id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.request.get();
}

bool Scheduler::check_invariants(std::string* why) const {
  if (!kv_.check_invariants(why)) return false;
  if (running_.size() + waiting_.size() != entries_.size()) {
    *why = "scheduler: " + std::to_string(entries_.size()) + " live requests but " +
           std::to_string(running_.size()) + " running and " + std::to_string(waiting_.size()) + " waiting";
    return false;
  }
  const std::int64_t b = config_.cache.block_size;
  for (const Request* r : running_) {
    const auto held = static_cast<std::int64_t>(kv_.blocks_of(r->id()).size());
    if (r->status != RequestStatus::kRunning || held * b < r->num_computed_tokens) {
      *why = "scheduler: running request " + r->id() + " holds " + std::to_string(held) +
             " blocks for " + std::to_string(r->num_computed_tokens) + " computed tokens";
      return false;
    }
  }
  for (const Request* r : waiting_) {
    if (kv_.holds_blocks(r->id()) || r->num_computed_tokens != 0) {
      *why = "scheduler: waiting request " + r->id() + " holds blocks or computed tokens";
      return false;
    }
  }
  if (std::find(running_.begin(), running_.end(), nullptr) != running_.end()) {
    *why = "scheduler: null running entry";
    return false;
  }
  return true;
}

}  // namespace kv
