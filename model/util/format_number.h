// format_number: one number as printf formats it ("%.2f", "%.6g", "%.1f%%"), the one number
// formatter of reports, summaries and CSV files; shortest_number: the shortest text that reads
// back to the same double (0.9, not 0.90000000000000002), for options echoed back to the user.
// Locale-independent as long as the process keeps the "C" locale (kvsim never changes it), so
// the same value prints the same bytes.
// Invariant: the whole formatted text is returned, however long.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kv {

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
// `format` must take exactly one double.
inline std::string format_number(const char* format, double value) {
  char small[64];
  const int n = std::snprintf(small, sizeof small, format, value);
  if (n < 0) return {};
  if (static_cast<std::size_t>(n) < sizeof small) return std::string(small, static_cast<std::size_t>(n));
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), format, value);
  out.resize(static_cast<std::size_t>(n));
  return out;
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

inline std::string shortest_number(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace kv
