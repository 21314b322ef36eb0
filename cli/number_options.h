// Number options of the subcommands' own (non-replay) options, read as text and parsed
// strictly by model/util/parse_number.h (integers: digits only; other numbers finite, never
// "inf", "nan" or "0x10"):
//   bounded(name, &field, lo, hi)  the value must lie in [lo, hi];
//   bounded(name, &field)          any value of the field's type (a validate() checks more);
//   token_count(name, &field)      a token count (model/util/parse_size.h: 2.5k, 1e6, 3M).
// Invariants:
//   1. A bad or out-of-range value throws std::invalid_argument("--NAME: must be ... from LO to
//      HI, got 'TEXT'") (without the range for the whole-range form); main() turns it into
//      "kvsim <command>: ..." and exit status 2.
//   2. The field is written only with an accepted value; the default shown in --help is the
//      field's value when the option is declared.
#pragma once

#include <boost/program_options/value_semantic.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "model/util/parse_number.h"
#include "model/util/parse_size.h"

namespace kv::cli {

template <typename T>
std::optional<T> parse_bounded(const std::string& text) {
  if constexpr (std::is_floating_point_v<T>) {
    return parse_finite_double(text);
  } else if constexpr (std::is_unsigned_v<T>) {
    const std::optional<std::uint64_t> v = parse_uint64(text);
    if (!v || *v > std::numeric_limits<T>::max()) return std::nullopt;
    return static_cast<T>(*v);
  } else {
    const std::optional<std::int64_t> v = parse_int64(text);
    if (!v || *v < std::numeric_limits<T>::min() || *v > std::numeric_limits<T>::max()) return std::nullopt;
    return static_cast<T>(*v);
  }
}

template <typename T>
std::string number_text(T v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// `state_bounds` false: the message says only what kind of number is expected.
template <typename T>
boost::program_options::typed_value<std::string>* bounded_value(const char* name, T* field, T lo, T hi,
                                                                bool state_bounds) {
  const std::string kind = std::is_floating_point_v<T> ? "a finite number" : "an integer";
  const std::string range = state_bounds ? " from " + number_text(lo) + " to " + number_text(hi) : "";
  const std::string option = name;
  auto* v = boost::program_options::value<std::string>();
  v->default_value(number_text(*field));
  v->notifier([=](const std::string& text) {
    const std::optional<T> parsed = parse_bounded<T>(text);
    if (!parsed || *parsed < lo || *parsed > hi) {
      throw std::invalid_argument("--" + option + ": must be " + kind + range + ", got '" + text + "'");
    }
    *field = *parsed;
  });
  return v;
}

template <typename T>
boost::program_options::typed_value<std::string>* bounded(const char* name, T* field, T lo, T hi) {
  return bounded_value(name, field, lo, hi, true);
}

// A token count (model/util/parse_size.h: 65536, 1e6, 2.5k, 3M) that fits T; its own range is
// checked later, where the check names it.
template <typename T>
boost::program_options::typed_value<std::string>* token_count(const char* name, T* field) {
  const std::string option = name;
  auto* v = boost::program_options::value<std::string>();
  v->default_value(number_text(*field));
  v->notifier([=](const std::string& text) {
    const std::optional<std::int64_t> parsed = parse_token_count(text);
    if (!parsed) {
      throw std::invalid_argument("--" + option + ": '" + text + "' is not a token count (" + kTokenCountForms + ")");
    }
    if (*parsed > static_cast<std::int64_t>(std::numeric_limits<T>::max())) {
      throw std::invalid_argument("--" + option + ": must be at most " + number_text(std::numeric_limits<T>::max()) +
                                  " tokens, got '" + text + "'");
    }
    *field = static_cast<T>(*parsed);
  });
  return v;
}

// The whole range of T: for options whose own range is checked later, where the check names it.
template <typename T>
boost::program_options::typed_value<std::string>* bounded(const char* name, T* field) {
  return bounded_value(name, field, std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max(), false);
}

}  // namespace kv::cli
