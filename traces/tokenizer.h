// WordHashTokenizer: the deterministic stand-in tokenizer used to turn ShareGPT text into ids.
//
// It is not a BPE tokenizer; it aims at plausible token counts and at equal text giving equal
// ids, which is all prefix caching cares about. The rules, applied to the UTF-8 bytes:
//   1. A word is a maximal run of word bytes: ASCII letters and digits and bytes >= 0x80
//      (non-ASCII), mixed freely ("na\xC3\xAFve" is one word). Valid UTF-8 or not, never an error.
//      A single space right before a word belongs to the word (" hello", as GPT tokenizers do).
//      A word is cut into pieces of at most 4 bytes (the space counts), so long and non-ASCII
//      words give several tokens.
//   2. Any other byte run of equal bytes (spaces, newlines, "---") is one piece per 4 bytes;
//      every other byte (punctuation) is a piece of its own.
//   3. The id of a piece is splitmix64(FNV-1a-64(piece bytes)) mod 128256 (Llama-3's
//      vocabulary size).
// Described by kWordHashTokenizerDescription, which converters store in the trace header.
#pragma once

#include <string_view>
#include <vector>

#include "model/types.h"

namespace kv::trace {

inline constexpr const char* kWordHashTokenizerDescription =
    "word-hash-v1: words (ASCII alnum or non-ASCII byte runs, with one leading space) cut into "
    "<=4-byte pieces, runs of one repeated byte in <=4-byte pieces, other bytes alone; "
    "id = splitmix64(fnv1a64(piece)) mod 128256";

// Appends the token ids of `text` to `out`.
void tokenize_words(std::string_view text, std::vector<TokenId>& out);

}  // namespace kv::trace
