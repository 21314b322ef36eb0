// PromptPreparer: a worker that expands and hashes deferred prompts gives each request exactly
// the tokens and hashes it would have had, expands each once whoever gets there first, never
// touches a request after forget(), and changes no scheduling decision.
#include "model/prompt_preparer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "model/sched/scheduler.h"

namespace kv {
namespace {

// Prompt i: a prefix shared by every fourth request, then tokens of its own.
std::vector<TokenId> prompt_of(int i) {
  std::vector<TokenId> p;
  for (int k = 0; k < 48; ++k) p.push_back(100 + (i % 4) * 1000 + k);
  for (int k = 0; k < 20 + 7 * (i % 9); ++k) p.push_back(50000 + 97 * i + k);
  return p;
}

DeferredPrompt deferred_prompt(int i, std::atomic<int>* expansions) {
  return DeferredPrompt{static_cast<std::int64_t>(prompt_of(i).size()), [i, expansions](std::vector<TokenId>& out) {
                          expansions->fetch_add(1);
                          const std::vector<TokenId> p = prompt_of(i);
                          out.insert(out.end(), p.begin(), p.end());
                        }};
}

struct Requests {
  const BlockHasher hasher;
  std::atomic<int> expansions{0};
  std::vector<std::unique_ptr<Request>> lazy;
  std::vector<const Request*> order;

  explicit Requests(int n) {
    for (int i = 0; i < n; ++i) {
      lazy.push_back(std::make_unique<Request>("r" + std::to_string(i), deferred_prompt(i, &expansions), HashExtras{},
                                               &hasher, 16));
      order.push_back(lazy.back().get());
    }
  }
  // Request i as built from its whole prompt, on this thread.
  void expect_as_eager(int i) const {
    const Request eager("r" + std::to_string(i), prompt_of(i), HashExtras{}, &hasher, 16);
    const Request& r = *lazy[static_cast<std::size_t>(i)];
    EXPECT_EQ(std::vector<TokenId>(r.tokens().begin(), r.tokens().end()), prompt_of(i)) << "request " << i;
    EXPECT_EQ(r.block_hashes(), eager.block_hashes()) << "request " << i;
  }
};

TEST(PromptPreparerTest, TheWorkerGivesEachRequestItsOwnTokensAndHashes) {
  Requests rs(64);
  PromptPreparer preparer;
  preparer.want(rs.order);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (preparer.num_prepared() < 64 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(preparer.num_prepared(), 64);
  for (int i = 0; i < 64; ++i) {
    EXPECT_FALSE(rs.lazy[static_cast<std::size_t>(i)]->deferred());
    rs.expect_as_eager(i);
  }
  EXPECT_EQ(rs.expansions.load(), 64);
}

// The owner reads the requests last to first while the worker prepares them first to last:
// they meet in the middle, and each prompt is still expanded exactly once.
TEST(PromptPreparerTest, OwnerAndWorkerRacingExpandEachPromptOnce) {
  Requests rs(300);
  PromptPreparer preparer;
  preparer.want(rs.order);
  for (int i = 299; i >= 0; --i) rs.expect_as_eager(i);
  EXPECT_EQ(rs.expansions.load(), 300);
  EXPECT_LE(preparer.num_prepared(), 300);
}

// Requests named to the worker are forgotten and destroyed at once, while it may be preparing
// them (ASan and TSan check that it never touches one afterwards).
TEST(PromptPreparerTest, ForgottenRequestsCanBeDestroyedAtOnce) {
  for (int round = 0; round < 20; ++round) {
    Requests rs(40);
    PromptPreparer preparer;
    preparer.want(rs.order);
    for (int i = 0; i < 40; i += 2) {
      preparer.forget(rs.order[static_cast<std::size_t>(i)]);
      rs.lazy[static_cast<std::size_t>(i)].reset();
    }
    for (int i = 1; i < 40; i += 2) rs.expect_as_eager(i);
  }
}

// The same deferred workload, through a pool small enough to preempt, with and without the
// worker: every plan is the same. With the worker, each step pauses for a millisecond (a
// device running it), time enough for the worker to prepare the next requests.
std::vector<std::string> plans_of(bool prepare_ahead, std::int64_t* prepared) {
  SchedulerConfig c;
  c.cache.num_blocks = 40;
  c.cache.block_size = 16;
  c.max_num_batched_tokens = 96;
  c.max_num_seqs = 6;
  c.prepare_prompts_ahead = prepare_ahead;
  Scheduler s(c);
  std::atomic<int> expansions{0};
  for (int i = 0; i < 60; ++i) {
    RequestSpec r;
    r.id = "r" + std::to_string(i);
    r.deferred_prompt = deferred_prompt(i, &expansions);
    r.outputs.assign(static_cast<std::size_t>(3 + i % 11), 7);
    EXPECT_TRUE(s.add_request(std::move(r)).ok());
  }
  std::vector<std::string> plans;
  while (s.has_unfinished() && plans.size() < 5000) {
    const StepPlan plan = s.schedule();
    std::string line;
    for (const ScheduledRequest& r : plan.requests) {
      line += r.id + "+" + std::to_string(r.token_ids.size()) + "@" + std::to_string(r.num_computed_tokens) + "[";
      for (BlockId b : r.block_ids) line += std::to_string(b) + ",";
      line += "] ";
    }
    line += "preempted " + std::to_string(plan.preempted.size());
    plans.push_back(line);
    if (prepare_ahead) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    StepResult result;
    for (const ScheduledRequest& r : plan.requests) {
      if (r.samples) result.sampled.emplace_back(r.id, r.next_token);
    }
    s.update_from_output(plan, result);
  }
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(expansions.load(), 60);
  *prepared = s.num_prepared_ahead();
  return plans;
}

TEST(PromptPreparerTest, PreparingAheadChangesNoPlan) {
  std::int64_t inline_prepared = -1, ahead_prepared = -1;
  const std::vector<std::string> inline_plans = plans_of(false, &inline_prepared);
  const std::vector<std::string> ahead_plans = plans_of(true, &ahead_prepared);
  EXPECT_GT(inline_plans.size(), 20u);
  EXPECT_EQ(ahead_plans, inline_plans);
  EXPECT_EQ(inline_prepared, 0);
  EXPECT_GT(ahead_prepared, 0);  // the worker did take part
}

}  // namespace
}  // namespace kv
