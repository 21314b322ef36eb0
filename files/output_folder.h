// OutputFolder: a folder of results that appears at DIR only complete, with one writer at a time.
//
// open() takes an exclusive lock on DIR.lock (flock; a second writer is refused at once, and
// the lock goes away with the process however it ends), refuses a non-empty DIR unless
// overwrite, removes staging folders that killed runs left (DIR.tmp-*), and creates the
// staging folder DIR.tmp-<pid>, where every file is written. commit() fsyncs the staging
// folder and puts it in DIR's place as a unit (an existing DIR is swapped out and deleted), so
// no file of an earlier run survives and a reader never sees half of each.
// Invariants:
//   1. While an OutputFolder is open, no other OutputFolder (in any process) is open on DIR.
//   2. DIR changes only in commit(): before, it holds the previous complete result (or is
//      absent); after, exactly the staging folder's files.
//   3. An OutputFolder destroyed without commit() removes its staging folder.
#pragma once

#include <memory>
#include <string>

#include "model/util/status.h"

namespace kv::files {

class OutputFolder {
 public:
  // staging_suffix: the staging folder is DIR.<suffix> (default tmp-<pid>); MPI ranks that
  // share one staging folder pass the same fixed suffix.
  static StatusOr<std::unique_ptr<OutputFolder>> open(const std::string& dir, bool overwrite,
                                                      const std::string& staging_suffix = "");
  ~OutputFolder();
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& staging() const { return staging_; }  // write the files here
  std::string staged(const std::string& name) const { return staging_ + "/" + name; }
  Status commit();

 private:
  OutputFolder(std::string dir, std::string staging, int lock_fd, bool overwrite)
      : dir_(std::move(dir)), staging_(std::move(staging)), lock_fd_(lock_fd), overwrite_(overwrite) {}
  std::string dir_, staging_;
  int lock_fd_ = -1;  // holds DIR.lock's flock until destruction
  bool overwrite_ = false;
  bool committed_ = false;
};

// The staging folder of DIR with this suffix (see open()).
std::string staging_folder(const std::string& dir, const std::string& staging_suffix);

}  // namespace kv::files
