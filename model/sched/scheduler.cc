#include "model/sched/scheduler.h"

#include <algorithm>
#include <tuple>

#include "model/sched/mamba_align_split.h"
#include "model/util/check.h"

namespace kv {

namespace {

// vLLM's speculative config, and what the scheduler derives from it.
Status validate_speculation(const SchedulerConfig& c) {
  const auto num = [](std::int64_t v) { return std::to_string(v); };
  if (Status s = c.speculative.validate(); !s.ok()) return s;
  const char* method = to_string(c.speculative.method);
  if (c.speculative.enabled() && c.num_lookahead_tokens != 0 &&
      c.num_lookahead_tokens != c.speculative.num_lookahead_tokens()) {
    return Status::error("num_lookahead_tokens (" + num(c.num_lookahead_tokens) + ") contradicts " + method + " with " +
                         num(c.speculative.num_speculative_tokens) + " speculative tokens, which sets " +
                         num(c.speculative.num_lookahead_tokens()));
  }
  if (c.speculative.enabled() && c.cache.use_eagle && !c.speculative.use_eagle()) {
    return Status::error(std::string("use_eagle is set but the speculative method ") + method +
                         " does not draft with eagle");
  }
  if (c.max_num_scheduled_tokens() <= 0) {
    return Status::error("max_num_batched_tokens (" + num(c.max_num_batched_tokens) + ") leaves no token budget: " +
                         method + " inserts " + num(c.speculative.drafting_slots_per_seq()) +
                         " drafting slots for each of max_num_seqs (" + num(c.max_num_seqs) + ") sequences");
  }
  return {};
}

// vLLM's start-up checks for a Mamba group in align mode (prefill chunks end on its blocks).
Status validate_mamba_align(const SchedulerConfig& c) {
  int block = 0;
  for (const KvCacheGroupSpec& g : c.cache.groups) {
    if (g.spec.type == AttentionType::kMamba) block = g.spec.block_size;
  }
  if (block == 0) return {};
  const auto num = [](std::int64_t v) { return std::to_string(v); };
  if (!c.enable_chunked_prefill || !c.cache.enable_caching) {
    return Status::error("Mamba align mode needs chunked prefill and prefix caching on");
  }
  if (c.max_num_batched_tokens < block) {
    return Status::error("max_num_batched_tokens (" + num(c.max_num_batched_tokens) +
                         ") is below the Mamba block size (" + num(block) + ")");
  }
  if (c.long_prefill_token_threshold > 0 && c.long_prefill_token_threshold < block) {
    return Status::error("long_prefill_token_threshold (" + num(c.long_prefill_token_threshold) +
                         ") is below the Mamba block size (" + num(block) + ")");
  }
  const std::int64_t needed = (c.cache.max_model_len + block - 1) / block + 2 + c.speculative.num_speculative_tokens;
  if (c.cache.num_blocks - 1 < needed) {
    return Status::error("Mamba align mode needs " + num(needed) +
                         " KV blocks (one max_model_len sequence, 2 "
                         "states and one per speculative token), the pool has " +
                         num(c.cache.num_blocks - 1));
  }
  return {};
}

}  // namespace

Status SchedulerConfig::validate() const {
  const std::int64_t max_len = cache.max_model_len;
  const auto num = [](std::int64_t v) { return std::to_string(v); };
  const auto at_least = [&](const char* field, std::int64_t value, std::int64_t min) {
    return value >= min ? Status()
                        : Status::error(std::string(field) + " must be at least " + num(min) + ", got " + num(value));
  };
  for (const Status& s :
       {at_least("block_size", cache.block_size, 1), at_least("num_blocks (with the null block)", cache.num_blocks, 2),
        at_least("max_model_len", max_len, 1), at_least("max_num_batched_tokens", max_num_batched_tokens, 1),
        at_least("max_num_seqs", max_num_seqs, 1),
        at_least("long_prefill_token_threshold", long_prefill_token_threshold, 0),
        at_least("num_lookahead_tokens", num_lookahead_tokens, 0),
        at_least("max_num_encoder_input_tokens", max_num_encoder_input_tokens, 0)}) {
    if (!s.ok()) return s;
  }
  if (Status s = cache.validate(); !s.ok()) return s;
  if (!enable_chunked_prefill && max_num_batched_tokens < max_len) {
    return Status::error("max_num_batched_tokens (" + num(max_num_batched_tokens) +
                         ") is smaller than max_model_len (" + num(max_len) +
                         ") with chunked prefill off: a long prompt could never be scheduled");
  }
  if (max_num_batched_tokens < max_num_seqs) {
    return Status::error("max_num_batched_tokens (" + num(max_num_batched_tokens) +
                         ") must be at least max_num_seqs (" + num(max_num_seqs) + ")");
  }
  if (long_prefill_token_threshold > max_len) {
    return Status::error("long_prefill_token_threshold (" + num(long_prefill_token_threshold) +
                         ") cannot exceed max_model_len (" + num(max_len) + ")");
  }
  const std::int64_t pool_tokens = static_cast<std::int64_t>(cache.num_blocks - 1) * cache.block_size;
  if (pool_tokens < max_len) {
    return Status::error("the KV cache holds " + num(pool_tokens) + " tokens (" + num(cache.num_blocks - 1) +
                         " blocks of " + num(cache.block_size) + "), less than one sequence of max_model_len (" +
                         num(max_len) + ")");
  }
  if (Status s = validate_speculation(*this); !s.ok()) return s;
  return validate_mamba_align(*this);
}

namespace {

// The manager's configuration: the cache's, with the scheduler's token budget.
KvCacheConfig manager_config(const SchedulerConfig& config) {
  KvCacheConfig cache = config.cache;
  cache.max_in_flight_tokens = config.max_num_batched_tokens;
  cache.use_eagle = cache.use_eagle || config.speculative.use_eagle();
  return cache;
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config),
      hasher_(config.hash_algo, config.hash_seed),
      kv_(manager_config(config)),
      step_budget_(config.max_num_scheduled_tokens()),
      lookahead_(config.lookahead_tokens()),
      num_spec_tokens_(config.speculative.enabled() ? config.speculative.num_speculative_tokens : 0),
      align_block_(kv_.mamba_align_block_size()) {
  KV_CHECK(step_budget_ > 0, "the token budget (max_num_scheduled_tokens) must be positive, got " << step_budget_);
  KV_CHECK(config.max_num_seqs > 0, "max_num_seqs must be positive");
  if (config.prepare_prompts_ahead) preparer_ = std::make_unique<PromptPreparer>();
}

Status Scheduler::add_request(RequestSpec spec) {
  const auto reject = [&](const std::string& why) {
    ++stats_.rejected;
    return Status::error("request " + spec.id + ": " + why);
  };
  if (entries_.count(spec.id)) return reject("id already in use by a live request");
  const std::int64_t prompt_len = spec.num_prompt_tokens();
  if (prompt_len == 0) return reject("empty prompt");
  if (spec.outputs.empty()) return reject("output length must be at least 1");
  const std::int64_t max_len = config_.cache.max_model_len;
  if (prompt_len > max_len) {
    return reject("prompt of " + std::to_string(prompt_len) + " tokens exceeds max_model_len " +
                  std::to_string(max_len));
  }
  if (prompt_len == max_len) {  // vLLM's input processor: room for at least one output token
    return reject("prompt of " + std::to_string(prompt_len) + " tokens leaves no room for an output within " +
                  "max_model_len " + std::to_string(max_len));
  }
  if (spec.num_encoder_tokens < 0) return reject("num_encoder_tokens is negative");
  if (spec.num_encoder_tokens > config_.max_num_encoder_input_tokens) {  // vLLM would never schedule it
    return reject("encoder input of " + std::to_string(spec.num_encoder_tokens) +
                  " tokens exceeds max_num_encoder_input_tokens " +
                  std::to_string(config_.max_num_encoder_input_tokens));
  }
  const std::int64_t total = std::min(prompt_len + static_cast<std::int64_t>(spec.outputs.size()), max_len);
  const std::int64_t blocks = kv_.max_blocks_per_request(total);
  if (blocks > config_.cache.num_blocks - 1) {
    return reject("needs " + std::to_string(blocks) + " KV blocks, the pool has " +
                  std::to_string(config_.cache.num_blocks - 1));
  }
  const BlockHasher* hasher = config_.cache.enable_caching ? &hasher_ : nullptr;
  spec.deferred_prompt.output_room = total - prompt_len;
  auto request = spec.deferred_prompt.deferred()
                     ? std::make_unique<Live>(spec.id, std::move(spec.deferred_prompt), std::move(spec.extras), hasher,
                                              config_.cache.block_size, std::move(spec.outputs),
                                              std::move(spec.stop_token_ids), std::move(spec.prompt_hashes))
                     : std::make_unique<Live>(spec.id, std::move(spec.prompt), std::move(spec.extras), hasher,
                                              config_.cache.block_size, std::move(spec.outputs),
                                              std::move(spec.stop_token_ids), std::move(spec.prompt_hashes));
  request->priority = spec.priority;
  request->retention = spec.retention;
  request->arrival_time_us = spec.arrival_time_us;
  request->max_output_tokens = static_cast<std::int64_t>(request->outputs.size());
  request->num_encoder_tokens = spec.num_encoder_tokens;
  request->tag = spec.tag;
  Request* r = request.get();
  entries_.emplace(spec.id, std::move(request));
  insert_waiting(r);
  stats_.max_waiting = std::max<std::int64_t>(stats_.max_waiting, static_cast<std::int64_t>(waiting_.size()));
  return {};
}

void Scheduler::insert_waiting(Request* r) {
  if (config_.policy == SchedulingPolicy::kFcfs) {
    waiting_.push_back(r);
    return;
  }
  // Priority: vLLM's heap pops the smallest (priority, arrival time, request id); the ids
  // compare as strings ("r10" < "r9").
  const auto key = [](const Request* q) { return std::tie(q->priority, q->arrival_time_us, q->id()); };
  auto pos = std::upper_bound(waiting_.begin(), waiting_.end(), r,
                              [&](const Request* a, const Request* b) { return key(a) < key(b); });
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
  // vLLM: max over running of (priority, arrival time); Python's max keeps the first of equal
  // keys, so a tie goes to the earliest in the running list.
  Request* victim = running_.front();
  for (Request* r : running_) {
    if (std::pair(r->priority, r->arrival_time_us) > std::pair(victim->priority, victim->arrival_time_us)) {
      victim = r;
    }
  }
  return victim;
}

void Scheduler::set_connector(std::unique_ptr<KvConnector> connector) {
  KV_CHECK(!kv_.tables_per_group() && config_.cache.enable_caching && entries_.empty(),
           "a connector needs one full-attention group, prefix caching and no request yet");
  connector_ = std::move(connector);
  kv_.set_record_evictions(connector_ != nullptr);
}

void Scheduler::pass_evictions() {
  if (!connector_) return;
  const std::vector<EvictedBlock> evicted = kv_.take_evicted();
  if (!evicted.empty()) connector_->on_blocks_evicted(evicted);
}

void Scheduler::free_blocks(Request& r) { kv_.free(r); }

void Scheduler::preempt(Request& r, StepPlan& plan) {
  free_blocks(r);
  stats_.recomputed_tokens += r.num_computed_tokens;
  ++stats_.preemptions;
  r.status = RequestStatus::kPreempted;
  r.num_computed_tokens = 0;
  r.spec_token_ids.clear();
  ++r.num_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), &r));
  push_waiting_front(&r);
  plan.preempted.push_back(r.id());
}

