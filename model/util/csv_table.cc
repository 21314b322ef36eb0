#include "model/util/csv_table.h"

namespace kv {

namespace {

std::optional<std::size_t> index_of(const std::vector<std::string>& names, std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return std::nullopt;
}

std::string field_label(const std::vector<std::string>& names, std::size_t index) {
  if (index < names.size()) return "field " + names[index];
  return "field " + std::to_string(index + 1);
}

}  // namespace

StatusOr<CsvReader> CsvReader::open(const std::string& name, std::string_view text, const CsvRules& rules) {
  CsvReader reader(name, text, rules);
  if (reader.at_end()) return Status::error(name + ": empty file (no header)");
  std::vector<std::string> header;
  if (Status s = reader.record(header); !s.ok()) return s;
  reader.header_ = std::move(header);
  if (Status s = reader.check_header(); !s.ok()) return s;
  return reader;
}

std::optional<std::size_t> CsvReader::column(std::string_view name) const { return index_of(header_, name); }

StatusOr<bool> CsvReader::next(CsvRow& row) {
  if (at_end()) return false;
  row.line = line_;
  if (Status s = record(row.fields); !s.ok()) return s;
  if (Status s = check_width(row); !s.ok()) return s;
  return true;
}

// True when only line ends are left (the end of the table).
bool CsvReader::at_end() const {
  for (std::size_t i = pos_; i < text_.size(); ++i) {
    if (text_[i] != '\n' && !(text_[i] == '\r' && i + 1 < text_.size() && text_[i + 1] == '\n')) return false;
  }
  return true;
}

Status CsvReader::error(int line, const std::string& what) const {
  return Status::error(name_ + ": line " + std::to_string(line) + ": " + what);
}

// The fields of the record at the current position; the header (empty while the header
// itself is read) names the field of an error.
Status CsvReader::record(std::vector<std::string>& fields) {
  fields.clear();
  if (line_end_length() > 0) return error(line_, "empty line");
  while (true) {
    std::string field;
    const std::string label = field_label(header_, fields.size());
    const bool quoted_field = rules_.quotes && pos_ < text_.size() && text_[pos_] == '"';
    if (Status s = quoted_field ? quoted(label, field) : unquoted(label, field); !s.ok()) return s;
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

// 1 for "\n", 2 for "\r\n", 0 otherwise.
std::size_t CsvReader::line_end_length() const {
  if (pos_ < text_.size() && text_[pos_] == '\n') return 1;
  if (pos_ + 1 < text_.size() && text_[pos_] == '\r' && text_[pos_ + 1] == '\n') return 2;
  return 0;
}

// Why no field may hold `c` here, or empty.
std::string CsvReader::forbidden(char c) const {
  if (c == '\r') return "a carriage return inside a field";
  if (c == '\0') return "a NUL byte";
  if (c == '"') return rules_.quotes ? "a quote inside an unquoted field" : "a quote (this file has no quoting)";
  return "";
}

Status CsvReader::unquoted(const std::string& label, std::string& field) {
  while (pos_ < text_.size() && text_[pos_] != ',' && line_end_length() == 0) {
    if (std::string why = forbidden(text_[pos_]); !why.empty()) return error(line_, label + ": " + why);
    field += text_[pos_++];
  }
  return Status();
}

Status CsvReader::quoted(const std::string& label, std::string& field) {
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

Status CsvReader::check_header() const {
  for (std::size_t i = 0; i < header_.size(); ++i) {
    if (header_[i].empty()) return error(1, "header: field " + std::to_string(i + 1) + " has no name");
    for (std::size_t j = 0; j < i; ++j) {
      if (header_[j] == header_[i]) return error(1, "header: column '" + header_[i] + "' appears twice");
    }
  }
  return Status();
}

// A row's field count against the header's, naming the first missing or extra field.
Status CsvReader::check_width(const CsvRow& row) const {
  const std::size_t want = header_.size(), got = row.fields.size();
  if (got == want) return Status();
  const std::string counts = std::to_string(got) + " fields where the header has " + std::to_string(want);
  if (got < want) return error(row.line, counts + ": field " + header_[got] + " is missing");
  return error(row.line, counts + ": an extra field after " + header_.back());
}

std::optional<std::size_t> CsvTable::column(std::string_view name) const { return index_of(header, name); }

StatusOr<CsvTable> parse_csv(const std::string& name, std::string_view text, const CsvRules& rules) {
  StatusOr<CsvReader> reader = CsvReader::open(name, text, rules);
  if (!reader.ok()) return reader.status();
  CsvTable table;
  table.header = reader->header();
  CsvRow row;
  while (true) {
    StatusOr<bool> got = reader->next(row);
    if (!got.ok()) return got.status();
    if (!*got) break;
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace kv
