#include "model/util/csv_table.h"

#include <gtest/gtest.h>

#include <string>

namespace kv {
namespace {

constexpr CsvRules kQuoted{true, false};
constexpr CsvRules kNumeric{false, false};
constexpr CsvRules kFreeText{true, true};

std::string error_of(std::string_view text, const CsvRules& rules) {
  StatusOr<CsvTable> t = parse_csv("f.csv", text, rules);
  return t.ok() ? "ok" : t.status().message();
}

TEST(CsvTable, ReadsHeaderRowsAndTheirLines) {
  StatusOr<CsvTable> t = parse_csv("f.csv", "a,b,c\r\n1,\"x,\"\"y\"\"\",3\n4,,6", kQuoted);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->header, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(t->rows[0].line, 2);
  EXPECT_EQ(t->rows[0].fields, (std::vector<std::string>{"1", "x,\"y\"", "3"}));
  EXPECT_EQ(t->rows[1].line, 3);
  EXPECT_EQ(t->rows[1].fields, (std::vector<std::string>{"4", "", "6"}));
  EXPECT_EQ(t->column("c"), 2u);
  EXPECT_FALSE(t->column("d"));
}

TEST(CsvTable, RowsMustHaveTheHeadersWidth) {
  EXPECT_EQ(error_of("a,b,c\n1,2,3\n1,2\n", kQuoted),
            "f.csv: line 3: 2 fields where the header has 3: field c is missing");
  EXPECT_EQ(error_of("a,b\n1,2,3\n", kQuoted),
            "f.csv: line 2: 3 fields where the header has 2: an extra field after b");
}

TEST(CsvTable, LineBreaksInQuotesOnlyWhereAllowed) {
  EXPECT_EQ(error_of("id,n\n\"two\nlines\",1\n", kQuoted),
            "f.csv: line 2: field id: a line break inside a quoted field");
  StatusOr<CsvTable> t = parse_csv("f.csv", "id,n\n\"two\nlines\",1\nnext,2\n", kFreeText);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rows[0].fields[0], "two\nlines");
  EXPECT_EQ(t->rows[1].line, 4);  // the quoted line break counts
}

TEST(CsvTable, CarriageReturnsNulsAndEmptyLines) {
  EXPECT_EQ(error_of("a,b\n1\r2,3\n", kQuoted), "f.csv: line 2: field a: a carriage return inside a field");
  EXPECT_EQ(error_of("a,b\n\"1\r2\",3\n", kQuoted), "f.csv: line 2: field a: a carriage return inside a field");
  EXPECT_EQ(error_of("a,b\n1,2\r", kQuoted), "f.csv: line 2: field b: a carriage return inside a field");
  EXPECT_EQ(error_of(std::string_view("a,b\n1,\0\n", 8), kQuoted), "f.csv: line 2: field b: a NUL byte");
  EXPECT_EQ(error_of("a,b\n\n1,2\n", kQuoted), "f.csv: line 2: empty line");
  EXPECT_EQ(error_of("a,b\n1,2\n\n\r\n", kQuoted), "ok");  // line ends after the last record
  EXPECT_EQ(error_of("", kQuoted), "f.csv: empty file (no header)");
}

TEST(CsvTable, StrictQuoting) {
  EXPECT_EQ(error_of("a,b\n1\"2,3\n", kQuoted), "f.csv: line 2: field a: a quote inside an unquoted field");
  EXPECT_EQ(error_of("a,b\n\"1\"x,3\n", kQuoted), "f.csv: line 2: field a: text after a closing quote");
  EXPECT_EQ(error_of("a,b\n1,\"2\n", kQuoted), "f.csv: line 2: field b: a quote that is never closed");
  EXPECT_EQ(error_of("a,b\n1,\"2", kQuoted), "f.csv: line 2: field b: a quote that is never closed");
  EXPECT_EQ(error_of("a,b\n\"1\",3\n", kNumeric), "f.csv: line 2: field a: a quote (this file has no quoting)");
}

TEST(CsvTable, HeaderNamesAreNonEmptyAndUnique) {
  EXPECT_EQ(error_of("a,,c\n", kQuoted), "f.csv: line 1: header: field 2 has no name");
  EXPECT_EQ(error_of("a,b,a\n", kQuoted), "f.csv: line 1: header: column 'a' appears twice");
}

// 100,000 quotes in a row: read in one pass with no recursion, one clear error.
TEST(CsvTable, DeeplyNestedQuotesAreOneError) {
  const std::string quotes(100000, '"');
  EXPECT_EQ(error_of("a,b\n" + quotes + ",1\n", kNumeric),
            "f.csv: line 2: field a: a quote (this file has no quoting)");
  // Where quoting is allowed the run is one quoted field of 49,999 doubled quotes; one more
  // quote leaves it open.
  StatusOr<CsvTable> t = parse_csv("f.csv", "a,b\n" + quotes + ",1\n", kFreeText);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rows[0].fields[0], std::string(49999, '"'));
  EXPECT_EQ(error_of("a,b\n" + quotes + "\",1\n", kFreeText), "f.csv: line 2: field a: a quote that is never closed");
}

}  // namespace
}  // namespace kv