StepPlan Scheduler::schedule() {
  StepWork work;
  work.plan.step = next_step_++;
  work.plan.block_size = config_.cache.block_size;
  if (kv_.tables_per_group()) [[unlikely]] {
    work.plan.group_windows = kv_.group_reaches();
    work.plan.group_state_block_sizes = kv_.group_state_block_sizes();
    work.plan.group_cross_attention = kv_.group_cross_attention();
  }
  work.plan.finished.swap(finished_since_last_step_);
  work.budget = step_budget_;
  work.encoder_budget = config_.max_num_encoder_input_tokens;
  // Every request this step can schedule, so that the list never grows by copying (its
  // entries' block lists are not nothrow-movable).
  work.scheduled.reserve(
      std::min(running_.size() + waiting_.size(), static_cast<std::size_t>(config_.max_num_seqs) + running_.size()));
  ++stats_.steps;
  kv_.new_step();

  schedule_running(work);
  if (work.plan.preempted.empty()) schedule_waiting(work);  // never admit in a step that preempted
  build_plan(work);

  stats_.scheduled_tokens += work.plan.total_tokens;
  stats_.max_running = std::max<std::int64_t>(stats_.max_running, static_cast<std::int64_t>(running_.size()));
  stats_.max_waiting = std::max<std::int64_t>(stats_.max_waiting, static_cast<std::int64_t>(waiting_.size()));
  if (preparer_) name_next_waiting();
  return std::move(work.plan);
}

