// Fuzzes the request-JSON parser and UTF-8 checks (src/api/json_input.h), the gate every
// request body passes. Whatever the bytes: no crash and no exception, OK or
// InvalidArgument with a short message that is itself UTF-8; an accepted document is at
// most kMaxJsonDepth deep, accepted by nlohmann's own parser as the same value, and
// survives dump -> parse unchanged. The two UTF-8 validators of the code base (api's and
// the CSV reader's) agree on every input, and EscapeInvalidUtf8 always yields UTF-8.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "emulator/json_text.h"
#include "src/api/json_input.h"
#include "src/sheet/csv.h"
#include "tests/support/fuzz_inputs.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

// A parse error quotes nlohmann's last token whole ("last read: '...'"), so the bound is
// the input's size plus a sentence: an error must never amplify what the client sent.
constexpr size_t kMaxJsonMessageOverhead = 1024;

void CheckUtf8Functions(const std::string& bytes) {
  const bool valid = api::IsValidUtf8(bytes);
  EXPECT_EQ(valid, sheetlog::IsValidUtf8(bytes))
      << "src/api/json_input and src/sheet/csv disagree on UTF-8";
  EXPECT_EQ(api::CheckUtf8(bytes, "the input").ok(), valid);
  const std::string escaped = api::EscapeInvalidUtf8(bytes);
  EXPECT_TRUE(api::IsValidUtf8(escaped));
  if (valid) {
    EXPECT_EQ(escaped, bytes);
  } else {
    EXPECT_LE(escaped.size(), bytes.size() * 4);
  }
}

void CheckJson(const std::string& bytes) {
  ASSERT_NO_FATAL_FAILURE(CheckUtf8Functions(bytes));
  Result<json> parsed = api::ParseJsonStrict(bytes);
  if (!parsed.ok()) {
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument)
        << parsed.status().ToString();
    EXPECT_TRUE(api::IsValidUtf8(parsed.status().message()));
    EXPECT_LE(parsed.status().message().size(), bytes.size() + kMaxJsonMessageOverhead)
        << parsed.status().message().substr(0, 300);
    return;
  }
  EXPECT_LE(api::JsonDepth(*parsed), api::kMaxJsonDepth);
  // What the strict parser accepts, nlohmann's accepts as the same value.
  const json lenient = ParseJsonOrDiscarded(bytes);
  ASSERT_FALSE(lenient.is_discarded()) << "strict accepted what nlohmann refuses";
  EXPECT_EQ(lenient, *parsed);
  const std::string dumped = api::DumpJsonSafely(*parsed);
  EXPECT_EQ(dumped, parsed->dump()) << "an accepted value needed replacing to dump";
  Result<json> again = api::ParseJsonStrict(dumped);
  ASSERT_TRUE(again.ok()) << dumped << ": " << again.status().ToString();
  EXPECT_EQ(*again, *parsed);
}

TEST(RequestJsonFuzzTest, CorpusAndMutants) {
  FuzzDictionary dictionary;
  dictionary.tokens = {"{",           "}",
                       "[",           "]",
                       ",",           ":",
                       "\"",          "null",
                       "true",        "false",
                       "\\u0000",     "\\ud800",
                       "\\udc00",     "\\ud83d\\ude00",
                       "\\uDFFF",     "\\\"",
                       "\\/",         "1e400",
                       "-0",          "0.0e-0",
                       "\"\":",       " \t\r\n",
                       "\xef\xbb\xbf"};
  const int64_t ran =
      FuzzCorpus("request_json", FuzzMutations(500), 0x15EB, dictionary, CheckJson);
  EXPECT_GT(ran, 500);
}

}  // namespace
}  // namespace sheetlog::testing
