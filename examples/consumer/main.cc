// kvsim_consumer TRACE [NUM_BLOCKS]: replays TRACE with kvsim's defaults (llama3-8b on a
// simulated h100-sxm, prefix caching on) through the installed library and prints the decision
// log's digest, the same one `kvsim replay --decision-log digest` prints.
#include <cstdio>
#include <string>

#include "replay/replay_builder.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kvsim_consumer TRACE [NUM_BLOCKS]\n");
    return 2;
  }
  kv::replay::ReplayConfig config;
  config.run.replay.keep_decision_text = false;
  if (argc > 2) {
    if (kv::Status s = kv::replay::set_option(config, "num-blocks", argv[2]); !s.ok()) {
      std::fprintf(stderr, "kvsim_consumer: %s\n", s.message().c_str());
      return 2;
    }
  }
  auto run = kv::replay::build_replay(config, argv[1]);
  if (!run.ok()) {
    std::fprintf(stderr, "kvsim_consumer: %s\n", run.status().message().c_str());
    return 2;
  }
  auto summary = run->make_replayer(config)->run();
  if (!summary.ok()) {
    std::fprintf(stderr, "kvsim_consumer: %s\n", summary.status().message().c_str());
    return 2;
  }
  std::printf("decision log sha256 %s\n", summary->digest.c_str());
  return 0;
}