// The waiting requests the next steps may admit, from the head: up to kPrepareSteps steps'
// budget of prompt tokens (a hit admits more than the budget) and max_num_seqs requests. The
// preparer is woken only when one still deferred lies within the first half of that reach, so
// that it works in batches, not once per admission.
void Scheduler::name_next_waiting() {
  constexpr std::int64_t kPrepareSteps = 32;
  std::vector<const Request*> next;
  std::int64_t tokens = 0;
  bool due = false;
  for (const Request* r : waiting_) {
    if (tokens >= kPrepareSteps * step_budget_ || next.size() >= static_cast<std::size_t>(config_.max_num_seqs)) break;
    if (r->deferred()) {
      next.push_back(r);
      due = due || tokens < kPrepareSteps / 2 * step_budget_;
    }
    tokens += r->num_tokens();
  }
  if (due) preparer_->want(next);
}

// 1. Running requests, in order, while budget is left. A request that cannot get its blocks
// preempts others (or itself, which ends the pass).
void Scheduler::schedule_running(StepWork& work) {
  const std::int64_t max_len = config_.cache.max_model_len;
  const std::int64_t threshold = config_.long_prefill_token_threshold;
  std::size_t i = 0;
  while (i < running_.size() && work.budget > 0) {
    Request& r = *running_[i];
    const auto drafts = static_cast<std::int64_t>(r.spec_token_ids.size());
    std::int64_t n = r.num_tokens() + drafts - r.num_computed_tokens;
    if (threshold > 0) n = std::min(n, threshold);
    n = std::min({n, work.budget, max_len - 1 - r.num_computed_tokens});
    if (align_block_ > 0 && n > 0) [[unlikely]]
      n = align_chunk(r, r.num_computed_tokens, n);
    if (n <= 0) {
      ++i;
      continue;
    }
    Scheduled s{&r, n, {}, 0, false, 0};
    if (!allocate_or_preempt(r, n, work, i, s))
      break;  // r preempted itself: the requests
              // after it wait for the next step
    if (drafts > 0) [[unlikely]]
      take_drafts(r, s);
    work.scheduled.push_back(std::move(s));
    work.budget -= n;
    ++i;
  }
}

