#include "model/prompt_preparer.h"

#include <algorithm>

namespace kv {

PromptPreparer::PromptPreparer() : worker_([this] { run(); }) {}

PromptPreparer::~PromptPreparer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  worker_.join();
}

void PromptPreparer::want(std::span<const Request* const> requests) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (requests.empty() && queue_.empty()) return;  // the common step: nothing new to wake for
    queue_.assign(requests.begin(), requests.end());
  }
  if (!requests.empty()) cv_.notify_all();
}

void PromptPreparer::forget(const Request* r) {
  std::unique_lock<std::mutex> lock(mu_);
  std::erase(queue_, r);
  cv_.wait(lock, [&] { return in_flight_ != r; });
}

std::int64_t PromptPreparer::num_prepared() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prepared_;
}

void PromptPreparer::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const Request* r = queue_.front();
    queue_.pop_front();
    in_flight_ = r;
    lock.unlock();
    const bool did = r->prepare();  // outside the lock: the owner's forget() and want() go on
    lock.lock();
    in_flight_ = nullptr;
    if (did) ++prepared_;
    cv_.notify_all();  // a forget() may be waiting for r
  }
}

}  // namespace kv
