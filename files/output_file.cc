#include "files/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace kv::files {
namespace fs = std::filesystem;

namespace {

Status errno_status(const std::string& what, const std::string& path, int err) {
  return Status::error(what + " " + path + ": " + std::strerror(err));
}

// fsync of the folder holding `path`, so that a rename in it survives a crash.
void sync_parent(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);  // best effort: some file systems refuse fsync on folders
  ::close(fd);
}

// rename(2) without replacing: renameat2(RENAME_NOREPLACE), or, where the file system lacks
// it, link + unlink for files.
int rename_no_replace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  std::error_code ec;
  if (fs::is_directory(from, ec)) {
    if (fs::exists(to, ec)) {
      errno = EEXIST;
      return -1;
    }
    return ::rename(from.c_str(), to.c_str());
  }
  if (::link(from.c_str(), to.c_str()) != 0) return -1;
  ::unlink(from.c_str());
  return 0;
}

// Puts folder `from` in the place of folder `to` and deletes what `to` held.
Status swap_folders(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(from, ec);  // now the old folder
    return {};
  }
  if (errno != EINVAL && errno != ENOSYS) return errno_status("cannot replace", to, errno);
  const std::string old = to + ".old-" + std::to_string(::getpid());
  if (::rename(to.c_str(), old.c_str()) != 0) return errno_status("cannot move aside", to, errno);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int err = errno;
    ::rename(old.c_str(), to.c_str());
    return errno_status("cannot replace", to, err);
  }
  fs::remove_all(old, ec);
  return {};
}

}  // namespace

std::string temporary_name(const std::string& path) { return path + ".tmp-" + std::to_string(::getpid()); }

Status rename_into_place(const std::string& from, const std::string& to, bool replace) {
  std::error_code ec;
  const bool to_is_dir = fs::is_directory(fs::symlink_status(to, ec));
  if (!replace) {
    if (rename_no_replace(from, to) != 0) {
      return errno == EEXIST ? Status::error(to + " exists (appeared while writing; nothing was replaced)")
                             : errno_status("cannot rename into", to, errno);
    }
  } else if (to_is_dir && fs::is_directory(from, ec)) {
    if (Status s = swap_folders(from, to); !s.ok()) return s;
  } else if (to_is_dir) {
    return Status::error(to + " is a directory; not replacing it with a file");
  } else if (::rename(from.c_str(), to.c_str()) != 0) {
    return errno_status("cannot rename into", to, errno);
  }
  sync_parent(to);
  return {};
}

// ---- OutputFile

StatusOr<OutputFile> OutputFile::create(const std::string& path) {
  OutputFile f;
  f.path_ = path;
  f.file_ = std::fopen(path.c_str(), "wbe");
  if (f.file_ == nullptr) return errno_status("cannot create", path, errno);
  return f;
}

OutputFile::OutputFile(OutputFile&& other) noexcept { *this = std::move(other); }

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) std::fclose(file_);
    path_ = std::move(other.path_);
    file_ = std::exchange(other.file_, nullptr);
    error_ = std::move(other.error_);
    bytes_ = other.bytes_;
  }
  return *this;
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void OutputFile::fail(const char* what, int err) {
  if (error_.ok()) error_ = errno_status(what, path_, err);
}

void OutputFile::write(std::string_view bytes) {
  if (file_ == nullptr || !error_.ok() || bytes.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) fail("cannot write", errno);
  bytes_ += static_cast<std::int64_t>(bytes.size());
}

Status OutputFile::flush() {
  if (file_ != nullptr && error_.ok() && std::fflush(file_) != 0) fail("cannot write", errno);
  return error_;
}

Status OutputFile::close() {
  if (file_ == nullptr) return error_;
  if (error_.ok() && std::fflush(file_) != 0) fail("cannot write", errno);
  if (error_.ok() && ::fsync(::fileno(file_)) != 0 && errno != EINVAL) fail("cannot sync", errno);
  if (std::fclose(std::exchange(file_, nullptr)) != 0) fail("cannot close", errno);
  return error_;
}

// ---- AtomicFile

StatusOr<AtomicFile> AtomicFile::create(const std::string& path, bool overwrite) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) return Status::error(path + " is a directory");
  // A rename would put a regular file in place of a device, pipe or socket (/dev/null, say).
  if (fs::exists(st) && !fs::is_regular_file(st))
    return Status::error(path + " is not a regular file (only regular files are replaced)");
  if (fs::exists(st) && !overwrite) return Status::error(path + " exists (use --force to replace it)");
  const std::string temp = temporary_name(path);
  StatusOr<OutputFile> out = OutputFile::create(temp);
  if (!out.ok()) return out.status();
  return AtomicFile(path, temp, std::move(out.value()), overwrite);
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    abandon();
    path_ = std::move(other.path_);
    temp_ = std::exchange(other.temp_, std::string());
    out_ = std::move(other.out_);
    overwrite_ = other.overwrite_;
  }
  return *this;
}

AtomicFile::~AtomicFile() { abandon(); }

Status AtomicFile::commit() {
  if (temp_.empty()) return Status::error(path_ + ": already committed or abandoned");
  Status s = out_.close();
  if (s.ok()) s = rename_into_place(temp_, path_, overwrite_);
  if (!s.ok()) {
    abandon();
    return s;
  }
  temp_.clear();
  return {};
}

void AtomicFile::abandon() {
  if (temp_.empty()) return;
  (void)out_.close();
  ::unlink(temp_.c_str());
  temp_.clear();
}

Status write_whole_file(const std::string& path, std::string_view text) {
  StatusOr<OutputFile> f = OutputFile::create(path);
  if (!f.ok()) return f.status();
  f->write(text);
  return f->close();
}

Status write_file_atomically(const std::string& path, std::string_view text, bool overwrite) {
  StatusOr<AtomicFile> f = AtomicFile::create(path, overwrite);
  if (!f.ok()) return f.status();
  f->out().write(text);
  return f->commit();
}

}  // namespace kv::files
