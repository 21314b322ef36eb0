// Helpers shared by the traces_* tests: scratch files under the build's temporary directory.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace kv::trace::testing {

// A fresh path in a per-test scratch directory (removed and recreated for each test).
inline std::string scratch_path(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("kvsim_traces_test_" + std::to_string(::getpid())) /
                                    (std::string(info->test_suite_name()) + "." + info->name());
  static std::string last;
  if (last != dir.string()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    last = dir.string();
  }
  return (dir / name).string();
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace kv::trace::testing
