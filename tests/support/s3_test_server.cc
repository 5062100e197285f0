#include "tests/support/s3_test_server.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "emulator/env/uuid.h"

namespace sheetlog::testing {

std::string S3TestEndpoint() {
  const char* dir = std::getenv("SHEETLOG_TEST_S3_DIR");
  if (dir == nullptr || *dir == '\0') {
    ADD_FAILURE() << "SHEETLOG_TEST_S3_DIR is not set: run S3* cases through ctest (its "
                     "s3rver fixture starts the server), or `scripts/s3rver start DIR` "
                     "and SHEETLOG_TEST_S3_DIR=DIR";
    return "";
  }
  std::ifstream in(std::string(dir) + "/endpoint.json");
  nlohmann::json parsed = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("endpoint")) {
    ADD_FAILURE() << "no endpoint.json in " << dir << " (is the S3 test server running?)";
    return "";
  }
  return parsed["endpoint"].get<std::string>();
}

S3Location NewS3TestBucket(const std::string& purpose) {
  S3Location location;
  location.endpoint = S3TestEndpoint();
  location.credentials = {"S3RVER", "S3RVER", ""};
  std::string name = purpose.substr(0, 20);
  for (char& c : name) {
    c = std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '-';
  }
  location.bucket = name + "-" + NewRandomUuid().substr(0, 13);
  // Requests of a test that stops the server must fail fast.
  location.connect_timeout_ms = 2000;
  location.request_timeout_ms = 10000;
  location.stall_timeout_ms = 10000;
  if (location.endpoint.empty()) return location;
  S3Client client(location);
  Status created = client.CreateBucket();
  EXPECT_TRUE(created.ok()) << created.ToString();
  return location;
}

std::string S3BlobsFlag(const S3Location& location) {
  return "s3://" + location.bucket + "?endpoint=" + location.endpoint +
         "&region=" + location.region;
}

}  // namespace sheetlog::testing
