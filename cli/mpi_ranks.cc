#include "cli/mpi_ranks.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

#ifdef KVSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace kv::cli {

namespace {

// Length-prefixed records: 8-byte index, 8-byte length, the bytes.
std::string encode(const std::vector<std::pair<std::size_t, std::string>>& items) {
  std::string out;
  for (const auto& [index, text] : items) {
    const std::uint64_t head[2] = {index, text.size()};
    out.append(reinterpret_cast<const char*>(head), sizeof head);
    out += text;
  }
  return out;
}

void decode(const char* p, std::size_t n, std::map<std::size_t, std::string>& out) {
  for (std::size_t at = 0; at + 16 <= n;) {
    std::uint64_t head[2];
    std::memcpy(head, p + at, sizeof head);
    at += sizeof head;
    out[head[0]] = std::string(p + at, head[1]);
    at += head[1];
  }
}

}  // namespace

#ifdef KVSIM_HAVE_MPI

MpiRanks::MpiRanks() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr) return;
  MPI_Init(nullptr, nullptr);
  initialized_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiRanks::~MpiRanks() {
  if (initialized_) MPI_Finalize();
}

std::vector<std::string> MpiRanks::gather(const std::vector<std::pair<std::size_t, std::string>>& mine) const {
  const std::string buf = encode(mine);
  std::map<std::size_t, std::string> all;
  if (!initialized_) {
    decode(buf.data(), buf.size(), all);
  } else {
    int len = static_cast<int>(buf.size());
    std::vector<int> lens(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<char> recv;
    if (rank_ == 0) {
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        offsets[static_cast<std::size_t>(r)] = total;
        total += lens[static_cast<std::size_t>(r)];
      }
      recv.resize(static_cast<std::size_t>(std::max(total, 1)));
    }
    MPI_Gatherv(buf.data(), len, MPI_CHAR, recv.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank_ == 0) decode(recv.data(), recv.size(), all);
  }
  std::vector<std::string> out;
  if (rank_ == 0) {
    for (auto& [index, text] : all) out.push_back(std::move(text));
  }
  return out;
}

bool MpiRanks::all_ok(bool ok) const {
  if (!initialized_) return ok;
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

#else

MpiRanks::MpiRanks() = default;
MpiRanks::~MpiRanks() = default;

std::vector<std::string> MpiRanks::gather(const std::vector<std::pair<std::size_t, std::string>>& mine) const {
  const std::string buf = encode(mine);
  std::map<std::size_t, std::string> all;
  decode(buf.data(), buf.size(), all);
  std::vector<std::string> out;
  for (auto& [index, text] : all) out.push_back(std::move(text));
  return out;
}

bool MpiRanks::all_ok(bool ok) const { return ok; }

#endif

}  // namespace kv::cli
