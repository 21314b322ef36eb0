#include "sim/profile_table.h"

#include <algorithm>
#include <boost/algorithm/string/trim.hpp>
#include <fstream>
#include <sstream>
#include <tuple>

#include "model/util/check.h"
#include "model/util/csv_table.h"
#include "model/util/parse_number.h"

namespace kv::sim {

namespace {

constexpr const char* kColumns[] = {"kernel", "num_tokens", "num_seqs", "context_tokens", "time_ns"};

__extension__ typedef __int128 Int128;

// num / den rounded to nearest, halves away from zero; den > 0.
Int128 round_div(Int128 num, Int128 den) { return num >= 0 ? (num + den / 2) / den : -((-num + den / 2) / den); }

// The line through (x0, y0), (x1, y1) at x (x0 < x1), clamped to [0, kMaxProfileNs]: far
// extrapolation saturates instead of overflowing.
std::int64_t on_line(std::int64_t x0, std::int64_t y0, std::int64_t x1, std::int64_t y1, std::int64_t x) {
  const Int128 num = (static_cast<Int128>(y1) - y0) * (static_cast<Int128>(x) - x0);
  const Int128 y = y0 + round_div(num, static_cast<Int128>(x1) - x0);
  return static_cast<std::int64_t>(std::clamp<Int128>(y, 0, kMaxProfileNs));
}

// Interpolates through n points given by accessors, xs strictly increasing.
template <typename X, typename Y>
std::int64_t interpolate_points(std::size_t n, X x_at, Y y_at, std::int64_t x) {
  KV_CHECK(n > 0);
  if (n == 1) return std::clamp<std::int64_t>(y_at(0), 0, kMaxProfileNs);
  // The segment [i, i+1] containing x, or the end segment beyond the table.
  std::size_t lo = 0, hi = n - 1;
  if (x <= x_at(0)) {
    hi = 1;
  } else if (x >= x_at(n - 1)) {
    lo = n - 2;
  } else {
    while (hi - lo > 1) {
      std::size_t mid = (lo + hi) / 2;
      if (x_at(mid) <= x)
        lo = mid;
      else
        hi = mid;
    }
  }
  hi = lo + 1;
  return std::clamp<std::int64_t>(on_line(x_at(lo), y_at(lo), x_at(hi), y_at(hi), x), 0, kMaxProfileNs);
}

std::string where(const std::string& name, int line, int column) {
  std::string s = name + ":" + std::to_string(line);
  if (column > 0) {
    s += ": column " + std::to_string(column) + " (" + kColumns[column - 1] + ")";
  }
  return s + ": ";
}

// The rows of a profile as read, before sorting.
struct ParsedRows {
  std::array<std::vector<ProfileTable::Row>, kNumKernels> rows;  // kernel rows, in file order
  std::array<std::vector<int>, kNumKernels> lines;               // source line of each row, parallel to rows
  std::vector<HostRow> host_rows;                                // host_step rows, in file order
  std::vector<StepRow> step_rows;                                // decode_ and prefill_step rows, in file order
  std::size_t num_rows = 0;                                      // kernel rows
};

std::string trimmed(std::string_view text) { return boost::algorithm::trim_copy(std::string(text)); }

// The header fields, each trimmed, as "a,b,c".
std::string trimmed_header(const std::vector<std::string>& fields) {
  std::string got;
  for (const std::string& f : fields) got += (got.empty() ? "" : ",") + trimmed(f);
  return got;
}

// The header must name the five columns in order.
Status check_header(const std::string& name, const std::vector<std::string>& header) {
  const std::string got = trimmed_header(header);
  if (got != "kernel,num_tokens,num_seqs,context_tokens,time_ns") {
    return Status::error(name + ":1: header is '" + got +
                         "', expected 'kernel,num_tokens,num_seqs,context_tokens,time_ns'");
  }
  return Status();
}

// The four number cells of a row (columns 2 to 5).
Status parse_row_numbers(const std::string& name, int line, const std::array<std::string, 4>& cells,
                         ProfileTable::Row& row) {
  std::int64_t* fields[] = {&row.num_tokens, &row.num_seqs, &row.context_tokens, &row.time_ns};
  for (int c = 0; c < 4; ++c) {
    const std::optional<std::int64_t> v = parse_int64(cells[static_cast<std::size_t>(c)]);
    if (!v) {
      return Status::error(where(name, line, c + 2) + "'" + cells[static_cast<std::size_t>(c)] + "' is not an integer");
    }
    *fields[c] = *v;
  }
  return Status();
}

Status unknown_kernel(const std::string& name, int line, const std::string& kernel) {
  std::string valid;
  for (std::string_view n : kKernelNames) valid += (valid.empty() ? "" : ", ") + std::string(n);
  valid += ", host_step, decode_step, prefill_step";
  return Status::error(where(name, line, 1) + "unknown kernel '" + kernel + "' (valid: " + valid + ")");
}

// A kernel row's numbers inside their ranges.
Status check_kernel_row(const std::string& name, int line, const ProfileTable::Row& row) {
  if (row.num_tokens < 1) {
    return Status::error(where(name, line, 2) + "num_tokens must be >= 1, got " + std::to_string(row.num_tokens));
  }
  const std::pair<int, std::int64_t> non_negative[] = {{3, row.num_seqs}, {4, row.context_tokens}, {5, row.time_ns}};
  for (auto [column, value] : non_negative) {
    if (value < 0) {
      return Status::error(where(name, line, column) + "must be >= 0, got " + std::to_string(value));
    }
  }
  const std::pair<int, std::int64_t> bounded[] = {{2, row.num_tokens}, {3, row.num_seqs}, {4, row.context_tokens}};
  for (auto [column, value] : bounded) {
    if (value > kMaxProfileKey) {
      return Status::error(where(name, line, column) + "must be <= " + std::to_string(kMaxProfileKey) + ", got " +
                           std::to_string(value));
    }
  }
  if (row.time_ns > kMaxProfileNs) {
    return Status::error(where(name, line, 5) + "must be <= " + std::to_string(kMaxProfileNs) +
                         " (1000 s for one launch), got " + std::to_string(row.time_ns));
  }
  return Status();
}

// A decode_step row: every sequence computes one token and reads at least that one key. A
// prefill_step row: whole prompts of at least one token each, no cached prefix.
Status add_step_row(const std::string& name, int line, bool decode, const ProfileTable::Row& row, ParsedRows& parsed) {
  if (Status s = check_kernel_row(name, line, row); !s.ok()) return s;
  if (decode && (row.num_seqs != row.num_tokens || row.context_tokens < row.num_seqs)) {
    return Status::error(where(name, line, 2) +
                         "a decode_step row needs num_seqs == num_tokens and context_tokens >= num_seqs");
  }
  if (!decode && (row.num_seqs < 1 || row.num_tokens < row.num_seqs || row.context_tokens != row.num_tokens)) {
    return Status::error(where(name, line, 2) +
                         "a prefill_step row needs num_tokens >= num_seqs >= 1 and context_tokens == num_tokens "
                         "(no cached prefix)");
  }
  parsed.step_rows.push_back({decode, row.num_tokens, row.num_seqs, row.context_tokens, row.time_ns});
  return Status();
}

// One data row: a host_step, decode_step, prefill_step or kernel row, checked and added to `parsed`.
Status add_row(const std::string& name, int line, const std::string& kernel, const std::array<std::string, 4>& cells,
               ParsedRows& parsed) {
  ProfileTable::Row row;
  if (Status s = parse_row_numbers(name, line, cells, row); !s.ok()) return s;
  std::optional<Kernel> k = parse_kernel(kernel);
  if (!k && kernel == "host_step" && row.num_tokens >= 1 && row.num_seqs >= 1 && row.time_ns >= 0) {
    parsed.host_rows.push_back({row.num_tokens, row.num_seqs, row.time_ns});
    return Status();
  }
  if (!k && kernel == "host_step") {
    return Status::error(where(name, line, 2) +
                         "a host_step row needs num_tokens >= 1, num_seqs >= 1 and time_ns >= 0");
  }
  if (!k && (kernel == "decode_step" || kernel == "prefill_step")) {
    return add_step_row(name, line, kernel == "decode_step", row, parsed);
  }
  if (!k) return unknown_kernel(name, line, kernel);
  if (Status s = check_kernel_row(name, line, row); !s.ok()) return s;
  ProfileTable::Row stored = row;
  if (*k != Kernel::kAttention) stored.num_seqs = stored.context_tokens = 0;
  parsed.rows[static_cast<int>(*k)].push_back(stored);
  parsed.lines[static_cast<int>(*k)].push_back(line);
  ++parsed.num_rows;
  return Status();
}

// The header and every row of the CSV text (model/util/csv_table.h: exact field counts, no
// quoting); spaces and tabs around a field are dropped.
Status read_rows(const std::string& name, std::string_view text, ParsedRows& parsed) {
  if (text.find_first_not_of("\r\n") == std::string_view::npos) {
    return Status::error(name + ": empty profile, expected the header " +
                         "'kernel,num_tokens,num_seqs,context_tokens,time_ns'");
  }
  StatusOr<CsvReader> csv = CsvReader::open(name, text, CsvRules{false, false});
  if (!csv.ok()) return csv.status();
  if (Status s = check_header(name, csv->header()); !s.ok()) return s;
  CsvRow row;
  while (true) {
    const StatusOr<bool> got = csv->next(row);
    if (!got.ok()) return got.status();
    if (!*got) break;
    const std::array<std::string, 4> cells = {trimmed(row.fields[1]), trimmed(row.fields[2]), trimmed(row.fields[3]),
                                              trimmed(row.fields[4])};
    if (Status s = add_row(name, row.line, trimmed(row.fields[0]), cells, parsed); !s.ok()) return s;
  }
  if (parsed.num_rows == 0 && parsed.host_rows.empty() && parsed.step_rows.empty())
    return Status::error(name + ": no profile rows (a header alone)");
  return Status();
}

// Sorts one kernel's rows by key (stable); two rows with one key are an error naming both lines.
Status sort_kernel_rows(const std::string& name, int k, std::vector<ProfileTable::Row>& rows,
                        const std::vector<int>& lines) {
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows[a] < rows[b]; });
  std::vector<ProfileTable::Row> sorted;
  sorted.reserve(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const ProfileTable::Row& r = rows[order[i]];
    if (i > 0 && !(rows[order[i - 1]] < r)) {
      int first = lines[order[i - 1]];
      int again = lines[order[i]];
      std::string key = "num_tokens " + std::to_string(r.num_tokens);
      if (k == static_cast<int>(Kernel::kAttention)) {
        key = "num_seqs " + std::to_string(r.num_seqs) + ", " + key + ", context_tokens " +
              std::to_string(r.context_tokens);
      }
      return Status::error(where(name, std::max(first, again), 0) + "duplicate row for " +
                           std::string(kKernelNames[k]) + " at " + key + " (also on line " +
                           std::to_string(std::min(first, again)) + ")");
    }
    sorted.push_back(r);
  }
  rows = std::move(sorted);
  return Status();
}

}  // namespace

