#include "sim/sim_device.h"

#include <algorithm>
#include <utility>

namespace kv::sim {

namespace {
CudaGraphConfig graph_config(const SimOptions& o) {
  CudaGraphConfig c;
  c.mode = o.cuda_graph_mode;
  c.max_num_seqs = o.max_num_seqs;
  c.max_num_batched_tokens = o.max_num_batched_tokens;
  c.capture_sizes = o.cuda_graph_capture_sizes;
  return c;
}

// K with speculative decoding on, else 0: the draft tokens vLLM sizes a Mamba state for.
int speculative_tokens(const SimOptions& o) {
  return o.speculative.enabled() ? o.speculative.num_speculative_tokens : 0;
}

// Checks the options and loads the profile, if any.
StatusOr<std::unique_ptr<ProfileTable>> prepare(const SimOptions& options) {
  if (Status graphs = validate(graph_config(options)); !graphs.ok()) return graphs;
  if (options.max_violations_per_step < 1) {
    return Status::error("max_violations_per_step must be >= 1");
  }
  std::unique_ptr<ProfileTable> profile;
  if (!options.profile_path.empty()) {
    StatusOr<ProfileTable> table = ProfileTable::load(options.profile_path);
    if (!table.ok()) return table.status();
    profile = std::make_unique<ProfileTable>(std::move(table).value());
  }
  return profile;
}
}  // namespace

SimOptions::SimOptions() : model(find_model_shape("llama3-8b").value()), gpu(find_gpu_spec("h100-sxm").value()) {}

StatusOr<std::unique_ptr<SimDevice>> SimDevice::create(const SimOptions& options) {
  auto profile = prepare(options);
  if (!profile.ok()) return profile.status();
  return std::unique_ptr<SimDevice>(new SimDevice(options, std::move(profile).value()));
}

SimDevice::SimDevice(const SimOptions& options, std::unique_ptr<ProfileTable> profile)
    : options_(options),
      profile_(std::move(profile)),
      cost_(options.model, options.gpu, graph_config(options), profile_.get(), options.async_scheduling, options.tier,
            speculative_tokens(options)),
      shadow_(options.verify),
      drafter_(options.speculative, options.model, options.gpu, graph_config(options)) {}

StatusOr<std::unique_ptr<CostPredictor>> CostPredictor::create(const SimOptions& options) {
  auto profile = prepare(options);
  if (!profile.ok()) return profile.status();
  return std::unique_ptr<CostPredictor>(new CostPredictor(options, std::move(profile).value()));
}

CostPredictor::CostPredictor(const SimOptions& options, std::unique_ptr<ProfileTable> profile)
    : profile_(std::move(profile)),
      cost_(options.model, options.gpu, graph_config(options), profile_.get(), options.async_scheduling, {},
            speculative_tokens(options)) {}

std::string SimDevice::name() const { return "sim:" + model().name + "@" + gpu().name; }

std::vector<std::string> SimDevice::format(const std::vector<Violation>& violations) const {
  std::vector<std::string> out;
  std::size_t shown = std::min(violations.size(), static_cast<std::size_t>(options_.max_violations_per_step));
  for (std::size_t i = 0; i < shown; ++i) out.push_back(violations[i].to_string());
  if (violations.size() > shown) {
    out.push_back("... and " + std::to_string(violations.size() - shown) + " more violations");
  }
  return out;
}

StepResult SimDevice::execute(const StepPlan& plan) {
  StepResult result;
  violations_.clear();
  last_step_ = plan.step;
  shadow_.apply(plan, &violations_);

  StepShape shape = summarize(plan, model_window(model()));
  shape.tier_saves_carried = std::exchange(saves_carried_, static_cast<std::int64_t>(plan.tier_stores_after.size()));
  last_cost_ = cost_.cost(shape);
  result.duration_ns = last_cost_.duration_ns;
  for (int n = 0; n < kNumStepNodes; ++n) {
    const std::int64_t cycles = last_cost_.node_cycles[static_cast<std::size_t>(n)];
    if (cycles <= 0) continue;
    const bool per_layer = n >= static_cast<int>(StepNode::kInputNorm) && n <= static_cast<int>(StepNode::kDownProj);
    const bool all_reduce = n == static_cast<int>(StepNode::kAllReduce);  // 2 per layer and the logits gather
    node_ns_[static_cast<std::size_t>(n)] += cost_.cycles_to_ns(cycles);
    node_launches_[static_cast<std::size_t>(n)] += per_layer ? model().layers : all_reduce ? 2 * model().layers + 1 : 1;
  }

  if (last_cost_.encoder_cycles > 0) [[unlikely]] {
    ++encoder_steps_;
    encoder_ns_ += cost_.cycles_to_ns(last_cost_.encoder_cycles);
  }
  DeviceCounters& c = result.counters;
  if (last_cost_.tier_load_cycles > 0 || last_cost_.tier_store_cycles > 0) [[unlikely]] {
    c.tier_load_ns = cost_.cycles_to_ns(last_cost_.tier_load_cycles);
    c.tier_stall_ns = result.duration_ns - cost_.cycles_to_ns(last_cost_.cycles - last_cost_.tier_stall_cycles);
    tier_load_ns_ += c.tier_load_ns;
    tier_store_ns_ += cost_.cycles_to_ns(last_cost_.tier_store_cycles);
    tier_loads_ += last_cost_.tier_load_cycles > 0 ? 1 : 0;
    tier_stores_ += last_cost_.tier_store_cycles > 0 ? 1 : 0;
  }
  c.tokens_computed = shape.num_tokens;
  c.kv_slots_read = shape.kv_tokens_read;
  c.kernels = last_cost_.kernels;
  std::int64_t drafting = 0, drafting_context = 0;  // requests given drafts, their contexts
  for (const ScheduledRequest& r : plan.requests) {
    std::int64_t begin = r.num_computed_tokens;
    std::int64_t end = begin + static_cast<std::int64_t>(r.token_ids.size());
    c.prompt_tokens_computed += std::max<std::int64_t>(0, std::min(end, r.num_prompt_tokens) - begin);
    if (!r.samples) continue;
    if (!options_.speculative.enabled()) [[likely]] {
      result.sampled.emplace_back(r.id, r.next_token);
      continue;
    }
    const auto accepted = static_cast<std::size_t>(speculate(plan, r, result));
    result.sampled.emplace_back(r.id, accepted < r.next_tokens.size() ? r.next_tokens[accepted] : r.next_token);
    drafting += 1;
    drafting_context += r.num_computed_tokens + static_cast<std::int64_t>(r.token_ids.size()) -
                        static_cast<std::int64_t>(r.spec_token_ids.size()) + static_cast<std::int64_t>(accepted) + 1;
  }
  if (drafting > 0) [[unlikely]] {
    const std::int64_t ns = drafter_.cost_ns(drafting, drafting_context);
    result.duration_ns += ns;
    drafter_ns_ += ns;
    drafter_steps_ += ns > 0 ? 1 : 0;
  }
  result.violations = format(violations_);
  return result;
}

namespace {
std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

double SimDevice::draw(const RequestId& id, std::int64_t step, std::size_t position) const {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the id: the same on every machine
  for (char ch : id) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ULL;
  const std::uint64_t x =
      mix(mix(mix(options_.seed ^ h) ^ static_cast<std::uint64_t>(step)) ^ static_cast<std::uint64_t>(position));
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

int SimDevice::speculate(const StepPlan& plan, const ScheduledRequest& r, StepResult& result) {
  int accepted = 0;
  if (!r.spec_token_ids.empty()) {
    // Position i is kept only if every earlier one was, each with its own rate; padding never.
    const std::vector<double>& rates = options_.speculative.acceptance_rates;
    for (std::size_t i = 0; i < r.spec_token_ids.size() && i < rates.size(); ++i) {
      if (r.spec_token_ids[i] == kPaddingDraft || draw(r.id, plan.step, i) >= rates[i]) break;
      ++accepted;
    }
    result.num_accepted.emplace_back(r.id, accepted);
    // As the scheduler rolls back (docs/semantics.md §5.9): the rejected drafts' positions.
    const std::int64_t computed = r.num_computed_tokens + static_cast<std::int64_t>(r.token_ids.size());
    if (computed > 0) shadow_.reject_drafts(r.id, static_cast<std::int64_t>(r.spec_token_ids.size()) - accepted);
  }
  // The next drafts: the outputs after the a + 1 tokens this step appends, K of them (the last
  // one repeated past the end of the outputs: the request finishes before they matter).
  const auto k = static_cast<std::size_t>(options_.speculative.num_speculative_tokens);
  std::vector<TokenId> drafts;
  drafts.reserve(k);
  TokenId last = r.next_tokens.empty() ? r.next_token : r.next_tokens.back();
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t at = static_cast<std::size_t>(accepted) + 1 + i;
    drafts.push_back(at < r.next_tokens.size() ? r.next_tokens[at] : last);
  }
  result.draft_token_ids.emplace_back(r.id, std::move(drafts));
  return accepted;
}

std::vector<std::string> SimDevice::verify_live_requests(std::int64_t step) {
  violations_.clear();
  shadow_.verify_live(step, &violations_);
  return format(violations_);
}

std::vector<KernelTime> SimDevice::kernel_times() const {
  static const char* const kNames[kNumStepNodes] = {
      "host_schedule", "h2d_block_table", "h2d_inputs",  "slot_mapping", "graph_launch", "input_norm",
      "qkv_proj",      "rotary",          "cache_write", "attention",    "o_proj",       "post_attention_norm",
      "gate_up_proj",  "silu_mul",        "down_proj",   "final_norm",   "lm_head",      "d2h_sampled",
      "all_reduce"};
  std::vector<KernelTime> out;
  for (int n = 0; n < kNumStepNodes; ++n) {
    const auto i = static_cast<std::size_t>(n);
    out.push_back({kNames[n], node_launches_[i], node_ns_[i]});
  }
  if (model().cross_attention) out.push_back({"encoder", encoder_steps_, encoder_ns_});  // before the decoder
  if (!drafter_.is_free()) out.push_back({"drafter", drafter_steps_, drafter_ns_});      // speculative decoding
  if (options_.tier.enabled) {  // copies on the copy stream, beside the kernels
    out.push_back({"tier_load", tier_loads_, tier_load_ns_});
    out.push_back({"tier_store", tier_stores_, tier_store_ns_});
  }
  return out;
}

StatusOr<std::unique_ptr<Device>> make_sim_device(const SimOptions& options) {
  StatusOr<std::unique_ptr<SimDevice>> device = SimDevice::create(options);
  if (!device.ok()) return device.status();
  return std::unique_ptr<Device>(std::move(device).value());
}

}  // namespace kv::sim
