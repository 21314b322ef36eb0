#include "model/util/csv_table.h"

#include <csv.h>

#include <algorithm>

namespace kv {

// libcsv's parser, and what its callbacks collect: the fields of the record being read, the
// records it completed, and whether the last one ended at a carriage return (which must be the
// first half of "\r\n").
struct CsvReader::Tokenizer {
  csv_parser parser{};
  std::vector<std::string> fields;
  std::deque<Pending>* done = nullptr;  // the reader's pending records
  int record_line = 1;                  // the line the record being read starts on
  int line = 1;                         // the line being fed
  bool after_cr = false;                // the last record ended at '\r'
  std::size_t cr_field = 0;             // the field that '\r' ended
  bool lone_cr = false;                 // a '\r' that no '\n' follows
  bool empty_line = false;              // a line with no field
  bool ended_at_lf = false;             // a record ended at this line's '\n'
};

void CsvReader::TokenizerDeleter::operator()(Tokenizer* t) const {
  csv_free(&t->parser);
  delete t;
}

namespace {

int no_space(unsigned char) { return 0; }  // spaces are data: "1 " is not a number

std::optional<std::size_t> index_of(const std::vector<std::string>& names, std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return std::nullopt;
}

// The text up to the end of its last record: only line ends may follow it.
std::string_view without_trailing_line_ends(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || (text[end - 1] == '\r' && end < text.size() && text[end] == '\n'))) {
    --end;
  }
  return text.substr(0, end);
}

}  // namespace

void CsvReader::on_field(void* data, std::size_t size, void* tokenizer) {
  auto* t = static_cast<Tokenizer*>(tokenizer);
  if (t->after_cr) t->lone_cr = true;  // text follows a '\r': it was no line end
  t->fields.emplace_back(static_cast<const char*>(data), size);
}

// A record ends at '\n', '\r' (CSV_REPALL_NL reports every one) or the end of the text (-1).
void CsvReader::on_record(int terminator, void* tokenizer) {
  auto* t = static_cast<Tokenizer*>(tokenizer);
  if (terminator == -1 && t->fields.empty()) return;             // nothing after the last line end
  if (terminator == '\n' && t->after_cr && t->fields.empty()) {  // the '\n' of "\r\n"
    t->after_cr = false;
    t->ended_at_lf = true;
    return;
  }
  if (t->after_cr) t->lone_cr = true;
  if (t->fields.empty()) {
    t->empty_line = true;
    return;
  }
  if (terminator == '\r') t->cr_field = t->fields.size() - 1;
  t->done->push_back({t->record_line, std::move(t->fields)});
  t->fields.clear();
  t->after_cr = terminator == '\r';
  t->ended_at_lf = terminator == '\n';
  t->record_line = t->line + 1;
}

CsvReader::CsvReader(const std::string& name, std::string_view text, const CsvRules& rules)
    : name_(name), text_(without_trailing_line_ends(text)), rules_(rules), tokenizer_(new Tokenizer) {
  csv_init(&tokenizer_->parser, CSV_STRICT | CSV_REPALL_NL | CSV_STRICT_FINI);
  csv_set_space_func(&tokenizer_->parser, no_space);
}

StatusOr<CsvReader> CsvReader::open(const std::string& name, std::string_view text, const CsvRules& rules) {
  CsvReader reader(name, text, rules);
  if (reader.text_.empty()) return Status::error(name + ": empty file (no header)");
  if (Status s = reader.fill(); !s.ok()) return s;
  if (reader.pending_.empty()) return Status::error(name + ": empty file (no header)");
  if (Status s = reader.check_record(reader.pending_.front()); !s.ok()) return s;
  reader.header_ = std::move(reader.pending_.front().fields);
  reader.pending_.pop_front();
  if (Status s = reader.check_header(); !s.ok()) return s;
  return reader;
}

std::optional<std::size_t> CsvReader::column(std::string_view name) const { return index_of(header_, name); }

StatusOr<bool> CsvReader::next(CsvRow& row) {
  if (Status s = fill(); !s.ok()) return s;
  if (pending_.empty()) return false;
  row.line = pending_.front().line;
  row.fields = std::move(pending_.front().fields);
  pending_.pop_front();
  if (Status s = check_record({row.line, row.fields}); !s.ok()) return s;
  if (Status s = check_width(row); !s.ok()) return s;
  return true;
}

Status CsvReader::error(int line, const std::string& what) const {
  return Status::error(name_ + ": line " + std::to_string(line) + ": " + what);
}

std::string CsvReader::label(std::size_t field) const {
  if (field < header_.size()) return "field " + header_[field];
  return "field " + std::to_string(field + 1);
}

Status CsvReader::fill() {
  while (pending_.empty() && !finished_) {
    if (Status s = pos_ < text_.size() ? feed_line() : finish(); !s.ok()) return s;
  }
  return Status();
}

// Feeds the next line, its '\n' included, and checks what libcsv made of it.
Status CsvReader::feed_line() {
  Tokenizer& t = *tokenizer_;
  const std::size_t end = std::min(text_.find('\n', pos_), text_.size() - 1) + 1;
  const std::string_view line = text_.substr(pos_, end - pos_);
  if (!rules_.quotes) {
    if (const std::size_t q = line.find('"'); q != std::string_view::npos) {
      const auto field = static_cast<std::size_t>(std::count(line.begin(), line.begin() + q, ','));
      return error(line_, label(field) + ": a quote (this file has no quoting)");
    }
  }
  t.done = &pending_;  // set at every call: the reader may have moved since the last
  t.line = line_;
  t.ended_at_lf = false;
  const std::size_t used = csv_parse(&t.parser, line.data(), line.size(), on_field, on_record, &t);
  if (used < line.size()) {
    const char* why = t.parser.quoted ? "text after a closing quote" : "a quote inside an unquoted field";
    return error(line_, label(t.fields.size()) + ": " + why);
  }
  if (t.lone_cr) return error(line_, label(t.cr_field) + ": a carriage return inside a field");
  if (t.empty_line) return error(line_, "empty line");
  if (line.back() == '\n' && !t.ended_at_lf && !t.after_cr) {  // the line break is inside quotes
    if (!rules_.line_breaks_in_quotes)
      return error(line_, label(t.fields.size()) + ": a line break inside a quoted field");
  }
  pos_ = end;
  ++line_;
  return Status();
}

// The end of the text: the last record, or an unclosed quote.
Status CsvReader::finish() {
  Tokenizer& t = *tokenizer_;
  finished_ = true;
  t.done = &pending_;
  t.line = line_ - 1;
  if (csv_fini(&t.parser, on_field, on_record, &t) != 0) {
    return error(t.record_line, label(t.fields.size()) + ": a quote that is never closed");
  }
  if (t.after_cr || t.lone_cr) return error(line_ - 1, label(t.cr_field) + ": a carriage return inside a field");
  return Status();
}

// What libcsv passes through inside a field: NUL bytes, and (in quotes) carriage returns and
// line breaks.
Status CsvReader::check_record(const Pending& record) const {
  for (std::size_t i = 0; i < record.fields.size(); ++i) {
    const std::string& f = record.fields[i];
    if (f.find('\0') != std::string::npos) return error(record.line, label(i) + ": a NUL byte");
    if (!rules_.line_breaks_in_quotes && f.find('\r') != std::string::npos) {
      return error(record.line, label(i) + ": a carriage return inside a field");
    }
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