// vLLM's allocate-or-preempt loop: until the allocation succeeds, preempt the policy's victim
// (FCFS: the last running request; priority: the largest (priority, arrival)). A victim
// already scheduled in this step gives its tokens back and leaves the step; `index` (r's
// position in running_) follows it. Returns false when the victim was r itself; on success
// `out` holds the new blocks.
bool Scheduler::allocate_or_preempt(Request& r, std::int64_t n, StepWork& work, std::size_t& index, Scheduled& out) {
  while (true) {
    if (allocate_running(r, n, out)) return true;
    Request* victim = pick_victim();
    auto was = std::find_if(work.scheduled.begin(), work.scheduled.end(),
                            [&](const Scheduled& s) { return s.request == victim; });
    if (was != work.scheduled.end()) {  // priority policy: an earlier request of this step
      work.budget += was->num_tokens;
      work.scheduled.erase(was);
      --index;
    }
    preempt(*victim, work.plan);
    if (victim == &r) return false;
  }
}

// vLLM: the held drafts that fit in the n scheduled tokens after the known ones are verified
// in this step; the request holds no drafts afterwards (those that did not fit are dropped).
void Scheduler::take_drafts(Request& r, Scheduled& s) {
  const std::int64_t fit = r.num_computed_tokens + s.num_tokens - r.num_tokens();
  if (fit > 0) {
    s.spec_tokens = std::move(r.spec_token_ids);
    s.spec_tokens.resize(static_cast<std::size_t>(fit));  // fit <= the drafts held
  }
  r.spec_token_ids.clear();
}

