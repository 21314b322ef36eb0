#include "reports/csv_records.h"

#include <csv.h>

#include <fstream>
#include <sstream>

namespace kv::reports {

namespace {

struct Collector {
  std::vector<CsvRecord> records;
  CsvRecord current;
};

void on_field(void* data, std::size_t len, void* sink) {
  static_cast<Collector*>(sink)->current.emplace_back(static_cast<const char*>(data), len);
}

void on_record(int, void* sink) {
  auto* c = static_cast<Collector*>(sink);
  c->records.push_back(std::move(c->current));
  c->current.clear();
}

}  // namespace

StatusOr<std::vector<CsvRecord>> read_csv_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  const std::string bytes = text.str();
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
    return Status::error(path + ": cannot start the CSV parser");
  }
  Collector c;
  const std::size_t used = csv_parse(&parser, bytes.data(), bytes.size(), on_field, on_record, &c);
  const bool parsed = used == bytes.size() && csv_fini(&parser, on_field, on_record, &c) == 0;
  const std::string why = parsed ? "" : csv_strerror(csv_error(&parser));
  csv_free(&parser);
  if (!parsed) {
    return Status::error(path + ": record " + std::to_string(c.records.size() + 1) + ": " + why);
  }
  return c.records;
}

}  // namespace kv::reports
