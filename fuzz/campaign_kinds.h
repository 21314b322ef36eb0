// The kinds of input the reliability campaign (fuzz/campaign_main.cc) mutates: every reader of
// user input, each as a function from the input's bytes to what kvsim made of them.
// Invariants:
//   1. run() never throws and never aborts on input the reader rejects: a rejection is a
//      Status, reported as kError (or kUnclearError when its message does not say where: the
//      file, or the option named with "--").
//   2. A rejected file conversion leaves no output file; one that does is kPartialOutput.
//   3. An accepted input's `output` is a canonical form of what kvsim made of it (the
//      converted trace's bytes, the profile's rows, the configuration, the script's output):
//      two inputs that mean the same thing give the same output.
//   4. Every run writes only under kv::fuzz::scratch_dir().
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kv::campaign {

enum class Syntax { kJsonLines, kJson, kCsv, kLines, kWord };

enum class Verdict { kAccepted, kError, kUnclearError, kPartialOutput };

struct RunResult {
  Verdict verdict = Verdict::kAccepted;
  std::string output;   // kAccepted: the canonical output (invariant 3)
  std::string message;  // the error, otherwise
};

struct InputKind {
  std::string name;
  Syntax syntax = Syntax::kLines;
  std::vector<std::string> seeds;            // real inputs of this kind, read whole
  std::vector<std::string> required_fields;  // JSON keys or CSV columns a valid input needs
  std::vector<std::string> numeric_fields;   // of those, the ones that hold numbers
  std::function<RunResult(std::string_view bytes)> run;
};

// Every kind, with its seeds from the fuzz corpora and bundled data under `source_dir` (large
// files cut to their first lines, so that one input stays small).
std::vector<InputKind> campaign_kinds(const std::string& source_dir);

const char* verdict_name(Verdict v);

}  // namespace kv::campaign