// Mamba align mode: the chunk [start, start + n) cut where a state can be cached.
std::int64_t Scheduler::align_chunk(const Request& r, std::int64_t start, std::int64_t n) const {
  AlignSplitInput in;
  in.start = start;
  in.num_new_tokens = n;
  in.num_prompt_tokens = r.num_prompt_tokens();
  in.num_tokens = r.num_tokens();
  in.block_size = align_block_;
  in.use_eagle = kv_.config().use_eagle;
  in.shared_prefix_boundary = config_.mamba_align_prefix_split ? r.shared_prefix_boundary : 0;
  return mamba_align_split(in);
}

bool Scheduler::allocate_running(Request& r, std::int64_t n, Scheduled& out) {
  std::optional<GroupBlockIds> blocks = kv_.allocate_slots(r, n, {}, lookahead_);
  if (!blocks) return false;
  pass_evictions();
  out.new_blocks = std::move(*blocks);
  return true;
}

// 2. Waiting requests, head first, while budget and max_num_seqs allow. The first one that
// does not fit stops admission (head-of-line blocking).
void Scheduler::schedule_waiting(StepWork& work) {
  // vLLM pads a new decode when this step's running requests are all decodes (none of them
  // still prefilling as of its previous step), so that it is batched like them.
  work.pad_new_decodes = num_spec_tokens_ > 0 && !work.scheduled.empty() &&
                         std::none_of(work.scheduled.begin(), work.scheduled.end(),
                                      [](const Scheduled& s) { return s.request->is_prefill_chunk; });
  while (!waiting_.empty() && work.budget > 0) {
    if (running_.size() >= static_cast<std::size_t>(config_.max_num_seqs)) break;
    if (!try_admit(*waiting_.front(), work)) break;
  }
}

// Admits the head of the waiting queue with its prefix-cache hit if its chunk fits the budget
// (chunked prefill off: the whole remaining prompt) and the pool (and the full-sequence gate).
bool Scheduler::try_admit(Request& r, StepWork& work) {
  const std::int64_t threshold = config_.long_prefill_token_threshold;
  CacheHit hit;
  std::int64_t computed = r.num_computed_tokens;
  if (computed == 0) {
    hit = kv_.get_computed_blocks(r);
    computed = hit.num_tokens;
    r.shared_prefix_boundary = hit.shared_prefix_boundary;
  }
  // vLLM: the connector's match continues the local hit and counts as computed.
  const std::int64_t external =
      connector_ && r.num_computed_tokens == 0 ? connector_->get_num_new_matched_tokens(r, computed) : 0;
  std::int64_t n = r.num_tokens() - computed - external;
  const bool padded = work.pad_new_decodes && n == 1;
  if (padded) [[unlikely]] {  // 1 + K tokens or none: vLLM never admits it unpadded
    n = 1 + num_spec_tokens_;
    if (n > work.budget || computed + external + n > config_.cache.max_model_len) return false;
  }
  if (threshold > 0 && n > threshold) n = threshold;  // the cap applies before the budget test
  if (!config_.enable_chunked_prefill && n > work.budget) return false;
  n = std::min(n, work.budget);
  if (align_block_ > 0 && !padded) [[unlikely]] {
    n = align_chunk(r, computed + external, n);
    if (n == 0) return false;
  }
  KV_CHECK(n > 0, "request " << r.id() << " has nothing to compute");
  // vLLM's _try_schedule_encoder_inputs: an encoder-decoder request runs its whole encoder
  // input before its first decoder token (bidirectional, never chunked); without the budget
  // for it, nothing of the request is scheduled and admission stops.
  const std::int64_t encoder = computed + external == 0 ? r.num_encoder_tokens : 0;
  if (encoder > work.encoder_budget) return false;
  if (!kv_.allocate_slots(r, external + n, hit, lookahead_, config_.full_sequence_gate, encoder)) {
    return false;
  }
  if (connector_) {
    pass_evictions();
    if (external > 0) connector_->update_state_after_alloc(r, kv_.blocks_of(r.id()), computed, external);
  }
  waiting_.pop_front();
  running_.push_back(&r);
  r.status = RequestStatus::kRunning;
  r.num_computed_tokens = computed + external;
  if (r.num_cached_tokens < 0) r.num_cached_tokens = computed;
  work.scheduled.push_back({&r, n, {}, hit.num_tokens, true, external});
  if (padded) [[unlikely]]
    work.scheduled.back().spec_tokens.assign(num_spec_tokens_, kPaddingDraft);
  work.scheduled.back().encoder_tokens = encoder;
  work.encoder_budget -= encoder;
  stats_.encoder_tokens += encoder;
  work.budget -= n;
  return true;
}

