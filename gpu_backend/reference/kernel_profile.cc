#include "gpu_backend/reference/kernel_profile.h"

#include <algorithm>
#include <sstream>

namespace kv::gpuref {

void KernelProfile::add(const std::string& kernel, std::int64_t num_tokens, std::int64_t num_seqs,
                        std::int64_t context_tokens, std::int64_t time_ns) {
  const bool attention = kernel == "attention";
  const Key key{kernel, num_tokens, attention ? num_seqs : 0, attention ? context_tokens : 0};
  auto [it, fresh] = index_.try_emplace(key, rows_.size());
  if (fresh) rows_.push_back({num_tokens, num_seqs, context_tokens, kernel, {}});
  rows_[it->second].times.push_back(time_ns);
}

std::string KernelProfile::csv() const {
  std::ostringstream out;
  out << "kernel,num_tokens,num_seqs,context_tokens,time_ns\n";
  for (const Row& r : rows_) {
    std::vector<std::int64_t> t = r.times;
    const auto mid = t.begin() + static_cast<std::ptrdiff_t>((t.size() - 1) / 2);
    std::nth_element(t.begin(), mid, t.end());
    out << r.kernel << ',' << r.num_tokens << ',' << r.num_seqs << ',' << r.context_tokens << ',' << *mid << '\n';
  }
  return out.str();
}

}  // namespace kv::gpuref
