// Strict numbers from text: how kvsim reads every number a user wrote (a CSV cell, a JSON-less
// field, an option value), so that every reader rejects the same bad text.
//
// Invariants:
//   1. The whole text is one number: an empty text, a lone sign, trailing characters or
//      spaces are rejected (callers trim first when their format allows spaces).
//   2. parse_int64 accepts an optional '-' or '+' then decimal digits, and rejects values
//      outside int64_t instead of clamping or wrapping them.
//   3. parse_uint64 accepts digits only: a negative text is rejected, never wrapped.
//   4. parse_finite_double accepts what std::from_chars reads in general format (optional '-',
//      optional leading '+'), and rejects NaN, infinities and values that overflow a double.
//   5. parse_plain_decimal accepts only [-]DIGITS[.DIGITS]: no exponent, no '+', no
//      hexadecimal, no "inf" or "nan" -- for formats whose numbers are plain decimals.
// Header-only; no allocation, no locale.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace kv {

inline std::optional<std::int64_t> parse_int64(std::string_view text) {
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// Digits only (an optional leading '+'): "-1" is rejected, never wrapped to 2^64 - 1.
inline std::optional<std::uint64_t> parse_uint64(std::string_view text) {
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  if (text.empty() || text.front() == '-') return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

inline std::optional<double> parse_finite_double(std::string_view text) {
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

inline std::optional<double> parse_plain_decimal(std::string_view text) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
  const std::size_t dot = digits.find('.');
  const auto all_digits = [](std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  if (!all_digits(digits.substr(0, dot))) return std::nullopt;
  if (dot != std::string_view::npos && !all_digits(digits.substr(dot + 1))) return std::nullopt;
  return parse_finite_double(text);
}

}  // namespace kv