// The plan entry of one scheduled request, before its computed tokens advance. Takes the
// step's new blocks out of `s`.
void Scheduler::fill_plan_entry(Scheduled& s, ScheduledRequest& sr) const {
  const Request& r = *s.request;
  sr.id = r.id();
  sr.is_new = s.is_new;
  if (kv_.tables_per_group()) [[unlikely]] {
    if (s.is_new) {
      for (std::size_t g = 0; g < kv_.num_groups(); ++g) {
        const auto table = kv_.blocks_of(r.id(), g);
        sr.group_block_ids.emplace_back(table.begin(), table.end());
      }
    } else {
      sr.group_block_ids.assign(std::make_move_iterator(s.new_blocks.begin()),
                                std::make_move_iterator(s.new_blocks.end()));
    }
  } else if (s.is_new) {
    const auto table = kv_.blocks_of(r.id());
    sr.block_ids.assign(table.begin(), table.end());
  } else if (!s.new_blocks.empty()) {
    sr.block_ids = std::move(s.new_blocks.front());
  }
  sr.num_computed_tokens = r.num_computed_tokens;
  sr.num_cached_tokens = s.hit_tokens;
  sr.num_external_tokens = s.external_tokens;
  sr.num_encoder_tokens = s.encoder_tokens;
  const auto toks = r.tokens();
  const auto begin = static_cast<std::ptrdiff_t>(r.num_computed_tokens);
  const auto end =
      std::min(begin + static_cast<std::ptrdiff_t>(s.num_tokens), static_cast<std::ptrdiff_t>(toks.size()));
  if (s.is_new) sr.context_token_ids.assign(toks.begin(), toks.begin() + begin);
  sr.token_ids.assign(toks.begin() + begin, toks.begin() + end);
  if (!s.spec_tokens.empty()) [[unlikely]] {  // the draft positions follow the known tokens
    const auto positions =
        std::min<std::size_t>(static_cast<std::size_t>(begin + s.num_tokens - end), s.spec_tokens.size());
    sr.token_ids.insert(sr.token_ids.end(), s.spec_tokens.begin(),
                        s.spec_tokens.begin() + static_cast<std::ptrdiff_t>(positions));
    sr.spec_token_ids = std::move(s.spec_tokens);
  }
  sr.num_prompt_tokens = r.num_prompt_tokens();
  sr.samples = r.num_computed_tokens + s.num_tokens >= r.num_tokens();
  if (sr.samples) {
    const Live& e = live(r);
    const auto n = static_cast<std::size_t>(r.num_output_tokens());
    sr.next_token = e.outputs[n];
    if (num_spec_tokens_ > 0) [[unlikely]] {
      const std::size_t last = std::min(e.outputs.size(), n + 2 * static_cast<std::size_t>(num_spec_tokens_) + 1);
      for (std::size_t i = n; i < last; ++i) sr.next_tokens.push_back(e.outputs[i]);
    }
  }
  sr.lora_name = r.extras().lora_name;
  sr.cache_salt = r.extras().cache_salt;
}

// 3. The plan, then advance computed tokens (vLLM's _update_after_schedule).
void Scheduler::build_plan(StepWork& work) {
  StepPlan& plan = work.plan;
  plan.requests.reserve(work.scheduled.size());
  for (Scheduled& s : work.scheduled) {
    fill_plan_entry(s, plan.requests.emplace_back());
    plan.total_tokens += s.num_tokens;
    if (connector_) {
      connector_->on_request_scheduled(*s.request, kv_.blocks_of(s.request->id()), s.request->num_computed_tokens,
                                       s.num_tokens);
    }
    s.request->num_computed_tokens += s.num_tokens;
    s.request->is_prefill_chunk = s.request->num_computed_tokens < s.request->num_tokens();
  }
  if (connector_) connector_->build_connector_meta(plan);
  // Running requests first, then new ones, each in scheduling order.
  std::stable_partition(plan.requests.begin(), plan.requests.end(),
                        [](const ScheduledRequest& sr) { return !sr.is_new; });
  planned_.clear();
  for (const bool admitted : {false, true}) {
    for (const Scheduled& s : work.scheduled) {
      if (s.is_new == admitted) planned_.push_back(&live(*s.request));
    }
  }
  planned_step_ = plan.step;
  if (!running_.empty()) {
    plan.num_common_prefix_blocks =
        kv_.num_common_prefix_blocks(running_.front()->id(), static_cast<int>(running_.size()));
  }
}

