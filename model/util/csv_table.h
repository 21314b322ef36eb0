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
// Errors read "NAME: line N: ..." (N counts lines from 1, the header's). Rows keep the line
// each starts on, for the callers' field errors.
#pragma once

#include <cstddef>
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
  CsvReader(const std::string& name, std::string_view text, const CsvRules& rules)
      : name_(name), text_(text), rules_(rules) {}
  bool at_end() const;
  Status error(int line, const std::string& what) const;
  Status record(std::vector<std::string>& fields);
  std::size_t line_end_length() const;
  std::string forbidden(char c) const;
  Status unquoted(const std::string& label, std::string& field);
  Status quoted(const std::string& label, std::string& field);
  Status check_header() const;
  Status check_width(const CsvRow& row) const;

  std::string name_;
  std::string_view text_;
  CsvRules rules_;
  std::size_t pos_ = 0;  // the next character to read
  int line_ = 1;         // the line of text_[pos_]
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
