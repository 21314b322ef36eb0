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
  cv_.wait(lock, [&] { return std::find(in_flight_.begin(), in_flight_.end(), r) == in_flight_.end(); });
}

std::int64_t PromptPreparer::num_prepared() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prepared_;
}

// The worker's queue as BlockHasher::extend_stream sees it: the front requests that share
// `hasher`, each claimed and its tokens expanded as a lane frees up.
class PromptPreparer::Lanes final : public HashJobQueue {
 public:
  Lanes(PromptPreparer& owner, const BlockHasher* hasher) : owner_(owner), hasher_(hasher) {}

  bool next(HashJob& job) override {
    std::unique_lock<std::mutex> lock(owner_.mu_);
    const Request* r = nullptr;
    while (!owner_.stop_ && !owner_.queue_.empty() && owner_.queue_.front()->hasher() == hasher_) {
      if (owner_.take_front(lock, &r)) {
        job = r->hash_job();
        return true;
      }
    }
    return false;
  }

  void done(const HashJob& job) override {
    const auto* r = static_cast<const Request*>(job.tag);
    r->finish_prepare();
    std::lock_guard<std::mutex> lock(owner_.mu_);
    owner_.land(r, true);
  }

 private:
  PromptPreparer& owner_;
  const BlockHasher* hasher_;
};

bool PromptPreparer::take_front(std::unique_lock<std::mutex>& lock, const Request** taken) {
  const Request* r = queue_.front();
  queue_.pop_front();
  in_flight_.push_back(r);
  lock.unlock();
  const bool claimed = r->begin_prepare();  // outside the lock: the owner's forget() and want() go on
  lock.lock();
  if (!claimed) land(r, false);
  *taken = r;
  return claimed;
}

void PromptPreparer::land(const Request* r, bool prepared) {
  std::erase(in_flight_, r);
  if (prepared) ++prepared_;
  cv_.notify_all();  // a forget() may be waiting for r
}

void PromptPreparer::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const BlockHasher* hasher = queue_.front()->hasher();
    if (hasher == nullptr) {  // prefix caching off: tokens only, one request at a time
      const Request* r = nullptr;
      if (take_front(lock, &r)) {
        r->finish_prepare();
        land(r, true);
      }
      continue;
    }
    lock.unlock();
    Lanes lanes(*this, hasher);
    hasher->extend_stream(lanes);
    lock.lock();
  }
}

}  // namespace kv