void Scheduler::finish(Request& r, RequestStatus status) {
  free_blocks(r);
  r.status = status;
  auto run = std::find(running_.begin(), running_.end(), &r);
  if (run != running_.end()) running_.erase(run);
  auto wait = std::find(waiting_.begin(), waiting_.end(), &r);
  if (wait != waiting_.end()) waiting_.erase(wait);
  finished_since_last_step_.push_back(r.id());
  ++stats_.finished;
  if (preparer_) preparer_->forget(&r);
  std::replace(planned_.begin(), planned_.end(), &live(r), static_cast<Live*>(nullptr));
  entries_.erase(r.id());  // r is gone after this line
}

std::vector<TokenEvent> Scheduler::update_from_output(const StepPlan& plan, const StepResult& result) {
  std::vector<TokenEvent> events;
  std::size_t k = 0, verified = 0;
  const bool last_plan = plan.step == planned_step_ && plan.requests.size() == planned_.size();
  for (std::size_t i = 0; i < plan.requests.size(); ++i) {
    const ScheduledRequest& sr = plan.requests[i];
    if (!sr.samples) continue;
    KV_CHECK(k < result.sampled.size() && result.sampled[k].first == sr.id,
             "device returned no token for " << sr.id << " in step " << plan.step);
    const TokenId token = result.sampled[k++].second;
    const int accepted = sr.spec_token_ids.empty() ? 0 : accepted_drafts(sr, result, verified, plan.step);
    Live* r = last_plan ? planned_[i] : find_live(sr.id);
    if (r == nullptr) continue;  // aborted while the step ran
    KV_CHECK(r->id() == sr.id,
             "plan entry " << i << " of step " << plan.step << " is " << sr.id << ", not " << r->id());
    if (!sr.spec_token_ids.empty()) [[unlikely]]
      roll_back_rejected(*r, sr, accepted);
    bool done = false;
    for (int d = 0; d < accepted && !done; ++d) done = append_output(*r, sr.spec_token_ids[d], events);
    if (!done) append_output(*r, token, events);
  }
  KV_CHECK(k == result.sampled.size(),
           "device returned " << result.sampled.size() << " tokens for " << k << " samples");
  KV_CHECK(verified == result.num_accepted.size(), "device returned " << result.num_accepted.size()
                                                                      << " acceptance counts for " << verified
                                                                      << " requests with drafts");
  return events;
}

// The device's count of sr's accepted drafts: a prefix of them, never a padding slot.
int Scheduler::accepted_drafts(const ScheduledRequest& sr, const StepResult& result, std::size_t& next,
                               std::int64_t step) const {
  KV_CHECK(next < result.num_accepted.size() && result.num_accepted[next].first == sr.id,
           "device returned no acceptance count for " << sr.id << " in step " << step);
  const int accepted = result.num_accepted[next++].second;
  const auto real =
      std::find(sr.spec_token_ids.begin(), sr.spec_token_ids.end(), kPaddingDraft) - sr.spec_token_ids.begin();
  KV_CHECK(accepted >= 0 && accepted <= real, "device accepted " << accepted << " drafts of " << sr.id << " in step "
                                                                 << step << ", which had " << real << " to verify");
  return accepted;
}

// vLLM: the rejected drafts' positions are computed again later; the blocks allocated for
// them (and for the lookahead) stay with the request.
void Scheduler::roll_back_rejected(Request& r, const ScheduledRequest& sr, int accepted) {
  const auto drafts = static_cast<std::int64_t>(sr.spec_token_ids.size());
  if (r.num_computed_tokens > 0) r.num_computed_tokens -= drafts - accepted;
  ++stats_.spec_num_drafts;
  stats_.spec_num_draft_tokens += drafts;
  stats_.spec_num_accepted_tokens += accepted;
}

