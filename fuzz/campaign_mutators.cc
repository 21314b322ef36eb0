#include "fuzz/campaign_mutators.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <vector>

namespace kv::campaign {

namespace {

using Rng = std::mt19937_64;

std::size_t pick(Rng& rng, std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

std::string join(const std::vector<std::string>& lines, const std::string& end = "\n") {
  std::string out;
  for (const std::string& l : lines) out += l + end;
  return out;
}

// Indexes of the lines that are not blank (from `first` on).
std::vector<std::size_t> content_lines(const std::vector<std::string>& lines, std::size_t first) {
  std::vector<std::size_t> out;
  for (std::size_t i = first; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t\r") != std::string::npos) out.push_back(i);
  }
  return out;
}

// ---- random: any bytes may follow ---------------------------------------------------------

// Entry 6 stands for a NUL byte.
constexpr std::array<const char*, 14> kTokens = {
    "-1", "1e999", "nan", "\"", ",", "\r", "", "{", "]", "99999999999999999999999", "\n", "\xff", " ", "0x10"};

Mutation random_mutation(const std::string& seed, Rng& rng) {
  std::string b = seed;
  const std::size_t at = pick(rng, b.size() + 1);
  switch (pick(rng, 5)) {
    case 0:
      if (!b.empty()) b[std::min(at, b.size() - 1)] ^= static_cast<char>(1 + pick(rng, 255));
      return {MutationClass::kRandom, "flip-byte", b};
    case 1: {
      const std::size_t t = pick(rng, kTokens.size());
      b.insert(at, t == 6 ? std::string(1, '\0') : std::string(kTokens[t]));
      return {MutationClass::kRandom, "insert-token", b};
    }
    case 2:
      b.erase(at, 1 + pick(rng, 16));
      return {MutationClass::kRandom, "delete-range", b};
    case 3:
      b.insert(at, b.substr(pick(rng, b.size() + 1), 1 + pick(rng, 64)));
      return {MutationClass::kRandom, "duplicate-range", b};
    default:
      return {MutationClass::kRandom, "truncate", b.substr(0, at)};
  }
}

// ---- invalidating ------------------------------------------------------------------------

// A required key renamed (so it is missing), a number made a string, or a record cut short.
std::optional<Mutation> invalid_json_line(const InputKind& kind, const std::string& seed, Rng& rng) {
  std::vector<std::string> lines = lines_of(seed);
  const std::vector<std::size_t> records = content_lines(lines, 0);
  if (records.empty()) return std::nullopt;
  std::string& line = lines[records[pick(rng, records.size())]];
  const std::size_t how = pick(rng, 3);
  if (how < 2) {
    const auto& fields = how == 0 ? kind.required_fields : kind.numeric_fields;
    if (fields.empty()) return std::nullopt;
    const std::string key = "\"" + fields[pick(rng, fields.size())] + "\"";
    const std::size_t at = line.find(key);
    if (at == std::string::npos) return std::nullopt;
    if (how == 0) {
      line.insert(at + key.size() - 1, "_gone");
      return Mutation{MutationClass::kInvalidating, "json-required-key-renamed", join(lines)};
    }
    const std::size_t value = line.find_first_not_of(" :", at + key.size());
    if (value == std::string::npos || !(std::isdigit(static_cast<unsigned char>(line[value])) || line[value] == '-')) {
      return std::nullopt;
    }
    const std::size_t end = line.find_first_of(",}", value);
    line.replace(value, end - value, "\"x\"");
    return Mutation{MutationClass::kInvalidating, "json-number-as-string", join(lines)};
  }
  const std::size_t close = line.rfind('}');
  if (close == std::string::npos || close == 0) return std::nullopt;
  line = line.substr(0, 1 + pick(rng, close));
  return Mutation{MutationClass::kInvalidating, "json-record-cut", join(lines)};
}

std::vector<std::string> split_commas(const std::string& row) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  while (true) {
    const std::size_t c = row.find(',', start);
    cells.push_back(row.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) return cells;
    start = c + 1;
  }
}

// A data row one field short or long, a number with a letter, a lone '\r', a blank line.
std::optional<Mutation> invalid_csv_row(const InputKind& kind, const std::string& seed, Rng& rng) {
  std::vector<std::string> lines = lines_of(seed);
  const std::vector<std::size_t> rows = content_lines(lines, 1);
  if (rows.empty() || lines[0].find('"') != std::string::npos) return std::nullopt;
  const std::size_t r = rows[pick(rng, rows.size())];
  std::string& row = lines[r];
  if (row.find('"') != std::string::npos) return std::nullopt;  // quoted cells: no plain split
  if (!row.empty() && row.back() == '\r') row.pop_back();
  std::vector<std::string> cells = split_commas(row);
  const std::vector<std::string> header = split_commas(lines[0]);
  switch (pick(rng, 5)) {
    case 0:
      if (cells.size() < 2) return std::nullopt;
      cells.pop_back();
      row = join(cells, ",");
      row.pop_back();
      return Mutation{MutationClass::kInvalidating, "csv-row-field-missing", join(lines)};
    case 1:
      row += ",9";
      return Mutation{MutationClass::kInvalidating, "csv-row-extra-field", join(lines)};
    case 2: {
      if (kind.numeric_fields.empty()) return std::nullopt;
      const std::string& name = kind.numeric_fields[pick(rng, kind.numeric_fields.size())];
      const auto col = std::find(header.begin(), header.end(), name);
      const auto i = static_cast<std::size_t>(col - header.begin());
      if (col == header.end() || i >= cells.size()) return std::nullopt;
      cells[i] += "z";
      row = join(cells, ",");
      row.pop_back();
      return Mutation{MutationClass::kInvalidating, "csv-number-with-letter", join(lines)};
    }
    case 3:
      row.insert(pick(rng, row.size() + 1), "\r");
      if (row.back() == '\r') row += "x";  // a '\r' at the line end would be a CRLF
      return Mutation{MutationClass::kInvalidating, "csv-lone-carriage-return", join(lines)};
    default:
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(r), "");
      return Mutation{MutationClass::kInvalidating, "csv-empty-line", join(lines)};
  }
}

std::optional<Mutation> invalid_json(const std::string& seed, Rng& rng) {
  for (const char* role : {"\"human\"", "\"gpt\"", "\"user\"", "\"assistant\""}) {
    const std::size_t at = seed.find(role);
    if (at != std::string::npos && pick(rng, 2) == 0) {
      std::string b = seed;
      b.replace(at, std::string(role).size(), "\"robot\"");
      return Mutation{MutationClass::kInvalidating, "json-unknown-role", b};
    }
  }
  const std::size_t close = seed.rfind(']');
  if (close == std::string::npos || close == 0) return std::nullopt;
  return Mutation{MutationClass::kInvalidating, "json-cut", seed.substr(0, 1 + pick(rng, close))};
}

std::optional<Mutation> invalid_lines(const InputKind& kind, const std::string& seed, Rng& rng) {
  static const std::array<const char*, 6> kBadOptions = {
      "frobnicate 1",    "num-blocks abc", "gpu-memory-utilization nan",
      "request-rate -5", "block-size 0",   "host-cache-bytes 1.5"};
  std::string b = seed;
  if (!b.empty() && b.back() != '\n') b += '\n';
  if (kind.name == "ops") return Mutation{MutationClass::kInvalidating, "ops-unknown-command", b + "frobnicate 1\n"};
  const std::string bad = kBadOptions[pick(rng, kBadOptions.size())];
  return Mutation{MutationClass::kInvalidating, "option-" + bad.substr(0, bad.find(' ')), b + bad + "\n"};
}

std::optional<Mutation> invalid_word(const InputKind& kind, Rng& rng) {
  static const std::array<const char*, 11> kBadBytes = {
      "1.5", "-1G", "0x10", "1e3K", "nan", "inf", "", "G", "1.5.5G", "99999999999999999999", "1 G"};
  static const std::array<const char*, 9> kBadTokens = {"1.5", "-1k", "0x10", "nan", "inf", "", "k", "1e400", "1 k"};
  if (kind.name == "byte_size") {
    return Mutation{MutationClass::kInvalidating, "size-malformed", kBadBytes[pick(rng, kBadBytes.size())]};
  }
  return Mutation{MutationClass::kInvalidating, "count-malformed", kBadTokens[pick(rng, kBadTokens.size())]};
}

std::optional<Mutation> invalidating(const InputKind& kind, const std::string& seed, Rng& rng) {
  switch (kind.syntax) {
    case Syntax::kJsonLines:
      return invalid_json_line(kind, seed, rng);
    case Syntax::kCsv:
      return invalid_csv_row(kind, seed, rng);
    case Syntax::kJson:
      return invalid_json(seed, rng);
    case Syntax::kLines:
      return invalid_lines(kind, seed, rng);
    case Syntax::kWord:
      break;
  }
  return invalid_word(kind, rng);
}

// ---- neutral ------------------------------------------------------------------------------

std::optional<Mutation> neutral(const InputKind& kind, const std::string& seed, Rng& rng) {
  std::vector<std::string> lines = lines_of(seed);
  switch (kind.syntax) {
    case Syntax::kJsonLines:
    case Syntax::kCsv:
      for (std::string& l : lines) {
        if (!l.empty() && l.back() == '\r') l.pop_back();
      }
      return Mutation{MutationClass::kNeutral, "crlf-line-ends", join(lines, "\r\n")};
    case Syntax::kJson:
      return Mutation{MutationClass::kNeutral, "json-outer-whitespace", " \n\t" + seed + "\n  \n"};
    case Syntax::kLines:
      if (kind.name != "ops") return std::nullopt;
      return Mutation{
          MutationClass::kNeutral, "ops-trailing-comment",
          seed + (seed.empty() || seed.back() == '\n' ? "" : "\n") + "# end" + std::string(pick(rng, 3), ' ') + "\n"};
    case Syntax::kWord:
      break;
  }
  return std::nullopt;
}

}  // namespace

const char* class_name(MutationClass c) {
  switch (c) {
    case MutationClass::kRandom:
      return "random";
    case MutationClass::kInvalidating:
      return "invalidating";
    case MutationClass::kNeutral:
      break;
  }
  return "neutral";
}

Mutation mutate(const InputKind& kind, const std::string& seed, Rng& rng) {
  const std::size_t draw = pick(rng, 10);  // 4 random, 4 invalidating, 2 neutral
  std::optional<Mutation> m;
  if (draw >= 4 && draw < 8) m = invalidating(kind, seed, rng);
  if (draw >= 8) m = neutral(kind, seed, rng);
  if (m) return *m;
  Mutation r = random_mutation(seed, rng);
  if (draw >= 4) r.name += " (fallback)";
  return r;
}

}  // namespace kv::campaign
