// How tests run the built kvsim binary: run_kvsim(binary, args) runs `'binary' args` through
// the shell (args may redirect standard input), captures standard output and standard error
// apart and returns the exit status.
// Invariants: status is the exit code, or -1 when the process did not exit (a signal); the
// capture files are removed before run_kvsim returns; concurrent calls use distinct files.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace kv::test {

struct KvsimRun {
  int status = -1;
  std::string out;  // standard output
  std::string err;  // standard error
  // Both streams, standard output first: for checks that do not care where a line went.
  std::string output() const { return out + err; }
};

inline std::string slurp_and_remove(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  std::remove(path.c_str());
  return s.str();
}

inline KvsimRun run_kvsim(const std::string& binary, const std::string& args) {
  static std::atomic<int> counter{0};
  const std::string base =
      ::testing::TempDir() + "kvsim_run_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string cmd = "'" + binary + "' " + args + " >'" + base + ".out' 2>'" + base + ".err'";
  const int raw = std::system(cmd.c_str());
  KvsimRun r;
  r.out = slurp_and_remove(base + ".out");
  r.err = slurp_and_remove(base + ".err");
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  return r;
}

}  // namespace kv::test