// Appends one output token and applies vLLM's stop checks: a stop token first, then the
// output length and max_model_len. Returns true when the request finished (it is freed and
// `r` is gone).
bool Scheduler::append_output(Live& r, TokenId token, std::vector<TokenEvent>& events) {
  r.append_tokens(std::span<const TokenId>(&token, 1));
  TokenEvent ev{r.id(), r.tag, r.num_output_tokens() - 1, false, RequestStatus::kRunning};
  if (!r.stop_token_ids.empty() &&
      std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), token) != r.stop_token_ids.end()) [[unlikely]] {
    ev.status = RequestStatus::kFinishedStopped;
  } else if (r.num_output_tokens() >= r.max_output_tokens) {
    ev.status = RequestStatus::kFinishedLength;
  } else if (r.num_tokens() >= config_.cache.max_model_len) {
    ev.status = RequestStatus::kFinishedMaxLen;
  }
  const bool finished = ev.status != RequestStatus::kRunning;
  ev.finished = finished;
  if (finished) finish(r, ev.status);
  events.push_back(std::move(ev));
  return finished;
}

void Scheduler::update_draft_token_ids(const RequestId& id, std::span<const TokenId> drafts) {
  KV_CHECK(drafts.size() <= static_cast<std::size_t>(num_spec_tokens_),
           drafts.size() << " drafts for " << id << ", the speculative config proposes at most " << num_spec_tokens_);
  Live* found = find_live(id);
  if (found == nullptr) return;  // finished
  Request& r = *found;
  if (r.status != RequestStatus::kRunning) return;
  if (r.is_prefill_chunk) {
    r.spec_token_ids.clear();
    return;
  }
  r.spec_token_ids.assign(drafts.begin(), drafts.end());
}

bool Scheduler::abort(const RequestId& id) {
  Live* r = find_live(id);
  if (r == nullptr) return false;
  finish(*r, RequestStatus::kFinishedAborted);
  return true;
}

std::vector<RequestId> Scheduler::waiting_ids() const {
  std::vector<RequestId> ids;
  for (const Request* r : waiting_) ids.push_back(r->id());
  return ids;
}

std::vector<RequestId> Scheduler::running_ids() const {
  std::vector<RequestId> ids;
  for (const Request* r : running_) ids.push_back(r->id());
  return ids;
}

const Request* Scheduler::find(const RequestId& id) const { return find_live(id); }

Scheduler::Live* Scheduler::find_live(const RequestId& id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.get();
}

// Every group's table of a running request covers its computed tokens.
bool Scheduler::check_tables(const Request& r, std::string* why) const {
  for (std::size_t g = 0; g < kv_.num_groups(); ++g) {
    const KvCacheSpec& spec = kv_.coordinator().group(g).spec();
    const auto held = static_cast<std::int64_t>(kv_.blocks_of(r.id(), g).size());
    // A cross-attention group covers the encoder input instead (invariant 8).
    const bool cross = spec.type == AttentionType::kCrossAttention;
    const std::int64_t covered = cross ? r.num_encoder_tokens : r.num_computed_tokens;
    if (r.status != RequestStatus::kRunning || held * spec.block_size < covered) {
      *why = "scheduler: running request " + r.id() + " holds " + std::to_string(held) + " blocks in group " +
             std::to_string(g) + " for " + std::to_string(covered) + (cross ? " encoder" : " computed") + " tokens";
      return false;
    }
  }
  return true;
}

bool Scheduler::check_invariants(std::string* why) const {
  if (!kv_.check_invariants(why)) return false;
  if (running_.size() + waiting_.size() != entries_.size()) {
    *why = "scheduler: " + std::to_string(entries_.size()) + " live requests but " + std::to_string(running_.size()) +
           " running and " + std::to_string(waiting_.size()) + " waiting";
    return false;
  }
  for (const Request* r : running_) {
    if (!check_tables(*r, why)) return false;
  }
  for (const Request* r : waiting_) {
    if (kv_.holds_blocks(r->id()) || r->num_computed_tokens != 0 || !r->spec_token_ids.empty()) {
      *why = "scheduler: waiting request " + r->id() + " holds blocks, computed tokens or drafts";
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
