#include "traces/generators.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "model/util/check.h"
#include "model/util/parse_number.h"
#include "traces/block_tokens.h"
#include "traces/sampling.h"

namespace kv::trace {

namespace {

struct ActiveSession {
  Session session;
  std::size_t next_turn = 0;
  std::vector<PromptSegment> history;  // preamble and every earlier turn's user and reply
};

// Stream-specific seeds, so that adding draws to one stream never shifts another.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) { return splitmix64(seed ^ splitmix64(stream)); }

}  // namespace

StatusOr<std::int64_t> write_sessions(const ArrivalOptions& arrivals,
                                      const std::function<StatusOr<bool>(Session*)>& next_session,
                                      TraceWriter& writer) {
  KV_CHECK(arrivals.rate > 0 && arrivals.concurrent_sessions > 0);
  Sampler clock(stream_seed(arrivals.seed, 1));
  Sampler pick(stream_seed(arrivals.seed, 2));
  std::vector<ActiveSession> active;
  bool source_done = false;
  auto refill = [&](std::size_t slot) -> Status {
    // Puts the next session with at least one turn into active[slot], or erases the slot.
    while (!source_done) {
      Session s;
      StatusOr<bool> got = next_session(&s);
      if (!got.ok()) return got.status();
      if (!*got) {
        source_done = true;
        break;
      }
      if (s.turns.empty()) continue;
      ActiveSession a;
      a.history = s.preamble;
      a.session = std::move(s);
      if (slot == active.size()) {
        active.push_back(std::move(a));
      } else {
        active[slot] = std::move(a);
      }
      return Status();
    }
    if (slot < active.size()) active.erase(active.begin() + static_cast<std::ptrdiff_t>(slot));
    return Status();
  };
  while (!source_done && active.size() < static_cast<std::size_t>(arrivals.concurrent_sessions)) {
    if (Status s = refill(active.size()); !s.ok()) return s;
  }
  double now_s = 0.0;
  std::int64_t written = 0;
  TraceRequest r;
  while (!active.empty() && (arrivals.max_requests == 0 || written < arrivals.max_requests)) {
    now_s += clock.gap(1.0 / arrivals.rate, arrivals.arrival_cv);
    const std::size_t slot = pick.below(active.size());
    ActiveSession& a = active[slot];
    const Turn& turn = a.session.turns[a.next_turn];
    r = TraceRequest();
    std::ostringstream id;
    id << a.session.id << "-t" << a.next_turn;
    r.id = id.str();
    r.session_id = a.session.id;
    if (!(now_s * 1e6 <= static_cast<double>(kMaxArrivalTimeUs))) {
      return Status::error("arrival times pass " + std::to_string(kMaxArrivalTimeUs) +
                           " us (about 31 years) at request " + std::to_string(written) + "; raise the rate");
    }
    r.arrival_time_us = std::llround(now_s * 1e6);
    r.prompt_segments = a.history;
    r.prompt_segments.push_back(turn.user);
    expand_segments({turn.reply}, r.output_tokens);
    r.output_length = static_cast<std::int64_t>(r.output_tokens.size());
    if (Status s = writer.write(r); !s.ok()) return s;
    ++written;
    a.history.push_back(turn.user);
    a.history.push_back(turn.reply);
    if (++a.next_turn == a.session.turns.size()) {
      if (Status s = refill(slot); !s.ok()) return s;
    }
  }
  return written;
}

namespace {

// `v` in [lo, hi] (false for NaN).
bool within(double v, double lo, double hi) { return v >= lo && v <= hi; }

Status bad(const char* option, const std::string& why) { return Status::error(std::string(option) + ": " + why); }

// A prompt of two block references, `first` and `second` tokens long (`options` names both):
// each from 0 to kMaxBlockRefTokens, their sum positive. The bounds come before the sum, which
// could overflow otherwise.
Status check_prompt_parts(const char* options, int first, int second) {
  constexpr int kMax = kMaxBlockRefTokens;
  if (first < 0 || second < 0 || first > kMax || second > kMax || first + second <= 0) {
    return bad(options, "must be from 0 to " + std::to_string(kMax) + " with a positive sum");
  }
  return {};
}

}  // namespace

Status validate(const ShareGptGenOptions& o) {
  constexpr std::int64_t kMaxTurn = kMaxBlockRefTokens;  // one block reference
  if (o.num_requests < 1 || o.num_requests > kMaxGeneratedRequests) {
    return bad("--num-requests", "must be from 1 to " + std::to_string(kMaxGeneratedRequests));
  }
  if (!within(o.rate, kMinGenRate, kMaxGenRate)) return bad("--rate", "must be from 0.0001 to 1e9 per second");
  if (!within(o.arrival_cv, 1e-3, 100)) return bad("--arrival-cv", "must be from 0.001 to 100");
  if (o.concurrent_sessions < 1 || o.concurrent_sessions > 1000000)
    return bad("--sessions", "must be from 1 to 1000000");
  if (o.system_prompt_tokens < 0 || o.system_prompt_tokens > kMaxTurn) {
    return bad("--system-prompt", "must be from 0 to " + std::to_string(kMaxTurn) + " tokens");
  }
  if (!within(o.mean_turns, 1, 10000)) return bad("--mean-turns", "must be from 1 to 10000");
  if (!within(o.mean_user_tokens, 1, kMaxTurn))
    return bad("--mean-user", "must be from 1 to " + std::to_string(kMaxTurn));
  if (!within(o.mean_reply_tokens, 1, kMaxTurn)) {
    return bad("--mean-reply", "must be from 1 to " + std::to_string(kMaxTurn));
  }
  if (!within(o.sigma, 0, 4)) return bad("--sigma", "must be from 0 to 4");
  if (o.max_turn_tokens < 1 || o.max_turn_tokens > kMaxTurn) {
    return bad("--max-turn", "must be from 1 to " + std::to_string(kMaxTurn));
  }
  if (o.max_model_len < static_cast<std::int64_t>(o.system_prompt_tokens) + 2 || o.max_model_len > kMaxPromptTokens) {
    return bad("--max-model-len",
               "must leave room for a turn after --system-prompt and be at most " + std::to_string(kMaxPromptTokens));
  }
  return Status();
}

Status validate(const PrefixGenOptions& o) {
  if (o.num_prompts < 1 || o.num_prefixes < 1 || o.repeat < 1) {
    return bad("--num-prompts, --num-prefixes and --repeat", "must be > 0");
  }
  if (o.num_prompts > kMaxGeneratedRequests || o.num_prompts * o.repeat > kMaxGeneratedRequests) {
    return bad("--num-prompts",
               "times --repeat must be at most " + std::to_string(kMaxGeneratedRequests) + " requests");
  }
  if (Status s = check_prompt_parts("--prefix-len and --suffix-len", o.prefix_len, o.suffix_len); !s.ok()) return s;
  if (o.output_len < 0 || o.output_len > kMaxOutputTokens) {
    return bad("--output-len", "must be from 0 to " + std::to_string(kMaxOutputTokens));
  }
  if (o.rate != 0 && !within(o.rate, kMinGenRate, kMaxGenRate)) {
    return bad("--prefix-rate", "must be 0 or from 0.0001 to 1e9 per second");
  }
  return Status();
}

TraceHeader sharegpt_gen_header(const ShareGptGenOptions& o) {
  std::ostringstream src;
  src << "kvsim gen sharegpt --num-requests " << o.num_requests << " --seed " << o.seed << " --rate " << o.rate
      << " --arrival-cv " << o.arrival_cv << " --sessions " << o.concurrent_sessions << " --system-prompt "
      << o.system_prompt_tokens << " --mean-turns " << o.mean_turns << " --mean-user " << o.mean_user_tokens
      << " --mean-reply " << o.mean_reply_tokens << " --sigma " << o.sigma << " --max-turn " << o.max_turn_tokens
      << " --max-model-len " << o.max_model_len;
  TraceHeader h;
  h.source = src.str();
  h.tokenizer =
      "synthetic: every message is the expansion of its own random block id "
      "(traces/block_tokens.h)";
  h.vocab_size = kBlockTokenVocab;
  h.notes = "multi-turn chat: each prompt is the conversation so far; outputs are explicit";
  return h;
}

StatusOr<std::int64_t> generate_sharegpt(const ShareGptGenOptions& o, TraceWriter& writer) {
  KV_CHECK(o.mean_turns >= 1.0 && o.mean_user_tokens >= 1.0 && o.mean_reply_tokens >= 1.0);
  KV_CHECK(o.max_turn_tokens >= 1 && o.sigma >= 0.0);
  Sampler lengths(stream_seed(o.seed, 3));
  Sampler ids(stream_seed(o.seed, 4));
  const std::uint64_t system_block = stream_seed(o.seed, 5);
  std::int64_t session_index = 0;
  auto draw_len = [&](double mean) {
    // Redraws above max_turn_tokens (clamped after 64 tries, so a tiny limit cannot stall).
    std::int64_t n = 0;
    for (int attempt = 0; attempt < 64; ++attempt) {
      n = std::max<std::int64_t>(1, std::llround(lengths.lognormal_mean(mean, o.sigma)));
      if (n <= o.max_turn_tokens) break;
    }
    return static_cast<int>(std::min<std::int64_t>(n, o.max_turn_tokens));
  };
  // Turns per session: 1 + geometric with mean mean_turns - 1.
  const double p_more = (o.mean_turns - 1.0) / o.mean_turns;
  auto next_session = [&](Session* s) -> StatusOr<bool> {
    s->id = "s" + std::to_string(session_index++);
    s->preamble.clear();
    s->turns.clear();
    std::int64_t context = 0;
    if (o.system_prompt_tokens > 0) {
      s->preamble.push_back(PromptSegment::block(system_block, o.system_prompt_tokens));
      context = o.system_prompt_tokens;
    }
    do {
      int user = draw_len(o.mean_user_tokens);
      int reply = draw_len(o.mean_reply_tokens);
      if (context + user + reply > o.max_model_len) {
        if (!s->turns.empty()) break;
        // A session's first turn is shrunk to fit, so every session has at least one turn.
        const auto room = static_cast<int>(o.max_model_len - context);
        KV_CHECK(room >= 2, "max_model_len leaves no room for a turn");
        user = std::max(1, std::min(user, room / 2));
        reply = std::min(reply, room - user);
      }
      s->turns.push_back(Turn{PromptSegment::block(ids.bits(), user), PromptSegment::block(ids.bits(), reply)});
      context += user + reply;
    } while (lengths.uniform() < p_more);
    return true;  // an endless supply; max_requests ends the trace
  };
  ArrivalOptions a;
  a.rate = o.rate;
  a.arrival_cv = o.arrival_cv;
  a.concurrent_sessions = o.concurrent_sessions;
  a.max_requests = o.num_requests;
  a.seed = o.seed;
  return write_sessions(a, next_session, writer);
}

TraceHeader prefix_gen_header(const PrefixGenOptions& o) {
  std::ostringstream src;
  src << "kvsim gen prefix --num-prompts " << o.num_prompts << " --num-prefixes " << o.num_prefixes << " --prefix-len "
      << o.prefix_len << " --suffix-len " << o.suffix_len << " --repeat " << o.repeat << " --output-len "
      << o.output_len << " --rate " << o.rate << " --seed " << o.seed;
  TraceHeader h;
  h.source = src.str();
  h.tokenizer =
      "synthetic: prefixes and suffixes are expansions of random block ids "
      "(traces/block_tokens.h)";
  h.vocab_size = kBlockTokenVocab;
  h.notes = "prefix-caching benchmark shape: shared prefix + unique suffix, each prompt repeated";
  return h;
}

StatusOr<std::int64_t> generate_prefix(const PrefixGenOptions& o, TraceWriter& writer) {
  KV_CHECK(o.num_prompts > 0 && o.num_prefixes > 0 && o.repeat > 0 && o.output_len >= 0);
  KV_CHECK(o.prefix_len >= 0 && o.suffix_len >= 0 && o.prefix_len + o.suffix_len > 0);
  Sampler rng(stream_seed(o.seed, 6));
  Sampler clock(stream_seed(o.seed, 7));
  // (prompt index) repeated `repeat` times, then a Fisher-Yates shuffle.
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(o.num_prompts * o.repeat));
  for (std::int64_t p = 0; p < o.num_prompts; ++p) {
    for (int k = 0; k < o.repeat; ++k) order.push_back(p);
  }
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.below(i)]);
  }
  const std::uint64_t prefix_base = stream_seed(o.seed, 8);
  const std::uint64_t suffix_base = stream_seed(o.seed, 9);
  std::vector<int> copies(static_cast<std::size_t>(o.num_prompts), 0);
  double now_s = 0.0;
  std::int64_t written = 0;
  for (std::int64_t p : order) {
    TraceRequest r;
    r.id = "p" + std::to_string(p) + "-r" + std::to_string(copies[static_cast<std::size_t>(p)]++);
    if (o.rate > 0) now_s += clock.exponential(1.0 / o.rate);
    if (!(now_s * 1e6 <= static_cast<double>(kMaxArrivalTimeUs))) {
      return Status::error("arrival times pass " + std::to_string(kMaxArrivalTimeUs) +
                           " us (about 31 years) at request " + std::to_string(written) + "; raise --prefix-rate");
    }
    r.arrival_time_us = std::llround(now_s * 1e6);
    if (o.prefix_len > 0) {
      const auto prefix = static_cast<std::uint64_t>(p % o.num_prefixes);
      r.prompt_segments.push_back(PromptSegment::block(splitmix64(prefix_base + prefix), o.prefix_len));
    }
    if (o.suffix_len > 0) {
      r.prompt_segments.push_back(
          PromptSegment::block(splitmix64(suffix_base + static_cast<std::uint64_t>(p)), o.suffix_len));
    }
    r.output_length = o.output_len;
    if (Status s = writer.write(r); !s.ok()) return s;
    ++written;
  }
  return written;
}

