// for_each_index: runs work(i) for every i in [0, n) on `jobs` threads (the caller's included),
// handing out indices in order. Each index runs exactly once; results written by index are
// therefore the same whatever `jobs` is. on_progress (may be empty) is called, serialized,
// after each index with (done, n).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kv::replay {

inline void for_each_index(std::size_t n, int jobs, const std::function<void(std::size_t)>& work,
                           const std::function<void(std::size_t, std::size_t)>& on_progress) {
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::size_t done = 0;
  auto worker = [&] {
    for (std::size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      work(i);
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (on_progress) on_progress(done, n);
    }
  };
  const int threads_wanted = std::max(1, std::min<int>(jobs, static_cast<int>(n)));
  std::vector<std::thread> threads;
  for (int j = 1; j < threads_wanted; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
}

}  // namespace kv::replay
