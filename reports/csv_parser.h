// The Fast C++ CSV Parser (libfccp) for the reports/ libraries, as kv::reports::csv::io.
// The parser's classes change with the CSV_IO_NO_THREAD macro, so the whole project sets it
// once, as a compile definition in the top-level CMakeLists.txt: every library of the kvsim
// binary then sees one definition of the parser's inline code.
#pragma once

#include <libfccp/csv.h>
#include <limits>  // libfccp/csv.h uses std::numeric_limits without including it

namespace kv::reports::csv {
namespace io = ::io;
}  // namespace kv::reports::csv
