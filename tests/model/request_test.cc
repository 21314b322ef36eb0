// Request: a deferred prompt is expanded and hashed on first use, and then is the same request;
// hashes given with the prompt are taken as its first blocks' and the rest computed after them.
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

// A fleet's router hashed the prompt to route it: the request takes those hashes as given (a
// marker in place of block 0's proves it does not recompute them) and chains the rest from
// them, eager or deferred; the true hashes give the request built without them.
TEST(RequestTest, GivenPromptHashesAreTakenAndTheRestChainedFromThem) {
  const BlockHasher hasher;
  const std::vector<TokenId> prompt = prompt_of(40);
  const Request plain("r", prompt, HashExtras{}, &hasher, 16);
  ASSERT_EQ(plain.block_hashes().size(), 2u);

  BlockHash marker;
  marker.bytes.fill(0xab);
  marker.size = 32;
  const BlockHash second =
      hasher.hash_block(marker, std::span<const TokenId>(prompt).subspan(16, 16), HashExtras{}, 16);
  const Request eager("r", prompt, HashExtras{}, &hasher, 16, {marker});
  EXPECT_EQ(eager.block_hashes(), (std::vector<BlockHash>{marker, second}));

  Request deferred("r",
                   DeferredPrompt{40,
                                  [](std::vector<TokenId>& out) {
                                    const std::vector<TokenId> p = prompt_of(40);
                                    out.insert(out.end(), p.begin(), p.end());
                                  }},
                   HashExtras{}, &hasher, 16, {marker});
  EXPECT_EQ(deferred.block_hashes(), (std::vector<BlockHash>{marker, second}));

  const Request given("r", prompt, HashExtras{}, &hasher, 16, plain.block_hashes());
  EXPECT_EQ(given.block_hashes(), plain.block_hashes());
  const Request off("r", prompt, HashExtras{}, nullptr, 16, plain.block_hashes());
  EXPECT_TRUE(off.block_hashes().empty());  // prefix caching off: no hashes, given or not
}

TEST(RequestTest, MoreGivenHashesThanFullBlocksAreRefused) {
  const BlockHasher hasher;
  const Request plain("r", prompt_of(40), HashExtras{}, &hasher, 16);
  std::vector<BlockHash> three = plain.block_hashes();
  three.push_back(three.back());
  EXPECT_DEATH(Request("r", prompt_of(40), HashExtras{}, &hasher, 16, three), "3 prompt hashes given for 40 tokens");
}

}  // namespace
}  // namespace kv
