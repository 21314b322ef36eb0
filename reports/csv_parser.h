// The Fast C++ CSV Parser (libfccp) for the reports/ libraries, compiled under a namespace name
// of its own (kvsim_reports_fccp, aliased kv::reports::csv::io). The parser is header-only and its classes change with the
// CSV_IO_NO_THREAD macro; other libraries of the kvsim binary include it with and without that
// macro, and two different definitions of the same inline functions in one program are
// undefined behaviour. Renaming the parser's namespace gives these definitions names no other
// library uses. Every standard header the parser includes is included first, so the rename
// reaches only the parser's own code. Include this file instead of <libfccp/csv.h>.
#pragma once

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <istream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#define CSV_IO_NO_THREAD
#define io kvsim_reports_fccp
#include <libfccp/csv.h>
#undef io
#undef CSV_IO_NO_THREAD

namespace kv::reports::csv {
namespace io = ::kvsim_reports_fccp;
}  // namespace kv::reports::csv
