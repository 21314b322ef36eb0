// files/: AtomicFile appears only complete and never replaces without leave; OutputFolder locks,
// stages and swaps a folder in as a unit. Also model/sched/output_tokens.h (lazy outputs).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "files/output_file.h"
#include "files/output_folder.h"
#include "model/sched/output_tokens.h"

namespace kv::files {
namespace {
namespace fs = std::filesystem;

fs::path scratch() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path d = fs::temp_directory_path() / ("kvsim_files_test_" + std::to_string(::getpid())) / info->name();
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::size_t entries(const fs::path& d) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
}

TEST(AtomicFile, AppearsOnlyOnCommitAndKeepsTheOldFileUntilThen) {
  const fs::path d = scratch();
  const fs::path p = d / "out.txt";
  std::ofstream(p) << "old";
  StatusOr<AtomicFile> refused = AtomicFile::create(p.string(), /*overwrite=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("exists"), std::string::npos);
  {
    StatusOr<AtomicFile> f = AtomicFile::create(p.string(), /*overwrite=*/true);
    ASSERT_TRUE(f.ok()) << f.status().message();
    f->out().write("new bytes");
    EXPECT_EQ(read(p), "old");  // not yet
  }                             // destroyed without commit: abandoned
  EXPECT_EQ(read(p), "old");
  EXPECT_EQ(entries(d), 1u);  // the temporary file is gone
  StatusOr<AtomicFile> f = AtomicFile::create(p.string(), true);
  ASSERT_TRUE(f.ok());
  f->out().write("new bytes");
  ASSERT_TRUE(f->commit().ok());
  EXPECT_EQ(read(p), "new bytes");
  EXPECT_EQ(entries(d), 1u);
}

TEST(AtomicFile, RefusesToReplaceWhatIsNotARegularFile) {
  const fs::path d = scratch();
  const fs::path p = d / "pipe";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  StatusOr<AtomicFile> f = AtomicFile::create(p.string(), /*overwrite=*/true);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("not a regular file"), std::string::npos) << f.status().message();
  EXPECT_TRUE(fs::is_fifo(p));
  EXPECT_EQ(entries(d), 1u);
}

TEST(AtomicFile, CommitWithoutOverwriteRefusesAFileThatAppearedMeanwhile) {
  const fs::path d = scratch();
  const fs::path p = d / "out.txt";
  StatusOr<AtomicFile> f = AtomicFile::create(p.string(), false);
  ASSERT_TRUE(f.ok());
  f->out().write("mine");
  std::ofstream(p) << "theirs";
  EXPECT_FALSE(f->commit().ok());
  EXPECT_EQ(read(p), "theirs");
  EXPECT_EQ(entries(d), 1u);
}

TEST(OutputFile, FileSizeLimitIsAnErrorNamingTheFile) {
  const fs::path d = scratch();
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  StatusOr<OutputFile> f = OutputFile::create((d / "big.csv").string());
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < 1000; ++i) f->write(std::string(100, 'x'));
  const Status closed = f->close();
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(closed.ok());
  EXPECT_NE(closed.message().find("big.csv"), std::string::npos) << closed.message();
  EXPECT_NE(closed.message().find("File too large"), std::string::npos) << closed.message();
}

TEST(OutputFolder, StagesLocksAndSwapsInAsAUnit) {
  const fs::path d = scratch();
  const std::string dir = (d / "run").string();
  fs::create_directories(dir);
  std::ofstream(d / "run" / "stale.log") << "from an earlier run";
  ASSERT_FALSE(OutputFolder::open(dir, /*overwrite=*/false).ok());  // not empty
  auto f = OutputFolder::open(dir, /*overwrite=*/true);
  ASSERT_TRUE(f.ok()) << f.status().message();
  auto second = OutputFolder::open(dir, true);  // the lock is held
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("being written by another kvsim process"), std::string::npos);
  ASSERT_TRUE(write_whole_file((*f)->staged("summary.json"), "{}").ok());
  EXPECT_TRUE(fs::exists(d / "run" / "stale.log"));  // untouched until commit
  ASSERT_TRUE((*f)->commit().ok());
  EXPECT_EQ(read(d / "run" / "summary.json"), "{}");
  EXPECT_FALSE(fs::exists(d / "run" / "stale.log"));
  f->reset();  // releases the lock
  auto third = OutputFolder::open(dir, true);
  ASSERT_TRUE(third.ok()) << third.status().message();
}

TEST(OutputFolder, DroppedWithoutCommitLeavesTheOldFolderAndNoStaging) {
  const fs::path d = scratch();
  const std::string dir = (d / "run").string();
  fs::create_directories(dir);
  std::ofstream(d / "run" / "summary.json") << "old";
  fs::create_directories(d / "run.tmp-999999");  // left by a killed run
  {
    auto f = OutputFolder::open(dir, true);
    ASSERT_TRUE(f.ok());
    EXPECT_FALSE(fs::exists(d / "run.tmp-999999"));  // cleared under the lock
    ASSERT_TRUE(write_whole_file((*f)->staged("summary.json"), "new").ok());
  }
  EXPECT_EQ(read(d / "run" / "summary.json"), "old");
  for (const auto& e : fs::directory_iterator(d)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

TEST(OutputTokens, GeneratedTokensAreComputedWhenAskedAndStable) {
  int calls = 0;
  OutputTokens huge = OutputTokens::generated(1'000'000'000, [&calls](std::int64_t k) {
    ++calls;
    return static_cast<TokenId>(k % 7);
  });
  EXPECT_EQ(huge.size(), 1'000'000'000u);  // nothing materialized
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(huge[999'999'999], 999'999'999 % 7);
  EXPECT_EQ(huge[999'999'999], huge[999'999'999]);
  OutputTokens listed = std::vector<TokenId>{4, 5};
  listed.push_back(6);
  EXPECT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[2], 6);
  OutputTokens small = OutputTokens::generated(3, [](std::int64_t k) { return static_cast<TokenId>(10 + k); });
  small.push_back(99);  // turns explicit
  EXPECT_EQ(small.to_vector(), (std::vector<TokenId>{10, 11, 12, 99}));
}

}  // namespace
}  // namespace kv::files
