// Linked into every test program of kv_add_test: the program runs its tests with TMPDIR set to
// a fresh directory of its own (kvsim-test-XXXXXX under the TMPDIR it started with), removed
// when its tests end. The scratch files tests make under std::filesystem::temp_directory_path(),
// and those of the kvsim processes they start, so never outlive a run. A program that crashes
// or is killed leaves its directory behind, to be looked at.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace {

class ScratchTmpdir : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string dir = (std::filesystem::temp_directory_path() / "kvsim-test-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) return;  // keep the inherited TMPDIR
    dir_ = dir;
    ::setenv("TMPDIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  std::string dir_;
};

[[maybe_unused]] ::testing::Environment* const kScratch = ::testing::AddGlobalTestEnvironment(new ScratchTmpdir);

}  // namespace
