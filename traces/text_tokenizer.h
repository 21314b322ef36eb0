// TextTokenizer: how converters turn text into token ids, chosen by name.
//
// "word-hash" is the deterministic stand-in of tokenizer.h (plausible counts, no real ids);
// any other name is the path of a Hugging Face tokenizer.json read by bpe_tokenizer.h.
// Invariants:
//   1. description() is what a converter records in the trace header's `tokenizer` field:
//      kWordHashTokenizerDescription, or the BPE file's name, sha256 prefix and kind.
//   2. encode() appends and never adds special tokens; word-hash never fails.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/types.h"
#include "model/util/status.h"
#include "traces/bpe_tokenizer.h"

namespace kv::trace {

inline constexpr const char* kWordHashTokenizerName = "word-hash";

class TextTokenizer {
 public:
  TextTokenizer() = default;  // word-hash

  // "word-hash" or the path of a tokenizer.json.
  static StatusOr<TextTokenizer> open(const std::string& name_or_path);

  Status encode(std::string_view text, std::vector<TokenId>& out) const;
  const std::string& description() const;
  const std::string& name() const { return name_; }  // "word-hash" or the file's base name
  std::int64_t vocab_size() const;                   // word-hash: 128256 (Llama 3's)

 private:
  std::optional<BpeTokenizer> bpe_;  // empty: word-hash
  std::string name_ = kWordHashTokenizerName;
};

}  // namespace kv::trace
