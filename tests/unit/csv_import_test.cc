// CSV input (src/sheet/csv.h): every RFC 4180 case and every typing rule on its own.
#include <gtest/gtest.h>

#include <map>

#include "src/sheet/csv.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

// The cells a CSV text gives, fed in pieces of `piece` bytes (0 = all at once), as
// "B2" -> value; `*status` gets the parse result.
std::map<std::string, CellValue> Parse(std::string_view text, Status* status,
                                       size_t piece = 0) {
  std::map<std::string, CellValue> cells;
  CsvParser parser([&](const CellRef& ref, Cell cell) {
    EXPECT_TRUE(cell.format.empty());
    EXPECT_FALSE(cell.empty());
    cells[FormatCellRef(ref)] = cell.value;
    return Status::OK();
  });
  *status = Status::OK();
  if (piece == 0) piece = std::max<size_t>(1, text.size());
  for (size_t at = 0; at < text.size() && status->ok(); at += piece) {
    *status = parser.Feed(text.substr(at, piece));
  }
  if (status->ok()) *status = parser.Finish();
  return cells;
}

std::map<std::string, CellValue> ParseOk(std::string_view text, size_t piece = 0) {
  Status status;
  auto cells = Parse(text, &status, piece);
  EXPECT_OK(status);
  return cells;
}

CellValue S(const char* text) { return CellValue::String(text); }
CellValue N(double v) { return CellValue::Number(v); }

TEST(CsvParserTest, PlainFieldsAndRecords) {
  EXPECT_EQ(ParseOk("a,b\nc,d\n"),
            (std::map<std::string, CellValue>{
                {"A1", S("a")}, {"B1", S("b")}, {"A2", S("c")}, {"B2", S("d")}}));
}

TEST(CsvParserTest, QuotedFieldHoldsCommas) {
  EXPECT_EQ(ParseOk("\"x, y\",z\n"),
            (std::map<std::string, CellValue>{{"A1", S("x, y")}, {"B1", S("z")}}));
}

TEST(CsvParserTest, DoubledQuotesInsideQuotedFieldAreOneQuote) {
  EXPECT_EQ(ParseOk("\"say \"\"hi\"\"\",\"\"\"\"\n"),
            (std::map<std::string, CellValue>{{"A1", S("say \"hi\"")}, {"B1", S("\"")}}));
}

TEST(CsvParserTest, QuotedFieldHoldsLineBreaks) {
  EXPECT_EQ(ParseOk("\"line1\nline2\",\"a\r\nb\"\nnext\n"),
            (std::map<std::string, CellValue>{
                {"A1", S("line1\nline2")}, {"B1", S("a\r\nb")}, {"A2", S("next")}}));
}

TEST(CsvParserTest, CrlfLineEnds) {
  EXPECT_EQ(ParseOk("a,b\r\nc,d\r\n"),
            (std::map<std::string, CellValue>{
                {"A1", S("a")}, {"B1", S("b")}, {"A2", S("c")}, {"B2", S("d")}}));
}

TEST(CsvParserTest, LfLineEnds) {
  EXPECT_EQ(ParseOk("a\nb\n"),
            (std::map<std::string, CellValue>{{"A1", S("a")}, {"A2", S("b")}}));
}

TEST(CsvParserTest, LoneCrLineEnds) {
  EXPECT_EQ(ParseOk("a\rb\r"),
            (std::map<std::string, CellValue>{{"A1", S("a")}, {"A2", S("b")}}));
}

TEST(CsvParserTest, CrlfSplitAcrossPiecesIsOneLineEnd) {
  EXPECT_EQ(
      ParseOk("a\r\nb\r\nc", 2),
      (std::map<std::string, CellValue>{{"A1", S("a")}, {"A2", S("b")}, {"A3", S("c")}}));
}