bool ProfileTable::Row::operator<(const Row& o) const {
  return std::tie(num_seqs, num_tokens, context_tokens) < std::tie(o.num_seqs, o.num_tokens, o.context_tokens);
}

std::int64_t interpolate(const std::vector<std::int64_t>& xs, const std::vector<std::int64_t>& ys, std::int64_t x) {
  KV_CHECK(xs.size() == ys.size() && !xs.empty());
  return interpolate_points(
      xs.size(), [&](std::size_t i) { return xs[i]; }, [&](std::size_t i) { return ys[i]; }, x);
}

StatusOr<ProfileTable> ProfileTable::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open profile");
  std::ostringstream text;
  text << in.rdbuf();
  std::string data = text.str();
  return read(path, data.data(), data.data() + data.size());
}

StatusOr<ProfileTable> ProfileTable::parse(const std::string& name, std::string_view text) {
  return read(name, text.data(), text.data() + text.size());
}

StatusOr<ProfileTable> ProfileTable::read(const std::string& name, const char* begin, const char* end) {
  ParsedRows parsed;
  if (Status s = read_rows(name, std::string_view(begin, static_cast<std::size_t>(end - begin)), parsed); !s.ok()) {
    return s;
  }
  for (int k = 0; k < kNumKernels; ++k) {
    if (Status s = sort_kernel_rows(name, k, parsed.rows[k], parsed.lines[k]); !s.ok()) return s;
  }
  ProfileTable table;
  table.rows_ = std::move(parsed.rows);
  table.host_rows_ = std::move(parsed.host_rows);
  table.step_rows_ = std::move(parsed.step_rows);
  table.num_rows_ = parsed.num_rows;
  return table;
}

