// Fuzzes the entry-body codecs (src/sheet/sheet_edit.h) the way POST .../entries reaches
// them: a request document parsed as JSON, its body checked by ValidateAppend for its own
// type and for every built-in type. Whatever the input: no crash, OK or InvalidArgument
// with a short message, and an accepted body re-encodes (EncodeEditBody) to a body that
// parses back to the same edit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "emulator/json_text.h"
#include "src/sheet/sheet_edit.h"
#include "tests/support/fuzz_inputs.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

constexpr const char* kBuiltinTypes[] = {
    "SetCell",       "SetCells",      "InsertRows", "DeleteRows",
    "InsertColumns", "DeleteColumns", "Import",     "SetCellValueAndFormat"};

// An error message quotes the field and the offending text. Today it quotes an unknown
// field's name whole (sheet_edit.cc, cell.cc), so the bound is the input's size plus a
// sentence: an error must never amplify what the client sent.
constexpr size_t kMaxBodyMessageOverhead = 1024;

FuzzDictionary JsonDictionary() {
  FuzzDictionary d;
  d.tokens = {"{",
              "}",
              "[",
              "]",
              ",",
              ":",
              "\"",
              "null",
              "true",
              "false",
              "\"ref\":",
              "\"value\":",
              "\"format\":",
              "\"cells\":",
              "\"rows\":",
              "\"at\":",
              "\"after\":",
              "\"count\":",
              "\"values\":",
              "\"mode\":",
              "\"row\":",
              "\"column\":",
              "\"cached\":",
              "\"A1\"",
              "\"XFD1048576\"",
              "\"FXSHRXW2147483647\"",
              "\"FXSHRXX1\"",
              "\"A0\"",
              "\"=SUM(A1:B2)\"",
              "-1",
              "0",
              "2147483647",
              "9007199254740992",
              "1e308",
              "\"\\u0000\"",
              "\"\\ud800\"",
              "\"replace\"",
              "\"merge\"",
              "\"xlsx\""};
  d.nest_open = "[";
  d.nest_close = "]";
  return d;
}

void CheckBody(std::string_view type, const json& body, size_t input_bytes) {
  const Status status = ValidateAppend(type, kBuiltinEditVersion, body);
  if (!status.ok()) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument)
        << type << ": " << status.ToString();
    EXPECT_FALSE(status.message().empty());
    EXPECT_LE(status.message().size(), input_bytes + kMaxBodyMessageOverhead)
        << status.message().substr(0, 300);
    return;
  }
  Result<SheetEdit> edit = ParseEdit(type, kBuiltinEditVersion, body);
  ASSERT_TRUE(edit.ok()) << type
                         << " validated but does not parse: " << edit.status().ToString();
  const json canonical = EncodeEditBody(*edit);
  Result<SheetEdit> again = ParseEdit(type, kBuiltinEditVersion, canonical);
  ASSERT_TRUE(again.ok()) << type << " canonical body " << canonical.dump()
                          << " does not parse: " << again.status().ToString();
  EXPECT_TRUE(*again == *edit) << type << ": " << canonical.dump()
                               << " parses to another edit";
}

void CheckRequest(const std::string& bytes) {
  const json document = ParseJsonOrDiscarded(bytes);
  if (document.is_discarded()) return;  // the API answers 400 for it
  const json* body = &document;
  if (document.is_object()) {
    auto found = document.find("body");
    if (found != document.end()) body = &*found;
    auto type = document.find("type");
    if (type != document.end() && type->is_string()) {
      ASSERT_NO_FATAL_FAILURE(CheckBody(type->get<std::string>(), *body, bytes.size()));
    }
  }
  for (const char* type : kBuiltinTypes) {
    ASSERT_NO_FATAL_FAILURE(CheckBody(type, *body, bytes.size()));
  }
}

TEST(EntryBodyFuzzTest, CorpusAndMutants) {
  const int64_t ran = FuzzCorpus("entry_body", FuzzMutations(400), 0xE17B0D1,
                                 JsonDictionary(), CheckRequest);
  EXPECT_GT(ran, 400);
}

}  // namespace
}  // namespace sheetlog::testing
