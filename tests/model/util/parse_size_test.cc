#include "model/util/parse_size.h"

#include <gtest/gtest.h>

namespace kv {
namespace {

TEST(ParseByteSize, PlainDecimalAndBinaryUnits) {
  EXPECT_EQ(parse_byte_size("4096"), 4096);
  EXPECT_EQ(parse_byte_size("0"), 0);
  EXPECT_EQ(parse_byte_size("64K"), 64000);
  EXPECT_EQ(parse_byte_size("64KB"), 64000);
  EXPECT_EQ(parse_byte_size("64G"), 64'000'000'000);
  EXPECT_EQ(parse_byte_size("64GB"), 64'000'000'000);
  EXPECT_EQ(parse_byte_size("64GiB"), 64LL << 30);
  EXPECT_EQ(parse_byte_size("2MiB"), 2LL << 20);
  EXPECT_EQ(parse_byte_size("3KiB"), 3072);
  EXPECT_EQ(parse_byte_size("1TiB"), 1LL << 40);
}

TEST(ParseByteSize, FractionsAreExactAndRoundDown) {
  EXPECT_EQ(parse_byte_size("1.5T"), 1'500'000'000'000);
  EXPECT_EQ(parse_byte_size("1.5KiB"), 1536);
  EXPECT_EQ(parse_byte_size("0.1K"), 100);
  EXPECT_EQ(parse_byte_size("1.0005K"), 1000);      // 1000.5 bytes: the half byte is dropped
  EXPECT_EQ(parse_byte_size("0.3GiB"), 322122547);  // 322122547.2
  EXPECT_FALSE(parse_byte_size("1.5"));             // a fraction needs a unit
}

TEST(ParseByteSize, RejectsEverythingElse) {
  for (const char* bad : {"",    "G",  "-1",  "+5",    " 5", "5 ",  "5 G",  "0x10", "1e9",    "inf",
                          "nan", "1.", ".5G", "1..5G", "5g", "5Gi", "5GIB", "5Q",   "1.2.3K", "99999999999999999999"}) {
    EXPECT_FALSE(parse_byte_size(bad)) << bad;
  }
}

TEST(ParseByteSize, RejectsSizesAboveTwoToThe62) {
  EXPECT_EQ(parse_byte_size("4611686018427387904"), kMaxParsedSize);
  EXPECT_FALSE(parse_byte_size("4611686018427387905"));
  EXPECT_FALSE(parse_byte_size("5000000TiB"));
  EXPECT_EQ(parse_byte_size("4194304TiB"), kMaxParsedSize);
}

TEST(ParseTokenCount, PlainExponentAndSuffixes) {
  EXPECT_EQ(parse_token_count("65536"), 65536);
  EXPECT_EQ(parse_token_count("1e4"), 10000);
  EXPECT_EQ(parse_token_count("1E+4"), 10000);
  EXPECT_EQ(parse_token_count("2.5k"), 2500);
  EXPECT_EQ(parse_token_count("3M"), 3'000'000);
  EXPECT_EQ(parse_token_count("1G"), 1'000'000'000);
  EXPECT_FALSE(parse_token_count("1.6"));         // no suffix: a fraction of a token is no count
  EXPECT_EQ(parse_token_count("1.5e1"), 15);      // whole
  EXPECT_EQ(parse_token_count("1.2345k"), 1235);  // with a suffix: rounded to the nearest token
}

TEST(ParseTokenCount, RejectsEverythingElse) {
  for (const char* bad : {"", "k", "-5", "+5", "0x10", "0x1p4", "inf", "nan", "infinity", "1e", "1e+", "e5", " 5", "5 ",
                          "5T", "5KiB", "1e400", "1e30", "1.k"}) {
    EXPECT_FALSE(parse_token_count(bad)) << bad;
  }
}

}  // namespace
}  // namespace kv
