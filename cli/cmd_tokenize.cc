// kvsim tokenize --tokenizer FILE: reads one JSON string a line on stdin and prints its token ids
// as a JSON array a line (traces/text_tokenizer.h; no special tokens are added, text that spells
// an added token is that token). A bad line stops the run with an error naming it.
#include <boost/program_options.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "traces/text_tokenizer.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "tokenize";

// The text of one input line, or an error saying what is wrong with it.
StatusOr<std::string> read_text(const std::string& line) {
  nlohmann::json value = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return Status::error("not valid JSON (expected one JSON string)");
  if (!value.is_string()) return Status::error(std::string("a JSON ") + value.type_name() + ", expected a string");
  return value.get<std::string>();
}

}  // namespace

int run_tokenize(int argc, char** argv) {
  std::string tokenizer;
  po::options_description opts(
      "kvsim tokenize --tokenizer FILE < strings.jsonl\n\n"
      "Reads one JSON string a line on stdin; prints its token ids as a JSON array a line.\n"
      "No special tokens are added; text that spells an added token (<|eot_id|>) is that token.\n"
      "FILE is a Hugging Face tokenizer.json (BPE; docs/tokenizers.md), or word-hash.\n"
      "Exit status: 0 ok, 2 bad usage or a bad line (the message names the line).\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("tokenizer", po::value<std::string>(&tokenizer),
                                                 "tokenizer.json path, or word-hash");
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;
  if (tokenizer.empty()) return usage_error(kCommand, "missing --tokenizer FILE");
  StatusOr<trace::TextTokenizer> t = trace::TextTokenizer::open(tokenizer);
  if (!t.ok()) return usage_error(kCommand, t.status().message());
  std::string line, out;
  std::vector<TokenId> ids;
  for (std::int64_t line_no = 1; std::getline(std::cin, line); ++line_no) {
    const std::string where = "<stdin>: line " + std::to_string(line_no) + ": ";
    StatusOr<std::string> text = read_text(line);
    if (!text.ok()) return usage_error(kCommand, where + text.status().message());
    ids.clear();
    if (Status s = t->encode(*text, ids); !s.ok()) return usage_error(kCommand, where + s.message());
    out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    out += "]\n";
    std::cout << out;
  }
  std::cout.flush();
  if (!std::cout) return usage_error(kCommand, "cannot write to stdout");
  return 0;
}

}  // namespace kv::cli