TEST(CsvParserTest, LastRecordWithoutLineEnd) {
  EXPECT_EQ(ParseOk("a,b\nc,d"),
            (std::map<std::string, CellValue>{
                {"A1", S("a")}, {"B1", S("b")}, {"A2", S("c")}, {"B2", S("d")}}));
}

TEST(CsvParserTest, Utf8WithBomSkipsTheBom) {
  EXPECT_EQ(ParseOk("\xEF\xBB\xBFn\xC3\xA4me,1\n"),
            (std::map<std::string, CellValue>{{"A1", S("n\xC3\xA4me")}, {"B1", N(1)}}));
}

TEST(CsvParserTest, BomSplitAcrossPiecesIsStillSkipped) {
  EXPECT_EQ(ParseOk("\xEF\xBB\xBFx", 1),
            (std::map<std::string, CellValue>{{"A1", S("x")}}));
}

TEST(CsvParserTest, Utf8WithoutBom) {
  EXPECT_EQ(ParseOk("\xE6\x97\xA5\xE6\x9C\xAC,\xF0\x9F\x99\x82\n"),
            (std::map<std::string, CellValue>{{"A1", S("\xE6\x97\xA5\xE6\x9C\xAC")},
                                              {"B1", S("\xF0\x9F\x99\x82")}}));
}

TEST(CsvParserTest, BytesThatAreNotUtf8AreRefusedNamingLineAndField) {
  Status status;
  Parse("ok\nok,caf\xE9\n", &status);  // Latin-1 e-acute
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("CSV line 2, field 2"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("UTF-8"), std::string::npos);
}

TEST(CsvParserTest, EmptyFieldsAreEmptyCells) {
  EXPECT_EQ(ParseOk("a,,c\n,\"\",\n"),
            (std::map<std::string, CellValue>{{"A1", S("a")}, {"C1", S("c")}}));
}

TEST(CsvParserTest, BlankLineIsABlankRow) {
  EXPECT_EQ(ParseOk("a\n\nb\n"),
            (std::map<std::string, CellValue>{{"A1", S("a")}, {"A3", S("b")}}));
}

TEST(CsvParserTest, UnterminatedQuoteIsRefusedWithItsLine) {
  Status status;
  Parse("a,b\nc,\"open\nmore\nstill open", &status);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      status.message().find("unterminated quoted field (opened at line 2, field 2)"),
      std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("CSV line 4"), std::string::npos) << status.message();
}

TEST(CsvParserTest, TextAfterClosingQuoteIsRefused) {
  Status status;
  Parse("\"abc\"def,x\n", &status);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("CSV line 1, field 1"), std::string::npos)
      << status.message();
}

TEST(CsvParserTest, QuoteInsideUnquotedFieldIsKept) {
  EXPECT_EQ(ParseOk("5\" pipe\n"),
            (std::map<std::string, CellValue>{{"A1", S("5\" pipe")}}));
}

TEST(CsvParserTest, OneByteAtATimeGivesTheSameCells) {
  const std::string text =
      "\xEF\xBB\xBFid,name,note\r\n1,\"Smith, J\",\"said \"\"ok\"\"\r\nthen left\"\r\n"
      "2,,TRUE\r\n";
  EXPECT_EQ(ParseOk(text, 1), ParseOk(text));
  EXPECT_EQ(ParseOk(text).size(), 8u);
}

TEST(CsvParserTest, TooLongFieldIsRefused) {
  Status status;
  Parse(std::string(CsvParser::kMaxFieldBytes + 1, 'x'), &status);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("longer than"), std::string::npos);
}

TEST(CsvTypingTest, IntegersAndDecimalsAreNumbers) {
  EXPECT_EQ(CsvFieldValue("42"), N(42));
  EXPECT_EQ(CsvFieldValue("-7"), N(-7));
  EXPECT_EQ(CsvFieldValue("0"), N(0));
  EXPECT_EQ(CsvFieldValue("3.25"), N(3.25));
  EXPECT_EQ(CsvFieldValue("0.5"), N(0.5));
  EXPECT_EQ(CsvFieldValue(".5"), N(0.5));
  EXPECT_EQ(CsvFieldValue("-.5"), N(-0.5));
  EXPECT_EQ(CsvFieldValue("1e+300"), N(1e300));
  EXPECT_EQ(CsvFieldValue("2.5E-3"), N(0.0025));
}

