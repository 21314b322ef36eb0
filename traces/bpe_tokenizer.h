// BpeTokenizer: a Hugging Face `tokenizer.json` BPE tokenizer (Llama 3, gpt-oss, Qwen 3, Gemma 3).
//
// load() reads the file once; encode() turns text into the ids the Rust `tokenizers` library
// gives for `encode(text, add_special_tokens=False)`. Supported, everything else is rejected by
// load() with an error naming the field: normalizer null | NFC | Replace(String) | Sequence of
// those; pre-tokenizer null | Split (Regex or String pattern, not inverted) | ByteLevel |
// Sequence; model BPE with merges, ignore_merges, byte_fallback, unk_token/fuse_unk; added
// tokens that are not lstrip/rstrip/single_word/normalized. Post-processor and decoder are
// ignored (no special tokens are added). Invariants:
//   1. Text that spells an added token (e.g. "<|eot_id|>") is that token: the leftmost, then
//      longest added token is cut out of the raw text before anything else, as in the library.
//   2. Split regexes run under PCRE2 (UTF + UCP) with \s and \S rewritten to the Rust library's
//      (Oniguruma's) class: U+0009-000D, U+0085 and General_Category Z; so U+0085 is
//      whitespace and U+FEFF is not (JavaScript's \s says the opposite on both).
//   3. BPE merges the adjacent pair of lowest rank first, the leftmost among equal ranks.
//   4. encode() is const, deterministic and thread-safe; it fails only on invalid UTF-8.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/types.h"
#include "model/util/status.h"

namespace kv::trace {

class BpeTokenizer {
 public:
  // Reads a tokenizer.json; the error names the file and the unsupported or bad field.
  static StatusOr<BpeTokenizer> load(const std::string& path);

  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  // Appends the ids of `text` to `out` (no special tokens added). Error: invalid UTF-8.
  Status encode(std::string_view text, std::vector<TokenId>& out) const;

  // "hf-bpe tokenizer.json sha256:<first 16 hex digits> ..." (what converters record).
  const std::string& description() const;
  // One more than the largest id of the vocabulary and the added tokens.
  std::int64_t vocab_size() const;

  struct Impl;

 private:
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kv::trace
