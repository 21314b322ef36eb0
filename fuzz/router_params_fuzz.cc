// Fuzz target router_params: any bytes as a fleet router's configuration, "NAME" on the first
// line (round-robin, dynamo, llm-d-precise, ...) and "PARAM=VALUE" on each other line, given to
// make_router (fleet/router_factory.h) for a fleet of 1 to 8 replicas; an accepted router then
// routes a short seeded story of requests sharing prefixes, with loads and finishes between.
// Properties: a bad name or parameter is a Status, never a crash; an accepted router always
// returns a replica in range and keeps its invariants.
#include <sstream>

#include "fleet/router_factory.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in{std::string(kv::fuzz::as_text(data, size))};
  std::string name, line;
  std::getline(in, name);
  kv::fleet::RouterParams params;
  while (std::getline(in, line)) {
    const std::size_t eq = line.find('=');
    params[line.substr(0, eq)] = eq == std::string::npos ? "" : line.substr(eq + 1);
  }
  const int replicas = 1 + static_cast<int>(size % 8);
  auto router = kv::fleet::make_router(name, params, replicas, size);
  if (!router.ok()) return 0;
  for (int i = 0; i < 64; ++i) {
    kv::fleet::RouteRequest r;
    r.id = "r" + std::to_string(i);
    r.session_id = "s" + std::to_string(i % 5);
    r.prompt_tokens = 1 + 16 * (i % 7);
    r.now_ns = std::int64_t{i} * 1'000'000'000;
    for (std::int64_t b = 0; b < r.prompt_tokens / r.block_size; ++b) {
      kv::BlockHash h;
      h.size = 32;
      h.bytes[0] = static_cast<std::uint8_t>(b);
      h.bytes[1] = static_cast<std::uint8_t>(i % 3);  // three prefix families
      r.block_hashes.push_back(h);
    }
    const int chosen = (*router)->route(r);
    FUZZ_CHECK(chosen >= 0 && chosen < replicas, "replica " + std::to_string(chosen));
    (*router)->view().check_invariants();
    (*router)->on_load(chosen, kv::fleet::LoadReport{i % 4, i % 3, 0.1 * (i % 10)});
    if (i % 4 == 3) (*router)->on_finished("r" + std::to_string(i - 2), chosen);
  }
  return 0;
}