StatusOr<std::vector<std::pair<double, double>>> parse_stages(std::string_view text) {
  std::vector<std::pair<double, double>> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string stage(text.substr(start, comma - start));
    const std::size_t colon = stage.find(':');
    const std::optional<double> rate =
        colon == std::string::npos ? std::nullopt : parse_finite_double(stage.substr(0, colon));
    const std::optional<double> seconds =
        colon == std::string::npos ? std::nullopt : parse_finite_double(stage.substr(colon + 1));
    if (!rate || !seconds || *rate <= 0 || *rate > 1e6 || *seconds <= 0 || *seconds > 1e7) {
      return bad("--stages", "stage " + std::to_string(out.size() + 1) + " '" + stage +
                                 "' is not RATE:SECONDS (rate in (0, 1e6] per second, seconds in (0, 1e7])");
    }
    out.emplace_back(*rate, *seconds);
    start = comma + 1;
  }
  return out;
}

Status validate(const SharedPrefixGenOptions& o) {
  if (o.groups < 1 || o.users < 1) return bad("--groups and --users", "must be > 0");
  if (o.num_requests < 1 || o.num_requests > kMaxGeneratedRequests) {
    return bad("--num-requests", "must be from 1 to " + std::to_string(kMaxGeneratedRequests));
  }
  if (Status s = check_prompt_parts("--prefix-len and --question-len", o.prefix_len, o.question_len); !s.ok()) {
    return s;
  }
  if (o.output_len < 0 || o.output_len > kMaxOutputTokens) {
    return bad("--output-len", "must be from 0 to " + std::to_string(kMaxOutputTokens));
  }
  if (!(o.rate >= 0 && o.rate <= 1e9)) return bad("--rate", "must be from 0 to 1e9 arrivals per second");
  double expected = 0;
  for (const auto& [rate, seconds] : o.stages) expected += rate * seconds;
  if (expected > static_cast<double>(kMaxGeneratedRequests) / 2) {
    return bad("--stages", "would bring about " + std::to_string(static_cast<std::int64_t>(expected)) +
                               " requests, more than " + std::to_string(kMaxGeneratedRequests / 2));
  }
  return {};
}

