// The scenario files of one golden folder (tests/golden*/), found at run time in name order,
// and the gtest name of each (the file name without ".json", other characters than letters
// and digits as '_'). The golden tests run one parameterized test per file with these, and
// their error tests run edited copies of a scenario (edited_copy).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace kv::golden {

inline std::vector<std::string> scenario_files(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.rfind('.'));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// A copy of `source` with the first `from` replaced by `to` (a test failure if absent), written
// as `name` in the temporary directory; returns its path.
inline std::string edited_copy(const std::filesystem::path& source, const std::string& from, const std::string& to,
                               const std::string& name) {
  std::ifstream in(source);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  const std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace kv::golden
