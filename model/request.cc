#include "model/request.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv {

const char* to_string(RequestStatus s) {
  switch (s) {
    case RequestStatus::kWaiting:
      return "waiting";
    case RequestStatus::kRunning:
      return "running";
    case RequestStatus::kPreempted:
      return "preempted";
    case RequestStatus::kFinishedLength:
      return "finished_length";
    case RequestStatus::kFinishedMaxLen:
      return "finished_max_model_len";
    case RequestStatus::kFinishedStopped:
      return "finished_stopped";
    case RequestStatus::kFinishedAborted:
      return "aborted";
    case RequestStatus::kRejected:
      return "rejected";
  }
  return "?";
}

Request::Request(RequestId id, std::vector<TokenId> prompt, HashExtras extras, const BlockHasher* hasher,
                 int block_size, std::vector<BlockHash> prompt_hashes)
    : id_(std::move(id)),
      tokens_(std::move(prompt)),
      num_prompt_tokens_(static_cast<std::int64_t>(tokens_.size())),
      extras_(std::move(extras)),
      hasher_(hasher),
      block_size_(block_size) {
  KV_CHECK(block_size > 0);
  adopt_prompt_hashes(std::move(prompt_hashes));
  if (hasher_) hasher_->extend(block_hashes_, tokens_, block_size_, extras_);
}

Request::Request(RequestId id, DeferredPrompt prompt, HashExtras extras, const BlockHasher* hasher, int block_size,
                 std::vector<BlockHash> prompt_hashes)
    : id_(std::move(id)),
      num_prompt_tokens_(prompt.size),
      extras_(std::move(extras)),
      hasher_(hasher),
      block_size_(block_size),
      deferred_(std::move(prompt)) {
  KV_CHECK(block_size > 0);
  KV_CHECK(deferred_.deferred() && deferred_.size >= 0, "request " << id_ << ": a deferred prompt needs expand()");
  adopt_prompt_hashes(std::move(prompt_hashes));
  state_.store(kDeferred, std::memory_order_relaxed);
}

void Request::adopt_prompt_hashes(std::vector<BlockHash> hashes) {
  if (hasher_ == nullptr || hashes.empty()) return;
  KV_CHECK(static_cast<std::int64_t>(hashes.size()) <= num_prompt_tokens_ / block_size_,
           "request " << id_ << ": " << hashes.size() << " prompt hashes given for " << num_prompt_tokens_
                      << " tokens in blocks of " << block_size_);
  block_hashes_ = std::move(hashes);
}

bool Request::prepare() const {
  if (!begin_prepare()) return false;
  if (hasher_) hasher_->extend(block_hashes_, tokens_, block_size_, extras_);
  finish_prepare();
  return true;
}

bool Request::begin_prepare() const {
  State s = kDeferred;
  if (!state_.compare_exchange_strong(s, kExpanding, std::memory_order_acquire)) return false;
  expand_tokens();
  return true;
}

HashJob Request::hash_job() const { return HashJob{&block_hashes_, tokens_, &extras_, block_size_, this}; }

void Request::finish_prepare() const {
  state_.store(kExpanded, std::memory_order_release);
  state_.notify_all();
}

void Request::expand_or_wait() const {
  if (prepare()) return;
  // Another thread claimed it: wait until it is done.
  for (State s = state_.load(std::memory_order_acquire); s != kExpanded; s = state_.load(std::memory_order_acquire)) {
    state_.wait(s, std::memory_order_acquire);
  }
}

void Request::expand_tokens() const {
  tokens_.reserve(static_cast<std::size_t>(deferred_.size + std::max<std::int64_t>(deferred_.output_room, 0)));
  deferred_.expand(tokens_);
  KV_CHECK(num_prompt_tokens_ == static_cast<std::int64_t>(tokens_.size()),
           "request " << id_ << ": the deferred prompt expanded to " << tokens_.size() << " tokens, not "
                      << num_prompt_tokens_);
  deferred_ = DeferredPrompt{};
}

void Request::append_tokens(std::span<const TokenId> tokens) {
  expand_if_deferred();
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  if (hasher_) hasher_->extend(block_hashes_, tokens_, block_size_, extras_);
}

}  // namespace kv
