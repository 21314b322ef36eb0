// OutputTokens: the teacher-forced output tokens of one request (what the device "samples").
//
// Either explicit (a list, e.g. from a trace that recorded them) or generated: a length and a
// function of the output index, evaluated only when a token is sampled. A trace's output_length
// of 10^9 therefore costs nothing up front; a request holds only the tokens it has produced.
// Invariants:
//   1. size() is the output length; operator[](k) for k < size() is the same token at every
//      call (the generator must be a pure function of k).
//   2. push_back/assign apply to explicit lists only (they turn a generated one explicit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "model/types.h"
#include "model/util/check.h"

namespace kv {

class OutputTokens {
 public:
  using Generator = std::function<TokenId(std::int64_t index)>;

  OutputTokens() = default;
  OutputTokens(std::vector<TokenId> tokens) : tokens_(std::move(tokens)) {}  // NOLINT: implicit by design
  static OutputTokens generated(std::int64_t length, Generator generator) {
    OutputTokens o;
    o.generated_length_ = length;
    o.generator_ = std::move(generator);
    return o;
  }

  std::size_t size() const { return generator_ ? static_cast<std::size_t>(generated_length_) : tokens_.size(); }
  bool empty() const { return size() == 0; }
  TokenId operator[](std::size_t k) const {
    KV_CHECK(k < size(), "output token " << k << " of " << size());
    return generator_ ? generator_(static_cast<std::int64_t>(k)) : tokens_[k];
  }
  void push_back(TokenId t) {
    make_explicit();
    tokens_.push_back(t);
  }
  void assign(std::size_t n, TokenId t) {
    generator_ = nullptr;
    generated_length_ = 0;
    tokens_.assign(n, t);
  }
  std::vector<TokenId> to_vector() const {
    if (!generator_) return tokens_;
    std::vector<TokenId> v(size());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = (*this)[k];
    return v;
  }

 private:
  void make_explicit() {
    if (!generator_) return;
    tokens_ = to_vector();
    generator_ = nullptr;
    generated_length_ = 0;
  }
  std::vector<TokenId> tokens_;        // the explicit tokens (empty when generated)
  std::int64_t generated_length_ = 0;  // the length when generator_ is set
  Generator generator_;
};

}  // namespace kv
