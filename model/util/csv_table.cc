#include "model/util/csv_table.h"

namespace kv {

namespace {

// One pass over the text: records are read one after another from `pos`, lines counted as
// line breaks are consumed.
class CsvScanner {
 public:
  CsvScanner(const std::string& name, std::string_view text, const CsvRules& rules)
      : name_(name), text_(text), rules_(rules) {}

  int line() const { return line_; }
  // True when only line ends are left (the end of the table).
  bool at_end() const {
    for (std::size_t i = pos_; i < text_.size(); ++i) {
      if (text_[i] != '\n' && !(text_[i] == '\r' && i + 1 < text_.size() && text_[i + 1] == '\n')) return false;
    }
    return true;
  }

  Status error(int line, const std::string& what) const {
    return Status::error(name_ + ": line " + std::to_string(line) + ": " + what);
  }

  // The fields of the record at the current position; `names` (the header, or empty while the
  // header itself is read) name the field of an error.
  Status record(const std::vector<std::string>& names, std::vector<std::string>& fields) {
    fields.clear();
    if (line_end_length() > 0) return error(line_, "empty line");
    while (true) {
      std::string field;
      const std::string label = field_label(names, fields.size());
      Status s = peek() == '"' && rules_.quotes ? quoted(label, field) : unquoted(label, field);
      if (!s.ok()) return s;
      fields.push_back(std::move(field));
      if (pos_ >= text_.size()) return Status();
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      pos_ += line_end_length();  // unquoted() and quoted() stop only at ',', a line end or the end
      ++line_;
      return Status();
    }
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  // 1 for "\n", 2 for "\r\n", 0 otherwise.
  std::size_t line_end_length() const {
    if (pos_ < text_.size() && text_[pos_] == '\n') return 1;
    if (pos_ + 1 < text_.size() && text_[pos_] == '\r' && text_[pos_ + 1] == '\n') return 2;
    return 0;
  }

  static std::string field_label(const std::vector<std::string>& names, std::size_t index) {
    if (index < names.size()) return "field " + names[index];
    return "field " + std::to_string(index + 1);
  }

  // A character no field may hold, or empty.
  std::string forbidden(char c) const {
    if (c == '\r') return "a carriage return inside a field";
    if (c == '\0') return "a NUL byte";
    if (c == '"') return rules_.quotes ? "a quote inside an unquoted field" : "a quote (this file has no quoting)";
    return "";
  }

  Status unquoted(const std::string& label, std::string& field) {
    while (pos_ < text_.size() && text_[pos_] != ',' && line_end_length() == 0) {
      if (std::string why = forbidden(text_[pos_]); !why.empty()) return error(line_, label + ": " + why);
      field += text_[pos_++];
    }
    return Status();
  }

  Status quoted(const std::string& label, std::string& field) {
    const int start = line_;
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= text_.size()) return error(start, label + ": a quote that is never closed");
      const char c = text_[pos_];
      if (c == '"' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
        field += '"';
        pos_ += 2;
      } else if (c == '"') {
        ++pos_;
        break;
      } else if ((c == '\n' || c == '\r') && !rules_.line_breaks_in_quotes) {
        return error(line_, label + ": " + (c == '\n' ? "a line break inside a quoted field" : forbidden(c)));
      } else if (c == '\n' || c == '\r') {
        field += text_[pos_++];
        if (c == '\n') ++line_;
      } else if (c == '\0') {
        return error(line_, label + ": " + forbidden(c));
      } else {
        field += text_[pos_++];
      }
    }
    if (pos_ < text_.size() && text_[pos_] != ',' && line_end_length() == 0) {
      return error(line_, label + ": text after a closing quote");
    }
    return Status();
  }

  const std::string& name_;
  std::string_view text_;
  CsvRules rules_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

Status check_header(const CsvScanner& scan, const std::vector<std::string>& header) {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i].empty()) return scan.error(1, "header: field " + std::to_string(i + 1) + " has no name");
    for (std::size_t j = 0; j < i; ++j) {
      if (header[j] == header[i]) return scan.error(1, "header: column '" + header[i] + "' appears twice");
    }
  }
  return Status();
}

// A row's field count against the header's, naming the first missing or extra field.
Status check_width(const CsvScanner& scan, const CsvTable& table, const CsvRow& row) {
  const std::size_t want = table.header.size(), got = row.fields.size();
  if (got == want) return Status();
  const std::string counts = std::to_string(got) + " fields where the header has " + std::to_string(want);
  if (got < want) return scan.error(row.line, counts + ": field " + table.header[got] + " is missing");
  return scan.error(row.line, counts + ": an extra field after " + table.header.back());
}

}  // namespace

std::optional<std::size_t> CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  return std::nullopt;
}

StatusOr<CsvTable> parse_csv(const std::string& name, std::string_view text, const CsvRules& rules) {
  CsvScanner scan(name, text, rules);
  CsvTable table;
  if (scan.at_end()) return Status::error(name + ": empty file (no header)");
  if (Status s = scan.record({}, table.header); !s.ok()) return s;
  if (Status s = check_header(scan, table.header); !s.ok()) return s;
  while (!scan.at_end()) {
    CsvRow row;
    row.line = scan.line();
    if (Status s = scan.record(table.header, row.fields); !s.ok()) return s;
    if (Status s = check_width(scan, table, row); !s.ok()) return s;
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace kv
