// Hostile request text against the real binary: bodies nested
// far too deep, bytes that are not UTF-8 in every place a request carries text, and
// numbers beyond a double. Each answers a 400 in api.md's error shape, writes nothing,
// and leaves the server serving.
#include <gtest/gtest.h>

#include <string>

#include "emulator/json_text.h"
#include "tests/support/api_client.h"
#include "tests/support/server_process.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class HostileInputHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(ServerOptions::InMemory());
    ASSERT_TRUE(server_->Start()) << server_->error();
    httplib::Client client = server_->Client();
    sheet_ = CreateSheet(client);
  }

  // The response is a 400 ValidationError whose body is api.md's error shape, and the
  // server still answers.
  void ExpectValidationError(const JsonResponse& r, const std::string& message_part) {
    EXPECT_EQ(r.status, 400) << r.raw;
    ASSERT_TRUE(r.body.is_object()) << "not JSON: " << r.raw;
    EXPECT_EQ(r.body["error"]["code"], "ValidationError") << r.raw;
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find(message_part),
              std::string::npos)
        << r.raw;
    httplib::Client client = server_->Client();
    EXPECT_EQ(Get(client, "/healthz").status, 200);
  }

  int64_t NextSeq() {
    httplib::Client client = server_->Client();
    JsonResponse r = Get(client, "/v1/sheets/" + sheet_);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body.value("next_seq", int64_t{-1});
  }

  std::string Entries() { return "/v1/sheets/" + sheet_ + "/entries"; }

  std::unique_ptr<ServerProcess> server_;
  std::string sheet_;
};

TEST_F(HostileInputHttpTest, BodiesNestedHundredThousandDeepAre400NotACrash) {
  httplib::Client client = server_->Client();
  const int depth = 100000;
  const std::string arrays = std::string(depth, '[') + std::string(depth, ']');
  ExpectValidationError(
      Request(client, "POST", Entries(), R"({"type":"Deep","body":)" + arrays + "}"),
      "deeper than 64 levels");
  std::string objects;
  for (int i = 0; i < depth; ++i) objects += R"({"a":)";
  objects += "1" + std::string(depth, '}');
  ExpectValidationError(
      Request(client, "POST", Entries(), R"({"type":"Deep","body":)" + objects + "}"),
      "deeper than 64 levels");
  // The same through the other routes that read JSON.
  ExpectValidationError(Request(client, "POST", "/v1/sheets", arrays),
                        "deeper than 64 levels");
  ExpectValidationError(Request(client, "POST", "/v1/sheets/" + sheet_ + "/uploads",
                                R"({"type":"Deep","body":)" + arrays + "}"),
                        "deeper than 64 levels");
  EXPECT_EQ(NextSeq(), 1);  // nothing written
  EXPECT_TRUE(server_->running());
}

TEST_F(HostileInputHttpTest, ModeratelyNestedBodiesAreStoredAndReadBack) {
  httplib::Client client = server_->Client();
  // 60 levels inside the request's own two: within the limit of 64.
  const std::string nested = std::string(60, '[') + "7" + std::string(60, ']');
  JsonResponse appended =
      Request(client, "POST", Entries(), R"({"type":"Nested","body":)" + nested + "}");
  ASSERT_EQ(appended.status, 201) << appended.raw;
  JsonResponse read = Get(client, Entries() + "/1");
  ASSERT_EQ(read.status, 200) << read.raw;
  EXPECT_EQ(read.body["body"], ParseJson(nested));
}

TEST_F(HostileInputHttpTest, InvalidUtf8IsA400WithAReadableErrorEverywhere) {
  httplib::Client client = server_->Client();
  // In a JSON string, in a key, and a bare body.
  ExpectValidationError(
      Request(client, "POST", Entries(), "{\"type\":\"Note\",\"body\":\"caf\xFF\xFE\"}"),
      "not valid UTF-8");
  ExpectValidationError(
      Request(client, "POST", Entries(), "{\"type\":\"Note\",\"body\":{\"\xC3\x28\":1}}"),
      "not valid UTF-8");
  ExpectValidationError(Request(client, "POST", Entries(), "\xFF\xFE\xFD"),
                        "not valid UTF-8");
  ExpectValidationError(
      Request(client, "POST", "/v1/sheets", "{\"name\":\"\xED\xA0\x80\"}"),
      "not valid UTF-8");
  // An escaped lone surrogate is no character either.
  ExpectValidationError(
      Request(client, "POST", Entries(), R"({"type":"Note","body":"\ud800"})"),
      "malformed JSON");
  // A path capture and query values.
  ExpectValidationError(Get(client, "/v1/sheets/%FF%FE"), "not valid UTF-8");
  ExpectValidationError(Get(client, "/v1/blobs?prefix=%FF"), "not valid UTF-8");
  ExpectValidationError(Get(client, Entries() + "?from=%C0%AF"), "not valid UTF-8");
  // reprocess's since.
  ExpectValidationError(
      Request(client, "POST", "/v1/admin/reprocess", "{\"since\":\"2026\xFF\"}"),
      "not valid UTF-8");
  EXPECT_EQ(NextSeq(), 1);
}

TEST_F(HostileInputHttpTest, NumbersBeyondADoubleAre400) {
  httplib::Client client = server_->Client();
  ExpectValidationError(
      Request(client, "POST", Entries(),
              R"({"type":"SetCell","body":{"ref":"A1","value":1e400}})"),
      "out of range");
  ExpectValidationError(
      Request(client, "POST", Entries(),
              R"({"type":"Note","body":)" + std::string(400, '9') + "}"),
      "out of range");
  ExpectValidationError(
      Request(client, "POST", "/v1/sheets", R"({"snapshot_every":-1e999})"),
      "out of range");
  EXPECT_EQ(NextSeq(), 1);
  // A large finite number is an ordinary number.
  JsonResponse ok = Request(client, "POST", Entries(),
                            R"({"type":"SetCell","body":{"ref":"A1","value":1e300}})");
  EXPECT_EQ(ok.status, 201) << ok.raw;
}

}  // namespace
}  // namespace sheetlog::testing
