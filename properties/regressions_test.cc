// Every shrunk counterexample kept under properties/regressions/ (NAME.ops with NAME.expected)
// runs through OpsInterpreter and must print exactly its expected output and exit 0.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ops/ops_interpreter.h"

namespace kv {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

TEST(PropertyRegressions, ReplayExactly) {
  const std::filesystem::path dir = "properties/regressions";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << "run from the repository root";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".ops") continue;
    std::filesystem::path expected_path = entry.path();
    expected_path.replace_extension(".expected");
    ASSERT_TRUE(std::filesystem::exists(expected_path)) << entry.path() << " has no .expected file";
    std::ifstream in(entry.path());
    std::ostringstream out, err;
    const int rc = OpsInterpreter::run_script(in, out, err);
    EXPECT_EQ(rc, 0) << entry.path() << ": " << err.str();
    EXPECT_EQ(out.str(), slurp(expected_path)) << entry.path();
    ++count;
  }
  std::cout << count << " regression scripts replayed\n";
}

}  // namespace
}  // namespace kv
