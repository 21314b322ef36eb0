// MpiRanks: sweep points spread over the ranks of an MPI launch (`mpirun -np N kvsim sweep
// --vary ...`). Without mpirun (or in a build without MPI) there is one rank and nothing
// changes. Rank r runs the points whose index % N == r and writes their run folders; rank 0
// gathers every point's rows, in index order, and writes the merged files, so the merged
// results are the same bytes for any N.
// Open MPI is detected from its launch environment; MPI is initialized only under a launcher.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace kv::cli {

class MpiRanks {
 public:
  MpiRanks();   // initializes MPI when launched by mpirun
  ~MpiRanks();  // finalizes it
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool mine(std::size_t index) const { return static_cast<int>(index % static_cast<std::size_t>(size_)) == rank_; }

  // Every rank passes its (index, text) pairs; rank 0 gets all of them sorted by index, the
  // others get nothing. Collective: every rank must call it.
  std::vector<std::string> gather(const std::vector<std::pair<std::size_t, std::string>>& mine) const;
  // Collective: true on every rank when every rank passed true.
  bool all_ok(bool ok) const;

 private:
  int rank_ = 0, size_ = 1;
  bool initialized_ = false;
};

}  // namespace kv::cli
