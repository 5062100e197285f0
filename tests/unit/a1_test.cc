#include "src/sheet/a1.h"

#include <gtest/gtest.h>

#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

TEST(A1Test, ColumnsAreBijectiveBase26) {
  EXPECT_EQ(FormatColumn(1), "A");
  EXPECT_EQ(FormatColumn(26), "Z");
  EXPECT_EQ(FormatColumn(27), "AA");
  EXPECT_EQ(FormatColumn(52), "AZ");
  EXPECT_EQ(FormatColumn(53), "BA");
  EXPECT_EQ(FormatColumn(702), "ZZ");
  EXPECT_EQ(FormatColumn(703), "AAA");
  EXPECT_EQ(FormatColumn(16384), "XFD");
  EXPECT_EQ(FormatColumn(kMaxColumn), "FXSHRXW");
  EXPECT_EQ(*ParseColumn("XFD"), 16384);
  EXPECT_EQ(*ParseColumn("FXSHRXW"), kMaxColumn);
}

TEST(A1Test, ColumnRoundTripsAcrossDigitBoundaries) {
  for (int64_t col = 1; col <= 20000; ++col) {
    auto parsed = ParseColumn(FormatColumn(col));
    ASSERT_OK(parsed) << col;
    ASSERT_EQ(*parsed, col);
  }
  for (int64_t col : {int64_t{475254}, int64_t{475255}, int64_t{12356630},
                      int64_t{12356631}, kMaxColumn - 1, kMaxColumn}) {
    EXPECT_EQ(*ParseColumn(FormatColumn(col)), col);
  }
}

TEST(A1Test, BadColumnsSayWhy) {
  EXPECT_EQ(ParseColumn("").status().message(), "bad column '': missing column letters");
  EXPECT_EQ(ParseColumn("c").status().message(),
            "bad column 'c': column letters must be upper case");
  EXPECT_EQ(ParseColumn("A1").status().message(),
            "bad column 'A1': column letters must be A..Z");
  EXPECT_EQ(ParseColumn("FXSHRXX").status().message(),
            "bad column 'FXSHRXX': column is beyond the last column FXSHRXW");
  // Very long input fails on the bound, without overflowing.
  EXPECT_FALSE(ParseColumn(std::string(40, 'Z')).ok());
}

TEST(A1Test, CellRefsParseAndFormat) {
  auto c2 = ParseCellRef("C2");
  ASSERT_OK(c2);
  EXPECT_EQ(c2->row, 2);
  EXPECT_EQ(c2->col, 3);
  EXPECT_EQ(FormatCellRef(*c2), "C2");
  auto corner = ParseCellRef("FXSHRXW2147483647");
  ASSERT_OK(corner);
  EXPECT_EQ(*corner, (CellRef{kMaxRow, kMaxColumn}));
  EXPECT_EQ(FormatCellRef(*corner), "FXSHRXW2147483647");
  EXPECT_EQ(*ParseCellRef("XFD1048576"), (CellRef{1048576, 16384}));
}

TEST(A1Test, BadCellRefsSayWhy) {
  auto message = [](std::string_view text) {
    return ParseCellRef(text).status().message();
  };
  EXPECT_EQ(message("C0"), "bad cell reference 'C0': rows start at 1");
  EXPECT_EQ(message(""), "bad cell reference '': empty");
  EXPECT_EQ(message("C"), "bad cell reference 'C': missing row number");
  EXPECT_EQ(message("2C"),
            "bad cell reference '2C': expected column letters followed by a row number");
  EXPECT_EQ(message("C2D"),
            "bad cell reference 'C2D': expected column letters followed by a row number");
  EXPECT_EQ(
      message("$C$2"),
      "bad cell reference '$C$2': expected column letters followed by a row number");
  EXPECT_EQ(message(" C2"),
            "bad cell reference ' C2': expected column letters followed by a row number");
  EXPECT_EQ(message("c2"), "bad cell reference 'c2': column letters must be upper case");
  EXPECT_EQ(message("C02"), "bad cell reference 'C02': row number has a leading zero");
  EXPECT_EQ(message("C-2"),
            "bad cell reference 'C-2': expected column letters followed by a row number");
  EXPECT_EQ(message("A2147483648"),
            "bad cell reference 'A2147483648': row is beyond the last row 2147483647");
  EXPECT_EQ(message("A99999999999999999999999"),
            "bad cell reference 'A99999999999999999999999': row is beyond the last row "
            "2147483647");
  EXPECT_EQ(message("FXSHRXX1"),
            "bad cell reference 'FXSHRXX1': column is beyond the last column FXSHRXW");
  EXPECT_EQ(ParseCellRef("C0").status().code(), StatusCode::kInvalidArgument);
}

TEST(A1Test, RangesNormalizeCorners) {
  CellRange expected{{1, 1}, {20, 4}};
  EXPECT_EQ(*ParseRange("A1:D20"), expected);
  EXPECT_EQ(*ParseRange("D20:A1"), expected);
  EXPECT_EQ(*ParseRange("A20:D1"), expected);
  EXPECT_EQ(*ParseRange("D1:A20"), expected);
  EXPECT_EQ(FormatRange(expected), "A1:D20");
  EXPECT_EQ(expected.rows(), 20);
  EXPECT_EQ(expected.columns(), 4);
  EXPECT_TRUE(expected.Contains({20, 4}));
  EXPECT_FALSE(expected.Contains({21, 4}));
  EXPECT_FALSE(expected.Contains({1, 5}));

  auto single = ParseRange("B3");
  ASSERT_OK(single);
  EXPECT_EQ(*single, (CellRange{{3, 2}, {3, 2}}));
  EXPECT_EQ(*ParseRange(FormatRange(*single)), *single);
}

TEST(A1Test, BadRangesSayWhy) {
  EXPECT_EQ(ParseRange("A1:D0").status().message(),
            "bad range 'A1:D0': bad cell reference 'D0': rows start at 1");
  EXPECT_EQ(ParseRange("A1:B2:C3").status().message(),
            "bad range 'A1:B2:C3': more than one ':'");
  EXPECT_EQ(ParseRange(":A1").status().message(),
            "bad range ':A1': bad cell reference '': empty");
  EXPECT_FALSE(ParseRange("A:C").ok());
}

TEST(A1Test, InGrid) {
  EXPECT_TRUE(InGrid({1, 1}));
  EXPECT_TRUE(InGrid({kMaxRow, kMaxColumn}));
  EXPECT_FALSE(InGrid({0, 1}));
  EXPECT_FALSE(InGrid({1, 0}));
  EXPECT_FALSE(InGrid({kMaxRow + 1, 1}));
  EXPECT_FALSE(InGrid({1, kMaxColumn + 1}));
}

}  // namespace
}  // namespace sheetlog
