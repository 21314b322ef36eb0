// kvsim: the command-line entry point; dispatches to one subcommand per file.
#include <boost/program_options/parsers.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "cli/commands.h"
#include "cli/kvsim_version.h"

namespace {

using kv::cli::Command;

const Command kCommands[] = {
    {"ops", "the what-if shell of docs/semantics.md §6: run an ops script against the KV-cache manager",
     kv::cli::run_ops},
    {"scenario", "check kvsim against scenario files recorded from vLLM (scheduler, KV-cache groups)",
     kv::cli::run_scenario},
    {"replay", "replay a trace through the scheduler on a device (sim or gpu); the main job", kv::cli::run_replay},
    {"fleet", "replay a trace through N engines behind a KV-aware router (docs/fleet.md)", kv::cli::run_fleet},
    {"gen", "write a seeded synthetic trace (sharegpt multi-turn chat, prefix benchmark)", kv::cli::run_gen},
    {"convert", "convert a ShareGPT, Mooncake, Azure, BurstGPT or pre-tokenized JSONL trace to a kvsim trace",
     kv::cli::run_convert},
    {"tokenize", "print the token ids of JSON strings under a tokenizer.json (BPE) or word-hash",
     kv::cli::run_tokenize},
    {"trace", "trace info: sizes, lengths, arrivals and prefix sharing of a trace", kv::cli::run_trace},
    {"sweep", "hit rate (and serving metrics) against KV-cache capacity, policies and block sizes", kv::cli::run_sweep},
    {"capacity", "the highest request rate that meets a latency SLO (bisection over full replays)",
     kv::cli::run_capacity},
    {"report", "Markdown and HTML report with plots from one or more run folders", kv::cli::run_report},
    {"calibrate",
     "fit the cost model to a GPU kernel profile (a GPU preset file), or the host and front-end terms to a vllm bench "
     "serve result",
     kv::cli::run_calibrate},
    {"fuzz", "run the stateful property tests for a time budget; prints a shrunk ops script on failure",
     kv::cli::run_fuzz},
};

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: kvsim <command> [options]   (kvsim <command> --help for its options;\n"
               "       kvsim --version)\n\n");
  std::fprintf(f, "commands:\n");
  for (const Command& c : kCommands) std::fprintf(f, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

namespace kv::cli {
int usage_error(std::string_view command, std::string_view message) {
  std::cerr << "kvsim " << command << ": " << message << "\n";
  return 2;
}

bool parse_options(int argc, char** argv, const boost::program_options::options_description& opts,
                   const boost::program_options::positional_options_description* pos,
                   boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  po::command_line_parser parser(argc, argv);
  parser.options(opts);
  if (pos != nullptr) parser.positional(*pos);
  po::store(parser.run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}
}  // namespace kv::cli

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write then fails with EFBIG, which the writers report
  // naming the file, instead of the process dying of SIGXFSZ with its outputs cut.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--version" || name == "-V") {
    std::printf("kvsim %s (commit %s, %s build)\n", KVSIM_VERSION, KVSIM_GIT_COMMIT, KVSIM_BUILD_TYPE);
    return 0;
  }
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name == c.name) {
      std::string prog = std::string("kvsim ") + c.name;
      argv[1] = prog.data();
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::bad_alloc&) {
        return kv::cli::usage_error(
            c.name,
            "out of memory (lower the sizes asked for: --num-blocks, --kv-cache-tokens, --jobs, or "
            "the trace's)");
      } catch (const std::exception& e) {
        // Option parsing and library errors on bad input end here, never in a crash.
        return kv::cli::usage_error(c.name, e.what());
      }
    }
  }
  std::fprintf(stderr, "kvsim: unknown command '%s'\n\n", name.c_str());
  usage(stderr);
  return 2;
}
