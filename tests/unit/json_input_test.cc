// The strict request-JSON parser and UTF-8 checks of src/api/json_input.h.
#include "src/api/json_input.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/json_text.h"
#include "tests/support/status_matchers.h"

namespace sheetlog::api {
namespace {

using json = nlohmann::json;

std::string Nested(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(ParseJsonStrict, AcceptsOrdinaryBodies) {
  Result<json> parsed = ParseJsonStrict(
      R"({"type":"SetCell","body":{"ref":"C2","value":1.5e3,"format":"0.00"}})");
  ASSERT_OK(parsed);
  EXPECT_EQ((*parsed)["body"]["value"], 1500.0);
  EXPECT_EQ((*parsed)["type"], "SetCell");
}

TEST(ParseJsonStrict, AcceptsNonAsciiUtf8AndSurrogatePairEscapes) {
  Result<json> parsed = ParseJsonStrict("{\"k\u00e9\":\"\u20ac \\ud83d\\ude00\"}");
  ASSERT_OK(parsed);
  EXPECT_EQ((*parsed)["k\u00e9"], "\u20ac \U0001F600");
}

TEST(ParseJsonStrict, DepthUpToTheLimitIsAccepted) {
  EXPECT_OK(ParseJsonStrict(Nested(kMaxJsonDepth)));
  EXPECT_OK(ParseJsonStrict(Nested(3), 3));
}

TEST(ParseJsonStrict, DeeperThanTheLimitIsRefusedNamingTheLimit) {
  Result<json> parsed = ParseJsonStrict(Nested(kMaxJsonDepth + 1));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("deeper than 64 levels"), std::string::npos)
      << parsed.status().message();
  EXPECT_FALSE(ParseJsonStrict(Nested(4), 3).ok());
}

TEST(ParseJsonStrict, HundredThousandLevelsAreRefusedWithoutRecursion) {
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  EXPECT_EQ(ParseJsonStrict(objects).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseJsonStrict(Nested(100000)).status().code(),
            StatusCode::kInvalidArgument);
  // Unbalanced: only openers.
  EXPECT_EQ(ParseJsonStrict(std::string(100000, '[')).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ParseJsonStrict, BracketsInsideStringsDoNotCount) {
  std::string text =
      "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  Result<json> parsed = ParseJsonStrict(text);
  ASSERT_OK(parsed);
  EXPECT_EQ((*parsed)[0].get<std::string>().size(), 2001u);
}

TEST(ParseJsonStrict, NumbersBeyondADoubleAreInvalidArgument) {
  for (const std::string& text : std::vector<std::string>{
           "1e400", "-1e400", "[1E999]", "{\"v\":" + std::string(400, '9') + "}"}) {
    Result<json> parsed = ParseJsonStrict(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(parsed.status().message().find("out of range"), std::string::npos)
        << parsed.status().message();
  }
  // Large but finite numbers are numbers.
  Result<json> big = ParseJsonStrict(std::string(300, '9'));
  ASSERT_OK(big);
  EXPECT_TRUE(big->is_number_float());
}

TEST(ParseJsonStrict, InvalidUtf8AnywhereIsInvalidArgumentWithAUtf8Message) {
  for (const std::string& text :
       {std::string("{\"a\":\"\xFF\"}"), std::string("{\"\xC3\x28\":1}"),
        std::string("\xFE\xFF"), std::string("{\"a\":\"\xED\xA0\x80\"}"),  // surrogate
        std::string("\"\xC0\xAF\""),                                       // overlong
        std::string("[1] \xFF")}) {
    Result<json> parsed = ParseJsonStrict(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(IsValidUtf8(parsed.status().message())) << parsed.status().message();
    EXPECT_NO_THROW(json(parsed.status().message()).dump());
  }
  // An escaped lone surrogate decodes to no character at all.
  EXPECT_FALSE(ParseJsonStrict(R"(["\ud800"])").ok());
  EXPECT_FALSE(ParseJsonStrict(R"(["\udc00x"])").ok());
}

TEST(ParseJsonStrict, SyntaxErrorsAndTrailingTextAreInvalidArgument) {
  for (const std::string& text :
       std::vector<std::string>{"", "{", "{\"a\":}", "[1,]", "{} {}", "nul", "'a'"}) {
    Result<json> parsed = ParseJsonStrict(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message().rfind("malformed JSON: ", 0), 0u);
    EXPECT_EQ(parsed.status().message().find("[json.exception"), std::string::npos);
  }
}

TEST(Utf8, ValidityFollowsRfc3629) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));   // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xBF\xBF"));      // U+DFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\x80"));
}

TEST(Utf8, CheckUtf8NamesTheInputAndTheByte) {
  EXPECT_OK(CheckUtf8("sheet", "path"));
  Status bad = CheckUtf8("ab\xFF", "query parameter 'prefix'");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "query parameter 'prefix' is not valid UTF-8 (byte 2)");
}

TEST(Utf8, EscapeInvalidUtf8KeepsValidTextAndEscapesTheRest) {
  EXPECT_EQ(EscapeInvalidUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(EscapeInvalidUtf8("a\xFF\xFE"
                              "b\xE2\x82"),
            "a\\xFF\\xFEb\\xE2\\x82");
}

TEST(JsonDepth, CountsWithoutRecursion) {
  EXPECT_EQ(JsonDepth(json(1)), 0);
  EXPECT_EQ(JsonDepth(ParseJson("[[1],{\"a\":[[]]}]")), 4);
  // Built by hand, deeper than any stack would allow a recursive walk under ASan.
  json deep = json::array();
  json* inner = &deep;
  for (int i = 0; i < 100000; ++i) {
    inner->push_back(json::array());
    inner = &inner->back();
  }
  EXPECT_EQ(JsonDepth(deep), 100001);
}

TEST(DumpJsonSafely, ReplacesInvalidBytesInsteadOfThrowing) {
  json value{{"message", std::string("no sheet '\xFF\xFE'")}};
  EXPECT_THROW(value.dump(), json::type_error);
  std::string text = DumpJsonSafely(value);
  EXPECT_TRUE(IsValidUtf8(text));
  EXPECT_OK(ParseJsonStrict(text));
}

}  // namespace
}  // namespace sheetlog::api
