// What every fuzz target of fuzz/ shares: the libFuzzer entry point it defines, a scratch
// folder for the inputs that kvsim reads from files, and the check that turns a broken
// promise of the code under test into a crash the fuzzer reports.
//
// Invariants:
//   1. A target never aborts on input the code under test rejects with a Status: only a crash,
//      a sanitizer report, a hang or a FUZZ_CHECK failure is a finding.
//   2. Each process writes only under its own scratch folder (temp dir, "kvsim-fuzz-<pid>"),
//      removed when the process exits; nothing else on disk is touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace kv::fuzz {

// The scratch folder of this process (created on first use).
const std::string& scratch_dir();

// Writes `bytes` to scratch_dir()/name and returns the path.
std::string write_scratch(const std::string& name, std::string_view bytes);

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void fail(const char* file, int line, const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s %s\n", file, line, what, detail.c_str());
  std::abort();
}

}  // namespace kv::fuzz

// A property the code under test promises; its failure is a finding.
#define FUZZ_CHECK(cond, detail)                                        \
  do {                                                                  \
    if (!(cond)) ::kv::fuzz::fail(__FILE__, __LINE__, #cond, (detail)); \
  } while (false)
