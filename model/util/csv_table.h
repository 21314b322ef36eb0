// CsvTable: a CSV text read whole by the one strict reader of every CSV input (run folders'
// steps.csv, requests.csv and kernels.csv, the Azure and BurstGPT converters, kernel
// profiles), so that they all refuse the same malformed text with the same messages.
//
// Invariants of a parsed table:
//   1. The first record is the header: at least one field, no empty or repeated name.
//   2. Every later record has exactly as many fields as the header; a row with a missing or an
//      extra field is an error naming the file, the line and the counts.
//   3. Records end at "\n" or "\r\n" (a last record may lack it). A carriage return anywhere
//      else (but inside quotes where the rules allow line breaks there), a NUL byte, or an
//      empty line is an error (only line ends may follow the last record).
//   4. A field is quoted RFC 4180 style ("a,b" and "say ""hi""") only where the rules allow
//      quotes; a quote inside an unquoted field, text after a closing quote or an unclosed
//      quote is an error. A line break inside quotes is an error unless the rules allow it.
//   5. The reader is iterative (no recursion) and keeps no state per quote, so no text makes
//      it use more than the input's size in memory.
// The records are tokenized by libcsv (strict RFC 4180), fed one line at a time so that every
// record and every error has its line; the checks libcsv does not make (field counts, carriage
// returns, NUL bytes, line breaks in quotes, empty lines, quotes where the file has none) are
// made here, on what it returns.
// Errors read "NAME: line N: ..." (N counts lines from 1, the header's). Rows keep the line
// each starts on, for the callers' field errors.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/util/status.h"

namespace kv {

struct CsvRules {
  bool quotes = true;                  // false: a '"' anywhere is an error (numeric tables)
  bool line_breaks_in_quotes = false;  // true: a quoted field may hold "\n" and "\r" (free-text ids)
};

struct CsvRow {
  int line = 0;  // the line the record starts on (1 = the header)
  std::vector<std::string> fields;
};

// Reads the rows of a text one at a time (the text must outlive the reader), for inputs too
// large to hold as a table; parse_csv() is the whole-table form. Holds the invariants above.
class CsvReader {
 public:
  // Reads the header; `name` stands for the file in messages. No I/O: callers read the file.
  static StatusOr<CsvReader> open(const std::string& name, std::string_view text, const CsvRules& rules);

  const std::vector<std::string>& header() const { return header_; }
  // The index of the header field `name`, or nullopt.
  std::optional<std::size_t> column(std::string_view name) const;
  // The next row into `row`: true, or false at the end of the text.
  StatusOr<bool> next(CsvRow& row);

 private:
  struct Pending {  // a record libcsv completed, with the line it starts on
    int line = 0;
    std::vector<std::string> fields;
  };
  struct Tokenizer;  // libcsv's parser and what its callbacks collect (csv_table.cc)
  struct TokenizerDeleter {
    void operator()(Tokenizer* t) const;
  };
  static void on_field(void* data, std::size_t size, void* tokenizer);  // libcsv's callbacks
  static void on_record(int terminator, void* tokenizer);

  CsvReader(const std::string& name, std::string_view text, const CsvRules& rules);
  Status error(int line, const std::string& what) const;
  Status fill();  // feeds lines until a record is pending or the text ends
  Status feed_line();
  Status finish();
  Status check_record(const Pending& record) const;
  Status check_header() const;
  Status check_width(const CsvRow& row) const;
  std::string label(std::size_t field) const;

  std::string name_;
  std::string_view text_;  // without the line ends after the last record
  CsvRules rules_;
  std::size_t pos_ = 0;  // the next line to feed
  int line_ = 1;         // its number
  bool finished_ = false;
  std::unique_ptr<Tokenizer, TokenizerDeleter> tokenizer_;
  std::deque<Pending> pending_;
  std::vector<std::string> header_;
};

struct CsvTable {
  std::vector<std::string> header;
  std::vector<CsvRow> rows;

  // The index of the header field `name`, or nullopt.
  std::optional<std::size_t> column(std::string_view name) const;
};

// Every row of `text` at once.
StatusOr<CsvTable> parse_csv(const std::string& name, std::string_view text, const CsvRules& rules);

}  // namespace kv