TEST(CsvTypingTest, LeadingZerosStayStrings) {
  EXPECT_EQ(CsvFieldValue("007"), S("007"));
  EXPECT_EQ(CsvFieldValue("00.5"), S("00.5"));
  EXPECT_EQ(CsvFieldValue("-01"), S("-01"));
  EXPECT_EQ(CsvFieldValue("02134"), S("02134"));
}

TEST(CsvTypingTest, OtherTextStaysString) {
  for (const char* text : {"+5", " 5", "5 ", "1,000", "5%", "$5", "5.", "1e", "0x10",
                           "NaN", "inf", "-", ".", "1.2.3", "12abc"}) {
    EXPECT_EQ(CsvFieldValue(text), S(text)) << text;
  }
}

TEST(CsvTypingTest, IntegersBeyondTwoToThe53StayStrings) {
  EXPECT_EQ(CsvFieldValue("9007199254740992"), N(9007199254740992.0));
  EXPECT_EQ(CsvFieldValue("9007199254740993"), S("9007199254740993"));
  EXPECT_EQ(CsvFieldValue("4111111111111111111"), S("4111111111111111111"));
}

TEST(CsvTypingTest, OverflowingNumbersStayStrings) {
  EXPECT_EQ(CsvFieldValue("1e999"), S("1e999"));
}

TEST(CsvTypingTest, BooleansInAnyCase) {
  EXPECT_EQ(CsvFieldValue("TRUE"), CellValue::Boolean(true));
  EXPECT_EQ(CsvFieldValue("false"), CellValue::Boolean(false));
  EXPECT_EQ(CsvFieldValue("True"), CellValue::Boolean(true));
  EXPECT_EQ(CsvFieldValue("yes"), S("yes"));
}

TEST(CsvTypingTest, QuotedFieldsAreTypedLikeUnquotedOnes) {
  EXPECT_EQ(ParseOk("\"12\",\"TRUE\",\"007\"\n"),
            (std::map<std::string, CellValue>{
                {"A1", N(12)}, {"B1", CellValue::Boolean(true)}, {"C1", S("007")}}));
}

TEST(CsvTypingTest, FormulaTextStaysAFormulaString) {
  EXPECT_EQ(CsvFieldValue("=SUM(A1:A3)"), S("=SUM(A1:A3)"));
  EXPECT_TRUE(CsvFieldValue("=SUM(A1:A3)").is_formula());
}

TEST(CsvRoundTripTest, WhatTheWriterWritesReadsBack) {
  std::vector<CellValue> record = {
      N(100),      N(0.1),          N(-1e300),     S("a,b"),
      S("q\"q"),   S("two\nlines"), S(" padded "), CellValue::Boolean(true),
      CellValue(), S("=A1+1"),      S("007")};
  std::string text;
  AppendCsvRecord(record, &text);
  std::map<std::string, CellValue> cells = ParseOk(text);
  for (size_t i = 0; i < record.size(); ++i) {
    const std::string ref = FormatCellRef({1, static_cast<int64_t>(i) + 1});
    if (record[i].is_null()) {
      EXPECT_EQ(cells.count(ref), 0u) << ref;
    } else {
      EXPECT_EQ(cells[ref], record[i]) << ref;
    }
  }
}

TEST(Utf8Test, RefusesOverlongSurrogatesAndTruncation) {
  EXPECT_TRUE(IsValidUtf8("plain \xC3\xA4 \xF0\x9F\x99\x82"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xE6\x97"));          // cut short
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
}

}  // namespace
}  // namespace sheetlog
