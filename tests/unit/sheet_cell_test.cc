#include <gtest/gtest.h>

#include "emulator/json_text.h"
#include "src/sheet/cell.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

using json = nlohmann::json;

TEST(CellValueTest, FromJsonAcceptsScalars) {
  EXPECT_EQ(*CellValue::FromJson(json(100)), CellValue::Number(100));
  EXPECT_EQ(*CellValue::FromJson(json(-2.5)), CellValue::Number(-2.5));
  EXPECT_EQ(*CellValue::FromJson(json("Nails")), CellValue::String("Nails"));
  EXPECT_EQ(*CellValue::FromJson(json(true)), CellValue::Boolean(true));
  EXPECT_TRUE(CellValue::FromJson(json(nullptr))->is_null());
  EXPECT_EQ(*CellValue::FromJson(json("")), CellValue::String(""));
}

TEST(CellValueTest, FormulasAreStringsStartingWithEquals) {
  CellValue formula = *CellValue::FromJson(json("=SUM(A1:A3)"));
  EXPECT_TRUE(formula.is_string());
  EXPECT_TRUE(formula.is_formula());
  EXPECT_EQ(formula.string(), "=SUM(A1:A3)");
  EXPECT_EQ(formula.ToJson(), json("=SUM(A1:A3)"));
  EXPECT_FALSE(CellValue::String("1=1").is_formula());
  EXPECT_FALSE(CellValue::String("").is_formula());
  EXPECT_FALSE(CellValue::Number(1).is_formula());
}

TEST(CellValueTest, RejectsObjectsAndArrays) {
  auto object = CellValue::FromJson(ParseJson(R"({"value": 1})"));
  ASSERT_FALSE(object.ok());
  EXPECT_EQ(object.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(object.status().message(),
            "expected a number, string, boolean or null, got object");
  auto array = CellValue::FromJson(ParseJson("[1]"));
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().message(),
            "expected a number, string, boolean or null, got array");
}

TEST(CellValueTest, IntegersAreExactUpTo2Pow53) {
  int64_t two53 = int64_t{1} << 53;
  EXPECT_EQ(CellValue::FromJson(json(two53))->number(), 9007199254740992.0);
  EXPECT_EQ(CellValue::FromJson(json(-two53))->number(), -9007199254740992.0);
  EXPECT_EQ(CellValue::FromJson(json(two53))->ToJson().dump(), "9007199254740992");
  // 2^53 + 1 has no double: refused rather than rounded.
  auto inexact = CellValue::FromJson(ParseJson("9007199254740993"));
  ASSERT_FALSE(inexact.ok());
  EXPECT_EQ(inexact.status().message(),
            "integer 9007199254740993 cannot be represented exactly as a number (limit "
            "2^53)");
  EXPECT_FALSE(CellValue::FromJson(ParseJson("18446744073709551615")).ok());
  EXPECT_FALSE(CellValue::FromJson(ParseJson("9223372036854775807")).ok());
  // Large powers of two are exact.
  EXPECT_OK(CellValue::FromJson(ParseJson("9223372036854775808")));
  EXPECT_OK(CellValue::FromJson(ParseJson("-9223372036854775808")));
}

TEST(CellValueTest, NumbersEncodeAsIntegersWhenIntegral) {
  EXPECT_EQ(CellValue::Number(100).ToJson().dump(), "100");
  EXPECT_EQ(CellValue::Number(-3).ToJson().dump(), "-3");
  EXPECT_EQ(CellValue::Number(0.01).ToJson().dump(), "0.01");
  EXPECT_EQ(CellValue::Number(1e300).ToJson().dump(), "1e+300");
  EXPECT_TRUE(CellValue::Number(1e300).ToJson().is_number_float());
  for (double v : {0.1, 1.0 / 3, -7.25, 1e-300, 123456789012.5}) {
    EXPECT_EQ(
        CellValue::FromJson(ParseJson(CellValue::Number(v).ToJson().dump()))->number(),
        v);
  }
}

TEST(CellTest, CellSpecIsAValueOrAnObject) {
  EXPECT_EQ(*Cell::FromJson(json(5)), (Cell{CellValue::Number(5), ""}));
  EXPECT_EQ(*Cell::FromJson(ParseJson(R"({"value": 0.08, "format": "0%"})")),
            (Cell{CellValue::Number(0.08), "0%"}));
  EXPECT_EQ(*Cell::FromJson(ParseJson(R"({"value": "x"})")),
            (Cell{CellValue::String("x"), ""}));
  EXPECT_EQ(Cell::FromJson(ParseJson(R"({"format": "0%"})")).status().message(),
            "missing field 'value' in a cell");
  EXPECT_EQ(Cell::FromJson(ParseJson(R"({"value": 1, "fmt": "0%"})")).status().message(),
            "unknown field 'fmt' in a cell");
  EXPECT_EQ(Cell::FromJson(ParseJson(R"({"value": 1, "format": 2})")).status().message(),
            "field 'format' must be a string, got number");
  EXPECT_EQ(Cell::FromJson(ParseJson(R"({"value": [1]})")).status().message(),
            "field 'value': expected a number, string, boolean or null, got array");
  EXPECT_FALSE(Cell::FromJson(ParseJson("[1, 2]")).ok());
}

TEST(CellTest, EmptyMeansNullWithoutFormat) {
  EXPECT_TRUE(Cell{}.empty());
  EXPECT_FALSE((Cell{CellValue(), "0.00"}).empty());
  EXPECT_FALSE((Cell{CellValue::String(""), ""}).empty());
  EXPECT_FALSE((Cell{CellValue::Number(0), ""}).empty());
}

TEST(CellTest, ToJsonIsCanonicalAndRoundTrips) {
  Cell plain{CellValue::Number(80), ""};
  Cell formatted{CellValue::Number(0.15), "0%"};
  EXPECT_EQ(plain.ToJson(), json(80));
  EXPECT_EQ(formatted.ToJson(), ParseJson(R"({"value": 0.15, "format": "0%"})"));
  EXPECT_EQ(*Cell::FromJson(plain.ToJson()), plain);
  EXPECT_EQ(*Cell::FromJson(formatted.ToJson()), formatted);
  EXPECT_EQ(formatted.DebugString(), "0.15 [0%]");
}

TEST(CellTest, FormulaCarriesItsCachedResult) {
  Cell formula{CellValue::String("=B2*2"), "0.0", CellValue::Number(843756)};
  const json spec = ParseJson(R"({"value": "=B2*2", "format": "0.0", "cached": 843756})");
  EXPECT_EQ(formula.ToJson(), spec);
  EXPECT_EQ(*Cell::FromJson(spec), formula);
  Cell unformatted{CellValue::String("=A1"), "", CellValue::String("text")};
  EXPECT_EQ(unformatted.ToJson(), ParseJson(R"({"value": "=A1", "cached": "text"})"));
  EXPECT_EQ(*Cell::FromJson(unformatted.ToJson()), unformatted);
  // "cached": null is no cached result.
  EXPECT_EQ(*Cell::FromJson(ParseJson(R"({"value": "=A1", "cached": null})")),
            (Cell{CellValue::String("=A1"), ""}));
  // Only a formula has a result; a cached value must be a value.
  auto not_formula = Cell::FromJson(ParseJson(R"({"value": 3, "cached": 3})"));
  EXPECT_EQ(not_formula.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(not_formula.status().message().find("cached"), std::string::npos);
  EXPECT_FALSE(Cell::FromJson(ParseJson(R"({"value": "=A1", "cached": [1]})")).ok());
}

}  // namespace
}  // namespace sheetlog
