// Request: a deferred prompt is expanded and hashed on first use, and then is the same request.
#include "model/request.h"

#include <gtest/gtest.h>

#include <vector>

namespace kv {
namespace {

std::vector<TokenId> prompt_of(int n) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(1000 + 7 * i);
  return p;
}

TEST(RequestTest, DeferredPromptIsExpandedOnFirstUse) {
  const BlockHasher hasher;
  int expansions = 0;
  DeferredPrompt deferred{40, [&expansions](std::vector<TokenId>& out) {
                            ++expansions;
                            const std::vector<TokenId> p = prompt_of(40);
                            out.insert(out.end(), p.begin(), p.end());
                          }};
  Request lazy("r", std::move(deferred), HashExtras{}, &hasher, 16);
  const Request eager("r", prompt_of(40), HashExtras{}, &hasher, 16);
  EXPECT_EQ(lazy.num_tokens(), 40);
  EXPECT_EQ(lazy.num_prompt_tokens(), 40);
  EXPECT_EQ(expansions, 0);
  ASSERT_EQ(lazy.block_hashes().size(), 2u);
  EXPECT_EQ(expansions, 1);
  EXPECT_EQ(lazy.block_hashes(), eager.block_hashes());
  EXPECT_EQ(std::vector<TokenId>(lazy.tokens().begin(), lazy.tokens().end()), prompt_of(40));
  EXPECT_EQ(expansions, 1);
}

TEST(RequestTest, AppendingToADeferredPromptExpandsItFirst) {
  const BlockHasher hasher;
  Request lazy("r",
               DeferredPrompt{30,
                              [](std::vector<TokenId>& out) {
                                const std::vector<TokenId> p = prompt_of(30);
                                out.insert(out.end(), p.begin(), p.end());
                              }},
               HashExtras{}, &hasher, 16);
  Request eager("r", prompt_of(30), HashExtras{}, &hasher, 16);
  const std::vector<TokenId> outputs = {5, 6};
  lazy.append_tokens(outputs);
  eager.append_tokens(outputs);
  EXPECT_EQ(lazy.num_tokens(), 32);
  EXPECT_EQ(lazy.num_output_tokens(), 2);
  EXPECT_EQ(lazy.block_hashes(), eager.block_hashes());
  EXPECT_EQ(std::vector<TokenId>(lazy.tokens().begin(), lazy.tokens().end()),
            std::vector<TokenId>(eager.tokens().begin(), eager.tokens().end()));
}

}  // namespace
}  // namespace kv
