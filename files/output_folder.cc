#include "files/output_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "files/output_file.h"

namespace kv::files {
namespace fs = std::filesystem;

namespace {

// Opens and flocks DIR.lock; -1 with *error set when another process holds it.
int take_lock(const std::string& dir, Status* error) {
  const std::string path = dir + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = Status::error("cannot create lock file " + path + ": " + std::strerror(errno));
    return -1;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    *error = err == EWOULDBLOCK
                 ? Status::error("output " + dir + " is being written by another kvsim process (it holds " + path +
                                 "); wait for it or choose another folder")
                 : Status::error("cannot lock " + path + ": " + std::strerror(err));
    return -1;
  }
  return fd;
}

// Removes DIR.tmp-* left by runs that were killed (the caller holds the lock, so none is live).
void remove_stale_staging(const std::string& dir) {
  const fs::path d(dir);
  fs::path parent = d.parent_path();
  if (parent.empty()) parent = ".";
  const std::string prefix = d.filename().string() + ".tmp-";
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(parent, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove_all(e.path(), ec);
  }
}

// fsync of every regular file under `dir` and of its folders, so the commit is durable.
void sync_tree(const std::string& dir) {
  std::error_code ec;
  const auto sync_path = [](const fs::path& p, int flags) {
    const int fd = ::open(p.c_str(), flags | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
  };
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec))
      sync_path(e.path(), O_RDONLY);
    else if (e.is_directory(ec))
      sync_path(e.path(), O_RDONLY | O_DIRECTORY);
  }
  sync_path(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace

std::string staging_folder(const std::string& dir, const std::string& staging_suffix) {
  return dir + "." + (staging_suffix.empty() ? "tmp-" + std::to_string(::getpid()) : staging_suffix);
}

StatusOr<std::unique_ptr<OutputFolder>> OutputFolder::open(const std::string& dir, bool overwrite,
                                                           const std::string& staging_suffix) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  std::error_code ec;
  const fs::path parent = fs::path(d).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec) && !fs::create_directories(parent, ec)) {
    return Status::error("cannot create output directory " + parent.string() + ": " + ec.message());
  }
  Status locked;
  const int fd = take_lock(d, &locked);
  if (fd < 0) return locked;
  std::unique_ptr<OutputFolder> f(new OutputFolder(d, staging_folder(d, staging_suffix), fd, overwrite));
  if (fs::exists(d, ec)) {
    if (!fs::is_directory(d, ec)) return Status::error("output " + d + " exists and is not a directory");
    if (!fs::is_empty(d, ec) && !overwrite) {
      return Status::error("output directory " + d + " is not empty (use --force to replace it)");
    }
  }
  remove_stale_staging(d);
  if (!fs::create_directory(f->staging_, ec)) {
    return Status::error("cannot create staging directory " + f->staging_ + ": " +
                         (ec ? ec.message() : std::string("it exists")));
  }
  return f;
}

OutputFolder::~OutputFolder() {
  std::error_code ec;
  if (!committed_) fs::remove_all(staging_, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status OutputFolder::commit() {
  if (committed_) return Status::error(dir_ + ": already committed");
  sync_tree(staging_);
  std::error_code ec;
  // An empty DIR (allowed without overwrite) is replaced like a full one.
  const bool replace = overwrite_ || fs::is_directory(dir_, ec);
  if (Status s = rename_into_place(staging_, dir_, replace); !s.ok()) return s;
  committed_ = true;
  return {};
}

}  // namespace kv::files
