// Speculative decoding in replay: the simulated device samples the acceptance of each draft
// position with --acceptance-rates (seeded by --seed) and proposes the next drafts; the shadow
// memory checks that rejected drafts are never read; the figures are vLLM's spec-decoding
// metrics. Runs without speculation are pinned by replay_digests_test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "replay/replay_builder.h"

namespace kv {
namespace {

using namespace kv::replay;

using Options = std::vector<std::pair<std::string, std::string>>;

StatusOr<ReplaySummary> replay(const Options& options) {
  ReplayConfig c;
  c.run.replay.keep_decision_text = false;
  for (const auto& [name, value] : options) {
    if (Status s = set_option(c, name, value); !s.ok()) return s;
  }
  if (Status s = c.validate(); !s.ok()) return s;
  auto built = build_replay(c, "traces/data/sharegpt_sample.kvtrace");
  if (!built.ok()) return built.status();
  return built->make_replayer(c)->run();
}

const Options kEagle = {{"model", "llama3-8b"},
                        {"verify", "full"},
                        {"speculative-method", "eagle"},
                        {"num-speculative-tokens", "3"},
                        {"acceptance-rates", "0.8,0.6,0.4"}};

TEST(ReplaySpeculative, EagleRunsCleanAndAcceptsAsTheRatesSay) {
  auto s = replay(kEagle);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->violations.empty()) << s->violations.front();
  EXPECT_EQ(s->requests_rejected, 0);
  EXPECT_EQ(s->requests_finished, s->requests_total);
  const SpecDecodingFigures& f = s->spec;
  ASSERT_EQ(f.num_speculative_tokens, 3);
  ASSERT_GT(f.num_drafts, 1000);
  // Per draft, the accepted count a has P(a >= 1) = 0.8, P(a >= 2) = 0.48, P(a >= 3) = 0.192:
  // E[a] = 1.472 (mean acceptance length 2.472) and sd(a) = sqrt(3.2 - 1.472^2) = 1.016. Drafts
  // are independent draws, so the mean over N drafts has a standard error of 1.016 / sqrt(N);
  // allow 4 of them, plus the drafts that cannot be accepted in full (padding of a new decode,
  // drafts cut at a request's end), a few per request at most: 0.01.
  const double n = static_cast<double>(f.num_drafts);
  const double tolerance = 4 * 1.016 / std::sqrt(n) + 0.01;
  EXPECT_NEAR(f.mean_acceptance_length(), 2.472, tolerance) << f.num_drafts << " drafts";
  const double expected[] = {0.8, 0.48, 0.192};
  for (std::size_t i = 0; i < 3; ++i) {
    const double p = expected[i];  // a Bernoulli(p) per draft: standard error sqrt(p (1 - p) / N)
    EXPECT_NEAR(f.position_rate(i), p, 4 * std::sqrt(p * (1 - p) / n) + 0.01) << "position " << i;
  }
  EXPECT_EQ(f.num_accepted_tokens,
            f.accepted_per_position[0] + f.accepted_per_position[1] + f.accepted_per_position[2]);
  EXPECT_LE(f.num_draft_tokens, 3 * f.num_drafts);
}

TEST(ReplaySpeculative, SameInputsSameDigest) {
  auto a = replay(kEagle);
  auto b = replay(kEagle);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->digest, b->digest);
  EXPECT_EQ(a->spec.num_accepted_tokens, b->spec.num_accepted_tokens);
  Options other_seed = kEagle;
  other_seed.emplace_back("seed", "7");
  auto c = replay(other_seed);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->spec.num_accepted_tokens, c->spec.num_accepted_tokens);  // the draws follow --seed
}

TEST(ReplaySpeculative, SpeculationCostsFewerStepsThanPlainDecoding) {
  auto plain = replay({{"model", "llama3-8b"}, {"verify", "full"}});
  auto eagle = replay(kEagle);
  ASSERT_TRUE(plain.ok() && eagle.ok());
  EXPECT_EQ(plain->spec.num_speculative_tokens, 0);
  EXPECT_EQ(plain->output_tokens, eagle->output_tokens);  // the same teacher-forced outputs
  EXPECT_LT(eagle->steps, plain->steps);
}

TEST(ReplaySpeculative, EveryDrafterRuns) {
  for (const char* method : {"eagle3", "mtp", "draft-model", "ngram", "suffix", "medusa", "dflash"}) {
    auto s = replay({{"model", "llama3-8b"},
                     {"verify", "fast"},
                     {"limit", "40"},
                     {"speculative-method", method},
                     {"num-speculative-tokens", "2"},
                     {"acceptance-rates", "0.7,0.5"}});
    ASSERT_TRUE(s.ok()) << method << ": " << s.status().message();
    EXPECT_TRUE(s->violations.empty()) << method << ": " << s->violations.front();
    EXPECT_GT(s->spec.num_accepted_tokens, 0) << method;
  }
}

TEST(ReplaySpeculative, RefusesWhatVllmRefusesNamingTheOption) {
  const std::vector<std::pair<Options, std::string>> bad = {
      {{{"speculative-method", "eagle"}, {"num-speculative-tokens", "2"}, {"acceptance-rates", "1.5,0.5"}},
       "--acceptance-rates"},
      {{{"speculative-method", "eagle"}, {"num-speculative-tokens", "-1"}}, "--num-speculative-tokens"},
      {{{"speculative-method", "eagle"}, {"num-speculative-tokens", "3"}, {"acceptance-rates", "0.8,0.6"}},
       "--acceptance-rates"},
      {{{"speculative-method", "eagle"}, {"acceptance-rates", "0.8"}}, "--num-speculative-tokens"},
      {{{"num-speculative-tokens", "2"}}, "--num-speculative-tokens"},
      {{{"speculative-method", "lookahead"}}, "--speculative-method"},
      {{{"speculative-method", "ngram"},
        {"num-speculative-tokens", "1"},
        {"acceptance-rates", "0.5"},
        {"parallel-drafting", "on"}},
       "--speculative-method"},
  };
  for (const auto& [options, option] : bad) {
    auto s = replay(options);
    ASSERT_FALSE(s.ok()) << option;
    EXPECT_NE(s.status().message().find(option), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace kv
