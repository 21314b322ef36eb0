// How tests run the built kvsim binary: run_kvsim(binary, args) runs `'binary' args` through
// the shell (args may redirect standard input), captures standard output and standard error
// apart and returns the exit status. make_scratch_trace gives a test a fresh folder with a
// small trace in it.
// Invariants: status is the exit code, or -1 when the process did not exit (a signal); the
// capture files are removed before run_kvsim returns; concurrent calls use distinct files.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

// A fresh folder temp/<label>_<pid>_<test name> (emptied first), and in it t.kvtrace: a small
// prefix-sharing trace made by `kvsim gen prefix` (2 prompts of a 64-token prefix and 16 unique
// tokens, 3 copies each, 4 output tokens). ASSERTs that the generator succeeded.
inline void make_scratch_trace(const std::string& binary, const std::string& label, std::filesystem::path& dir,
                               std::string& trace) {
  dir = std::filesystem::temp_directory_path() / (label + "_" + std::to_string(::getpid()) + "_" +
                                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  trace = (dir / "t.kvtrace").string();
  const KvsimRun g = run_kvsim(
      binary,
      "gen prefix --num-prompts 2 --prefix-len 64 --suffix-len 16 --repeat 3 --output-len 4 --seed 3 -o " + trace);
  ASSERT_EQ(g.status, 0) << g.output();
}

}  // namespace kv::test
