#include "fleet/router.h"

#include "model/util/check.h"

namespace kv::fleet {

int Router::route(const RouteRequest& request) {
  KV_CHECK(
      request.prompt_tokens > 0 && request.block_size > 0,
      "request " << request.id << ": prompt_tokens=" << request.prompt_tokens << " block_size=" << request.block_size);
  const int replica = choose(request);
  KV_CHECK(replica >= 0 && replica < num_replicas(), name()
                                                         << " chose replica " << replica << " of " << num_replicas());
  view_.add_routed(request.id, replica, request.blocks());
  on_routed(request, replica);
  return replica;
}

}  // namespace kv::fleet
