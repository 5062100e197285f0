// ShiftFormula (src/sheet/formula_shift.h): which parts of a formula are references that
// move, which are left alone, and what a reference moved off XLSX's grid becomes.
#include "src/sheet/formula_shift.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace sheetlog {
namespace {

TEST(FormulaShiftTest, RelativeReferencesMoveByRowsAndColumns) {
  EXPECT_EQ(ShiftFormula("A1", 0, 0), "A1");
  EXPECT_EQ(ShiftFormula("A1", 1, 0), "A2");
  EXPECT_EQ(ShiftFormula("A1", 0, 1), "B1");
  EXPECT_EQ(ShiftFormula("B2+C3*2", 2, 3), "E4+F5*2");
  EXPECT_EQ(ShiftFormula("C3", -1, -2), "A2");
  EXPECT_EQ(ShiftFormula("", 5, 5), "");
}

TEST(FormulaShiftTest, ColumnsCarryAcrossLetters) {
  EXPECT_EQ(ShiftFormula("Z1", 0, 1), "AA1");
  EXPECT_EQ(ShiftFormula("AZ5", 0, 1), "BA5");
  EXPECT_EQ(ShiftFormula("ZZ1", 0, 1), "AAA1");
  EXPECT_EQ(ShiftFormula("AA1", 0, -1), "Z1");
  EXPECT_EQ(ShiftFormula("XFC1", 0, 1), "XFD1");
}

TEST(FormulaShiftTest, AnchoredPartsStay) {
  EXPECT_EQ(ShiftFormula("$A$1", 5, 5), "$A$1");
  EXPECT_EQ(ShiftFormula("$A1", 1, 1), "$A2");
  EXPECT_EQ(ShiftFormula("A$1", 1, 1), "B$1");
  // The shared formula of xlsx_import_test, one row down.
  EXPECT_EQ(ShiftFormula("A2*2+$A$1", 1, 0), "A3*2+$A$1");
  // An anchored reference stays even where moving it would leave the grid.
  EXPECT_EQ(ShiftFormula("$A$1", -5, -5), "$A$1");
}

TEST(FormulaShiftTest, EachEndOfARangeMoves) {
  EXPECT_EQ(ShiftFormula("SUM(A1:B2)", 1, 1), "SUM(B2:C3)");
  EXPECT_EQ(ShiftFormula("SUM($A$1:A3)", 1, 0), "SUM($A$1:A4)");
  EXPECT_EQ(ShiftFormula("SUM(A1 B1,C1)", 1, 0), "SUM(A2 B2,C2)");  // intersection, union
}

TEST(FormulaShiftTest, SheetNamesStayAndTheirReferencesMove) {
  EXPECT_EQ(ShiftFormula("Sheet1!A1", 1, 0), "Sheet1!A2");
  EXPECT_EQ(ShiftFormula("'My Sheet'!B2", 0, 1), "'My Sheet'!C2");
  // A quoted name that looks like references, with an escaped quote.
  EXPECT_EQ(ShiftFormula("'It''s A1'!A1", 1, 0), "'It''s A1'!A2");
  // An unquoted sheet name shaped like a cell: followed by '!', so a name.
  EXPECT_EQ(ShiftFormula("AB1!C1", 1, 0), "AB1!C2");
  EXPECT_EQ(ShiftFormula("SUM(Data!A1:A9)", 0, 2), "SUM(Data!C1:C9)");
}

TEST(FormulaShiftTest, StringLiteralsAreLeftAlone) {
  EXPECT_EQ(ShiftFormula("\"A1\"&A1", 1, 0), "\"A1\"&A2");
  EXPECT_EQ(ShiftFormula("\"say \"\"B2\"\"\"&B2", 0, 1), "\"say \"\"B2\"\"\"&C2");
  // An unterminated literal runs to the end of the formula, kept as it is.
  EXPECT_EQ(ShiftFormula("A1&\"B2", 1, 0), "A2&\"B2");
  EXPECT_EQ(ShiftFormula("A1&'B2", 1, 0), "A2&'B2");
}

TEST(FormulaShiftTest, FunctionsNamesAndOtherTokensAreLeftAlone) {
  EXPECT_EQ(ShiftFormula("LOG10(A1)", 1, 0), "LOG10(A2)");  // a call, though cell-shaped
  EXPECT_EQ(ShiftFormula("SUM(A1)+TRUE", 1, 0), "SUM(A2)+TRUE");
  EXPECT_EQ(ShiftFormula("ABCD1+a1+A1B+my_A1+Rate1", 1, 1), "ABCD1+a1+A1B+my_A1+Rate1");
  EXPECT_EQ(ShiftFormula("R1C1", 1, 1), "R1C1");
  EXPECT_EQ(ShiftFormula("Table1[Col]", 1, 1), "Table1[Col]");
  EXPECT_EQ(ShiftFormula("-A1 + 2.5E3 * (B1) / #REF!", 1, 0),
            "-A2 + 2.5E3 * (B2) / #REF!");
}

// A known gap, kept as it is: spreadsheets move "A:A" and "1:1" too.
TEST(FormulaShiftTest, WholeColumnAndRowReferencesAreNotMoved) {
  EXPECT_EQ(ShiftFormula("SUM(A:A)", 1, 1), "SUM(A:A)");
  EXPECT_EQ(ShiftFormula("SUM(1:1)", 1, 1), "SUM(1:1)");
}

TEST(FormulaShiftTest, AReferenceMovedOffTheGridBecomesRefError) {
  EXPECT_EQ(ShiftFormula("A1", -1, 0), "#REF!");
  EXPECT_EQ(ShiftFormula("A1", 0, -1), "#REF!");
  EXPECT_EQ(ShiftFormula("XFD1", 0, 1), "#REF!");
  EXPECT_EQ(ShiftFormula("A1048576", 1, 0), "#REF!");
  EXPECT_EQ(ShiftFormula("XFD1048576", 0, 0), "XFD1048576");
  EXPECT_EQ(ShiftFormula("SUM(A1:B2)", -1, 0), "SUM(#REF!:B1)");
  EXPECT_EQ(ShiftFormula("$A1", 0, -1), "$A1");
  EXPECT_EQ(ShiftFormula("A$1", -1, 0), "A$1");
}

TEST(FormulaShiftTest, AReferenceOutsideTheGridIsRefErrorEvenUnmoved) {
  EXPECT_EQ(ShiftFormula("XFE1", 0, 0), "#REF!");  // column 16385
  EXPECT_EQ(ShiftFormula("A0", 0, 0), "#REF!");
  EXPECT_EQ(ShiftFormula("A1048577", 0, 0), "#REF!");
}

TEST(FormulaShiftTest, RowNumbersAreWrittenWithoutLeadingZeros) {
  EXPECT_EQ(ShiftFormula("A01", 0, 0), "A1");
  EXPECT_EQ(ShiftFormula("A009", 1, 0), "A10");
}

// A row number that fits int64 but overflows it once shifted (a hostile file's shared
// formula): off the grid, no signed overflow.
TEST(FormulaShiftTest, AShiftPastInt64IsRefError) {
  EXPECT_EQ(ShiftFormula("A9223372036854775807", 1, 0), "#REF!");
  EXPECT_EQ(ShiftFormula("A9223372036854775807", 0, 0), "#REF!");
  EXPECT_EQ(ShiftFormula("A1", INT64_MAX, 0), "#REF!");
  EXPECT_EQ(ShiftFormula("B1", 0, INT64_MAX), "#REF!");
  // An anchored row is not moved (nothing to overflow) but is off the grid.
  EXPECT_EQ(ShiftFormula("A$9223372036854775807", 1, 1), "#REF!");
}

TEST(FormulaShiftTest, ARowNumberTooLongForInt64IsLeftAlone) {
  EXPECT_EQ(ShiftFormula("A99999999999999999999", 1, 0), "A99999999999999999999");
}

}  // namespace
}  // namespace sheetlog
