// OutputFile and AtomicFile: files that are either complete or absent.
//
// OutputFile writes straight to its path through a buffer and remembers the first write error
// (full disk, file-size limit, I/O error); close() flushes, fsyncs and closes, and returns that
// error naming the file. Use it for files inside a staging folder (files/output_folder.h),
// where the folder is the unit that appears complete.
// AtomicFile writes to `PATH.tmp-<pid>` beside PATH and renames it onto PATH only in commit(),
// after the data is on disk; a run that fails or is killed leaves PATH as it was.
// Invariants:
//   1. Every write error is reported by close()/commit(), with the path and the errno text;
//      writes after an error are dropped (the first error wins).
//   2. AtomicFile never truncates or removes PATH: before commit() returns ok, PATH holds its
//      previous bytes (or does not exist); after, it holds exactly the bytes written.
//   3. Without overwrite, commit() refuses (and never replaces) a PATH that appeared meanwhile.
//      An existing PATH that is not a regular file (a device such as /dev/null, a pipe) is
//      refused by create(), overwrite or not: a rename would replace it.
//   4. An AtomicFile destroyed or abandoned without commit() removes its temporary file.
// The process must ignore SIGXFSZ (kvsim's main does) so that a file-size limit makes writes
// fail with EFBIG instead of killing the process.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "model/util/status.h"

namespace kv::files {

class OutputFile {
 public:
  static StatusOr<OutputFile> create(const std::string& path);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  ~OutputFile();  // closes without reporting if close() was not called

  void write(std::string_view bytes);  // sticky error: see status()
  // Flushes, fsyncs and closes; the first error of any write or of these, naming the file.
  Status close();
  // Flushes the buffer (the bytes reach the kernel) and reports the first error so far.
  Status flush();
  const Status& status() const { return error_; }
  std::int64_t bytes_written() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  OutputFile() = default;
  void fail(const char* what, int err);

  std::string path_;
  std::FILE* file_ = nullptr;  // open until close()
  Status error_;               // the first error
  std::int64_t bytes_ = 0;
};

class AtomicFile {
 public:
  // Refuses an existing PATH unless overwrite, and a PATH that is a directory.
  static StatusOr<AtomicFile> create(const std::string& path, bool overwrite);
  AtomicFile(AtomicFile&& other) noexcept
      : path_(std::move(other.path_)),
        temp_(std::exchange(other.temp_, std::string())),
        out_(std::move(other.out_)),
        overwrite_(other.overwrite_) {}
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  ~AtomicFile();

  OutputFile& out() { return out_; }
  // Closes the temporary file and renames it onto PATH; on any error PATH is untouched.
  Status commit();
  // Drops what was written; PATH is untouched.
  void abandon();
  const std::string& path() const { return path_; }

 private:
  AtomicFile(std::string path, std::string temp, OutputFile out, bool overwrite)
      : path_(std::move(path)), temp_(std::move(temp)), out_(std::move(out)), overwrite_(overwrite) {}
  std::string path_, temp_;  // temp_ empty once committed or abandoned
  OutputFile out_;
  bool overwrite_ = false;
};

// Writes `text` to PATH through an OutputFile (inside a staging folder).
Status write_whole_file(const std::string& path, std::string_view text);

// Writes `text` to PATH through an AtomicFile.
Status write_file_atomically(const std::string& path, std::string_view text, bool overwrite = true);

// The temporary name of PATH for this process: PATH.tmp-<pid>.
std::string temporary_name(const std::string& path);

// Renames `from` onto `to`. Without replace, fails (EEXIST) rather than replace an existing
// `to`; with replace, an existing directory `to` is swapped out as a unit and deleted. Makes the
// rename durable (fsync of the parent folder).
Status rename_into_place(const std::string& from, const std::string& to, bool replace);

}  // namespace kv::files