TraceHeader shared_prefix_gen_header(const SharedPrefixGenOptions& o) {
  std::ostringstream src;
  src << "kvsim gen shared-prefix --groups " << o.groups << " --users " << o.users << " --prefix-len " << o.prefix_len
      << " --question-len " << o.question_len << " --output-len " << o.output_len;
  if (o.stages.empty()) {
    src << " --num-requests " << o.num_requests << " --rate " << o.rate;
  } else {
    src << " --stages ";
    for (std::size_t i = 0; i < o.stages.size(); ++i)
      src << (i ? "," : "") << o.stages[i].first << ':' << o.stages[i].second;
  }
  src << " --seed " << o.seed;
  TraceHeader h;
  h.source = src.str();
  h.tokenizer = "synthetic: system prompts and questions are expansions of random block ids (traces/block_tokens.h)";
  h.vocab_size = kBlockTokenVocab;
  h.notes = "shared-prefix router benchmark: per group a system prompt, per user a question; prompts repeat";
  return h;
}

StatusOr<std::int64_t> generate_shared_prefix(const SharedPrefixGenOptions& o, TraceWriter& writer) {
  KV_CHECK(validate(o).ok(), validate(o).message());
  Sampler pick(stream_seed(o.seed, 10));
  Sampler clock(stream_seed(o.seed, 11));
  const std::uint64_t prefix_base = stream_seed(o.seed, 12);
  const std::uint64_t question_base = stream_seed(o.seed, 13);
  const auto users = static_cast<std::uint64_t>(o.users);
  // The arrival times: `rate` for num_requests requests, or each stage's rate for its seconds.
  std::size_t stage = 0;
  double now_s = 0.0, stage_end_s = o.stages.empty() ? 0.0 : o.stages[0].second;
  const auto next_arrival = [&]() -> bool {
    if (o.stages.empty()) {
      if (o.rate > 0) now_s += clock.exponential(1.0 / o.rate);
      return true;
    }
    while (stage < o.stages.size()) {
      const double t = now_s + clock.exponential(1.0 / o.stages[stage].first);
      if (t < stage_end_s) {
        now_s = t;
        return true;
      }
      now_s = stage_end_s;  // memoryless: the next stage starts afresh at its boundary
      if (++stage < o.stages.size()) stage_end_s += o.stages[stage].second;
    }
    return false;
  };
  std::int64_t i = 0;
  for (; (o.stages.empty() ? i < o.num_requests : true) && next_arrival(); ++i) {
    const std::uint64_t prompt = pick.below(static_cast<std::uint64_t>(o.groups) * users);
    const std::uint64_t group = prompt / users, user = prompt % users;
    TraceRequest r;
    r.session_id = "g" + std::to_string(group) + "-u" + std::to_string(user);
    r.id = r.session_id + "-r" + std::to_string(i);
    if (!(now_s * 1e6 <= static_cast<double>(kMaxArrivalTimeUs))) {
      return Status::error("arrival times pass " + std::to_string(kMaxArrivalTimeUs) + " us at request " +
                           std::to_string(i) + "; raise --rate");
    }
    r.arrival_time_us = std::llround(now_s * 1e6);
    if (o.prefix_len > 0)
      r.prompt_segments.push_back(PromptSegment::block(splitmix64(prefix_base + group), o.prefix_len));
    if (o.question_len > 0) {
      r.prompt_segments.push_back(PromptSegment::block(splitmix64(question_base + prompt), o.question_len));
    }
    r.output_length = o.output_len;
    if (Status s = writer.write(r); !s.ok()) return s;
  }
  return i;
}

}  // namespace kv::trace