std::int64_t ProfileTable::lookup_ns(Kernel k, const KernelQuery& q) const {
  const std::vector<Row>& rows = rows_[static_cast<int>(k)];
  KV_CHECK(!rows.empty(), "no profile rows for " << kernel_name(k));
  if (k != Kernel::kAttention) {
    return interpolate_points(
        rows.size(), [&](std::size_t i) { return rows[i].num_tokens; }, [&](std::size_t i) { return rows[i].time_ns; },
        q.num_tokens);
  }
  // The num_seqs group nearest the query (ties to the smaller).
  auto first_at_or_above = std::lower_bound(rows.begin(), rows.end(), q.num_seqs,
                                            [](const Row& r, std::int64_t s) { return r.num_seqs < s; });
  std::int64_t seqs;
  if (first_at_or_above == rows.end()) {
    seqs = rows.back().num_seqs;
  } else if (first_at_or_above == rows.begin()) {
    seqs = first_at_or_above->num_seqs;
  } else {
    std::int64_t above = first_at_or_above->num_seqs;
    std::int64_t below = std::prev(first_at_or_above)->num_seqs;
    seqs = (q.num_seqs - below <= above - q.num_seqs) ? below : above;
  }
  auto g0 =
      std::lower_bound(rows.begin(), rows.end(), seqs, [](const Row& r, std::int64_t s) { return r.num_seqs < s; });
  auto g1 =
      std::upper_bound(rows.begin(), rows.end(), seqs, [](std::int64_t s, const Row& r) { return s < r.num_seqs; });
  // Columns: runs of equal num_tokens inside the group, sorted by context_tokens.
  struct Column {
    std::int64_t num_tokens;
    const Row* begin;
    std::size_t size;
  };
  auto column_value = [&](const Column& c) {
    return interpolate_points(
        c.size, [&](std::size_t i) { return c.begin[i].context_tokens; },
        [&](std::size_t i) { return c.begin[i].time_ns; }, q.context_tokens);
  };
  auto column_at = [&](std::vector<Row>::const_iterator it) {
    auto e = it;
    while (e != g1 && e->num_tokens == it->num_tokens) ++e;
    return Column{it->num_tokens, &*it, static_cast<std::size_t>(e - it)};
  };
  // Walk the columns (few) to find the bracketing pair.
  Column cur = column_at(g0);
  auto it = g0 + static_cast<std::ptrdiff_t>(cur.size);
  if (it == g1) return column_value(cur);  // a single column
  Column next = column_at(it);
  it += static_cast<std::ptrdiff_t>(next.size);
  while (q.num_tokens > next.num_tokens && it != g1) {
    cur = next;
    next = column_at(it);
    it += static_cast<std::ptrdiff_t>(next.size);
  }
  std::int64_t t0 = column_value(cur);
  std::int64_t t1 = column_value(next);
  return std::clamp<std::int64_t>(on_line(cur.num_tokens, t0, next.num_tokens, t1, q.num_tokens), 0, kMaxProfileNs);
}

std::vector<ProfileRow> ProfileTable::all_rows() const {
  std::vector<ProfileRow> out;
  for (int k = 0; k < kNumKernels; ++k) {
    for (const Row& r : rows_[static_cast<std::size_t>(k)]) {
      out.push_back({static_cast<Kernel>(k), r.num_tokens, r.num_seqs, r.context_tokens, r.time_ns});
    }
  }
  return out;
}

}  // namespace kv::sim
