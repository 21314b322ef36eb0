#include "traces/text_tokenizer.h"

#include "traces/block_tokens.h"
#include "traces/tokenizer.h"

namespace kv::trace {

StatusOr<TextTokenizer> TextTokenizer::open(const std::string& name_or_path) {
  TextTokenizer t;
  if (name_or_path == kWordHashTokenizerName) return t;
  StatusOr<BpeTokenizer> bpe = BpeTokenizer::load(name_or_path);
  if (!bpe.ok()) return bpe.status();
  t.bpe_.emplace(std::move(*bpe));
  const std::size_t slash = name_or_path.find_last_of('/');
  t.name_ = slash == std::string::npos ? name_or_path : name_or_path.substr(slash + 1);
  return t;
}

Status TextTokenizer::encode(std::string_view text, std::vector<TokenId>& out) const {
  if (bpe_) return bpe_->encode(text, out);
  tokenize_words(text, out);
  return Status();
}

const std::string& TextTokenizer::description() const {
  static const std::string word_hash = kWordHashTokenizerDescription;
  return bpe_ ? bpe_->description() : word_hash;
}

std::int64_t TextTokenizer::vocab_size() const { return bpe_ ? bpe_->vocab_size() : kBlockTokenVocab; }

}  // namespace kv::trace
