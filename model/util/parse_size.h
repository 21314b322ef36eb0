// Sizes from text: the one reading of every option that takes a byte size or a token count,
// so that `--host-cache-bytes 64GiB` and `--capacity 3M` mean the same everywhere.
//
// Invariants:
//   1. The whole text is one size: no sign, no spaces, no hexadecimal, no "inf" or "nan".
//   2. parse_byte_size reads DIGITS[.DIGITS][UNIT]; UNIT is K, M, G, T (also KB, MB, GB, TB;
//      powers of 10^3) or KiB, MiB, GiB, TiB (powers of 2^10). The product is computed
//      exactly (no double) and a fraction of a byte is dropped (rounded down): 1.5K = 1500,
//      1.0005K = 1000. A fraction needs a unit ("1.5" alone is not a byte count).
//   3. parse_token_count reads a decimal number, optionally with an exponent (1e6), then an
//      optional k/K, m/M or g/G (10^3, 10^6, 10^9), rounded to the nearest whole token; without
//      a suffix the number must be whole (1e3 is 1000, 1.6 is refused: not a token count).
//   4. Both reject results above kMaxParsedSize (2^62) instead of wrapping or saturating.
// Header-only; no allocation beyond the text given, no locale.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace kv {

inline constexpr std::int64_t kMaxParsedSize = std::int64_t{1} << 62;

// The accepted forms, for --help texts.
inline constexpr const char* kByteSizeForms =
    "bytes: 4096, 64G (10^9), 64GiB (2^30), 1.5T; units K M G T, KiB MiB GiB TiB";
inline constexpr const char* kTokenCountForms = "tokens: 65536, 1e6, 2.5k, 3M, 1G";

namespace size_detail {

inline bool all_digits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return !s.empty();
}

// The multiplier of a byte-size unit ("" is 1), or 0 when `unit` is not one.
inline std::uint64_t byte_unit(std::string_view unit) {
  struct Unit {
    std::string_view name;
    std::uint64_t scale;
  };
  static constexpr Unit kUnits[] = {{"", 1},
                                    {"K", 1000ULL},
                                    {"KB", 1000ULL},
                                    {"k", 1000ULL},
                                    {"kB", 1000ULL},
                                    {"M", 1000000ULL},
                                    {"MB", 1000000ULL},
                                    {"G", 1000000000ULL},
                                    {"GB", 1000000000ULL},
                                    {"T", 1000000000000ULL},
                                    {"TB", 1000000000000ULL},
                                    {"KiB", 1ULL << 10},
                                    {"MiB", 1ULL << 20},
                                    {"GiB", 1ULL << 30},
                                    {"TiB", 1ULL << 40}};
  for (const Unit& u : kUnits) {
    if (u.name == unit) return u.scale;
  }
  return 0;
}

}  // namespace size_detail

inline std::optional<std::int64_t> parse_byte_size(std::string_view text) {
  std::size_t n = 0;
  while (n < text.size() && ((text[n] >= '0' && text[n] <= '9') || text[n] == '.')) ++n;
  const std::string_view number = text.substr(0, n);
  const std::uint64_t scale = size_detail::byte_unit(text.substr(n));
  const std::size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view() : number.substr(dot + 1);
  if (scale == 0 || !size_detail::all_digits(whole) || whole.size() > 19) return std::nullopt;
  if (dot != std::string_view::npos && (scale == 1 || !size_detail::all_digits(fraction) || fraction.size() > 18)) {
    return std::nullopt;
  }
  std::uint64_t w = 0;
  for (char c : whole) w = w * 10 + static_cast<std::uint64_t>(c - '0');  // 19 digits fit
  if (w > static_cast<std::uint64_t>(kMaxParsedSize) / scale) return std::nullopt;
  // floor(0.DIGITS * scale), digit by digit from the last: floor((d * scale + floor(x)) / 10)
  // equals floor((d * scale + x) / 10), so the nested floors lose nothing.
  std::uint64_t part = 0;
  for (std::size_t i = fraction.size(); i-- > 0;)
    part = (static_cast<std::uint64_t>(fraction[i] - '0') * scale + part) / 10;
  const std::uint64_t bytes = w * scale + part;
  if (bytes > static_cast<std::uint64_t>(kMaxParsedSize)) return std::nullopt;
  return static_cast<std::int64_t>(bytes);
}

inline std::optional<std::int64_t> parse_token_count(std::string_view text) {
  double scale = 1;
  if (!text.empty()) {
    const char last = text.back();
    scale = (last == 'k' || last == 'K')   ? 1e3
            : (last == 'm' || last == 'M') ? 1e6
            : (last == 'g' || last == 'G') ? 1e9
                                           : 1;
    if (scale != 1) text.remove_suffix(1);
  }
  // DIGITS[.DIGITS][e[+-]DIGITS]: checked here, since from_chars alone also reads "inf" and "nan".
  const std::size_t e = text.find_first_of("eE");
  const std::string_view mantissa = text.substr(0, e);
  const std::size_t dot = mantissa.find('.');
  if (!size_detail::all_digits(mantissa.substr(0, dot))) return std::nullopt;
  if (dot != std::string_view::npos && !size_detail::all_digits(mantissa.substr(dot + 1))) return std::nullopt;
  if (e != std::string_view::npos) {
    std::string_view exponent = text.substr(e + 1);
    if (!exponent.empty() && (exponent.front() == '+' || exponent.front() == '-')) exponent.remove_prefix(1);
    if (!size_detail::all_digits(exponent)) return std::nullopt;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  const double tokens = std::round(v * scale);
  if (!std::isfinite(tokens) || tokens > static_cast<double>(kMaxParsedSize)) return std::nullopt;
  if (scale == 1 && tokens != v) return std::nullopt;  // a fraction of a token, with no suffix to round
  return static_cast<std::int64_t>(tokens);
}

}  // namespace kv
