// CsvRecords: an RFC 4180 CSV file read whole into records of fields, through libcsv (strict
// mode): quoted fields may hold commas, doubled quotes and line breaks. For the run-folder
// files whose fields are free text (requests.csv: request ids and reasons).
// Errors name the file and the record (1 = the header).
#pragma once

#include <string>
#include <vector>

#include "model/util/status.h"

namespace kv::reports {

using CsvRecord = std::vector<std::string>;

StatusOr<std::vector<CsvRecord>> read_csv_records(const std::string& path);

}  // namespace kv::reports
