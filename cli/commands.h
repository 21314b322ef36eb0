// The kvsim subcommands. Each lives in its own cmd_<name>.cc and takes the arguments after its
// name (argv[0] is "kvsim <name>"). Exit status: 0 success, 1 the work found a problem (a
// failed check, a verification error), 2 bad usage or bad input.
#pragma once

namespace kv::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

int run_ops(int argc, char** argv);
int run_replay(int argc, char** argv);
int run_gen(int argc, char** argv);
int run_convert(int argc, char** argv);
int run_trace(int argc, char** argv);
int run_sweep(int argc, char** argv);
int run_report(int argc, char** argv);
int run_calibrate(int argc, char** argv);
int run_fuzz(int argc, char** argv);

}  // namespace kv::cli
