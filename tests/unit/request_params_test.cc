// The typed readers of query parameters and path captures (src/api/request_params.h):
// each gives the value, or the api.md error (status, code, a message naming the
// parameter) a client gets for it.
#include "src/api/request_params.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sheetlog::api {
namespace {

// A request with the given query parameters (and path captures), and its call.
class ParamsTest : public ::testing::Test {
 protected:
  Call& CallWith(std::vector<std::pair<std::string, std::string>> params,
                 std::vector<std::string> matches = {}) {
    request_.params.clear();
    for (auto& [name, value] : params) request_.params.emplace(name, value);
    request_.matches = std::move(matches);
    call_.emplace(request_, response_);
    return *call_;
  }

  http::Request request_;
  http::Response response_;
  std::optional<Call> call_;
};

// Runs `read` and returns the ApiError it throws (failing the test if it throws none).
template <typename Read>
ApiError ErrorOf(Read read) {
  try {
    read();
  } catch (const ApiError& error) {
    return error;
  }
  ADD_FAILURE() << "no ApiError was thrown";
  return ApiError(0, "", "");
}

TEST_F(ParamsTest, QueryIntGivesTheFallbackWhenAbsentAndTheValueWithinTheBounds) {
  EXPECT_EQ(QueryInt(CallWith({}), "n", 1, 10, 7), 7);
  EXPECT_EQ(QueryInt(CallWith({{"n", "1"}}), "n", 1, 10, 7), 1);
  EXPECT_EQ(QueryInt(CallWith({{"n", "10"}}), "n", 1, 10, 7), 10);
  EXPECT_EQ(QueryInt(CallWith({{"n", "-3"}}), "n", -5, 10, 7), -3);
  // Another parameter is not this one.
  EXPECT_EQ(QueryInt(CallWith({{"m", "3"}}), "n", 1, 10, 7), 7);
}

TEST_F(ParamsTest, QueryIntOutsideItsBoundsIsAValidationErrorNamingTheRange) {
  for (const char* text : {"0", "11", "-1", "9223372036854775807"}) {
    Call& call = CallWith({{"n", text}});
    ApiError error = ErrorOf([&] { QueryInt(call, "n", 1, 10, 7); });
    EXPECT_EQ(error.http_status(), 400) << text;
    EXPECT_EQ(error.code(), "ValidationError") << text;
    EXPECT_EQ(std::string(error.what()),
              std::string("query parameter 'n' must be an integer in 1..10, got '") +
                  text + "'");
  }
}

TEST_F(ParamsTest, QueryIntRefusesWhatIsNotADecimalInteger) {
  for (const char* text : {"", "abc", "5x", " 5", "5 ", "+5", "1.5", "1e3", "0x10",
                           "99999999999999999999"}) {
    Call& call = CallWith({{"n", text}});
    ApiError error = ErrorOf([&] { QueryInt(call, "n", 0, 1000000, 7); });
    EXPECT_EQ(error.http_status(), 400) << "'" << text << "'";
    EXPECT_EQ(error.code(), "ValidationError") << "'" << text << "'";
  }
}

TEST_F(ParamsTest, AValueThatIsNotUtf8IsAValidationError) {
  Call& call = CallWith({{"n", "\xFF\xFE"}});
  ApiError error = ErrorOf([&] { QueryInt(call, "n", 0, 10, 7); });
  EXPECT_EQ(error.code(), "ValidationError");
  EXPECT_NE(std::string(error.what()).find("'n'"), std::string::npos) << error.what();
}

TEST_F(ParamsTest, QueryLimitReadsLimitWithinOneToMax) {
  EXPECT_EQ(QueryLimit(CallWith({}), 100, 1000), 100);
  EXPECT_EQ(QueryLimit(CallWith({{"limit", "1000"}}), 100, 1000), 1000);
  EXPECT_EQ(QueryLimit(CallWith({{"limit", "1"}}), 100, 1000), 1);
  Call& zero = CallWith({{"limit", "0"}});
  EXPECT_EQ(ErrorOf([&] { QueryLimit(zero, 100, 1000); }).code(), "ValidationError");
  Call& over = CallWith({{"limit", "1001"}});
  ApiError error = ErrorOf([&] { QueryLimit(over, 100, 1000); });
  EXPECT_EQ(error.code(), "ValidationError");
  EXPECT_EQ(std::string(error.what()),
            "query parameter 'limit' must be an integer in 1..1000, got '1001'");
}

TEST_F(ParamsTest, QuerySeqIsANonNegativeIntegerBelowTwoToThe53) {
  EXPECT_EQ(QuerySeq(CallWith({}), "at"), std::nullopt);
  EXPECT_EQ(QuerySeq(CallWith({{"at", "0"}}), "at"), 0);
  EXPECT_EQ(QuerySeq(CallWith({{"at", "9007199254740991"}}), "at"), kMaxSeq);
  // Out of range is a RangeError, not an integer a ValidationError: both 400.
  for (const char* text : {"-1", "9007199254740992"}) {
    Call& call = CallWith({{"at", text}});
    ApiError error = ErrorOf([&] { QuerySeq(call, "at"); });
    EXPECT_EQ(error.http_status(), 400) << text;
    EXPECT_EQ(error.code(), "RangeError") << text;
  }
  Call& word = CallWith({{"at", "latest"}});
  ApiError error = ErrorOf([&] { QuerySeq(word, "at"); });
  EXPECT_EQ(error.code(), "ValidationError");
  EXPECT_EQ(std::string(error.what()),
            "query parameter 'at' must be an integer, got 'latest'");
}

TEST_F(ParamsTest, QueryTimeTakesUnixSecondsOrIsoUtc) {
  EXPECT_EQ(QueryTime(CallWith({}), "since", 42), 42);
  EXPECT_EQ(QueryTime(CallWith({{"since", "1767225600"}}), "since", 0), 1767225600);
  EXPECT_EQ(QueryTime(CallWith({{"since", "2026-01-01T00:00:00Z"}}), "since", 0),
            1767225600);
  Call& call = CallWith({{"since", "yesterday"}});
  ApiError error = ErrorOf([&] { QueryTime(call, "since", 0); });
  EXPECT_EQ(error.code(), "ValidationError");
  EXPECT_NE(std::string(error.what()).find("'since'"), std::string::npos);
}

TEST_F(ParamsTest, SheetIdIsTheFirstCaptureWhenItIsAUuid) {
  const std::string id = "0b9a6a4e-3c1f-4d2a-9e55-2f7c1d8b6a01";
  EXPECT_EQ(SheetId(CallWith({}, {"/v1/sheets/" + id, id})), id);
  Call& call = CallWith({}, {"/v1/sheets/nope", "nope"});
  ApiError error = ErrorOf([&] { SheetId(call); });
  EXPECT_EQ(error.http_status(), 404);
  EXPECT_EQ(error.code(), "NotFound");
}

}  // namespace
}  // namespace sheetlog::api
