#include "traces/tokenizer.h"

#include <cstdint>

#include "traces/block_tokens.h"

namespace kv::trace {

namespace {

bool is_word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

TokenId piece_id(std::string_view piece) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char ch : piece) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  return static_cast<TokenId>(splitmix64(h) % static_cast<std::uint64_t>(kBlockTokenVocab));
}

void emit_chunks(std::string_view piece, std::vector<TokenId>& out) {
  for (std::size_t i = 0; i < piece.size(); i += 4) out.push_back(piece_id(piece.substr(i, 4)));
}

}  // namespace

void tokenize_words(std::string_view text, std::vector<TokenId>& out) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const unsigned char c = byte(i);
    if (is_word_byte(c) || (c == ' ' && i + 1 < n && is_word_byte(byte(i + 1)))) {
      std::size_t j = i + 1;
      while (j < n && is_word_byte(byte(j))) ++j;
      emit_chunks(text.substr(i, j - i), out);
      i = j;
      continue;
    }
    std::size_t j = i + 1;
    while (j < n && byte(j) == c && !(c == ' ' && j + 1 < n && is_word_byte(byte(j + 1)))) ++j;
    emit_chunks(text.substr(i, j - i), out);
    i = j;
  }
}

}  // namespace kv::trace
