#include "tests/support/s3_test_server.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "emulator/env/uuid.h"

namespace sheetlog::testing {

namespace {

// ctest's s3rver fixture runs it in <build>/s3rver (CMakeLists.txt); the variable
// points elsewhere (a server started by hand with scripts/s3rver start DIR).
std::string S3ServerDir() {
  const char* from_env = std::getenv("SHEETLOG_TEST_S3_DIR");
  return from_env != nullptr && *from_env != '\0' ? from_env : SHEETLOG_TEST_S3_DIR;
}

// DIR/endpoint.json parsed; not an object with "endpoint" if there is none.
nlohmann::json ReadEndpointFile(const std::string& dir) {
  std::ifstream in(dir + "/endpoint.json");
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

bool NamesEndpoint(const nlohmann::json& parsed) {
  return parsed.is_object() && parsed.contains("endpoint") &&
         parsed["endpoint"].is_string();
}

}  // namespace

bool S3TestServerRunning() { return NamesEndpoint(ReadEndpointFile(S3ServerDir())); }

std::string S3TestEndpoint() {
  const std::string dir = S3ServerDir();
  const nlohmann::json parsed = ReadEndpointFile(dir);
  if (!NamesEndpoint(parsed)) {
    ADD_FAILURE() << "no " << dir
                  << "/endpoint.json: the test S3 server is not running (run S3* cases "
                     "through ctest, whose s3rver fixture starts it, or `scripts/s3rver "
                     "start DIR` and SHEETLOG_TEST_S3_DIR=DIR)";
    return "";
  }
  return parsed["endpoint"].get<std::string>();
}

namespace {

S3Location NewBucketAt(const std::string& endpoint, const std::string& purpose) {
  S3Location location;
  location.endpoint = endpoint;
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

std::string Script() { return std::string(SHEETLOG_SOURCE_DIR) + "/scripts/s3rver"; }

}  // namespace

S3Location NewS3TestBucket(const std::string& purpose) {
  return NewBucketAt(S3TestEndpoint(), purpose);
}

std::string S3BlobsFlag(const S3Location& location) {
  return "s3://" + location.bucket + "?endpoint=" + location.endpoint +
         "&region=" + location.region;
}

PrivateS3Server::PrivateS3Server() {
  const std::string server = dir_.File("s3rver");
  if (std::system((Script() + " start " + server + " >/dev/null").c_str()) != 0) {
    ADD_FAILURE() << "scripts/s3rver start " << server << " failed";
    return;
  }
  std::ifstream in(server + "/endpoint.json");
  nlohmann::json parsed = nlohmann::json::parse(in, nullptr, false);
  if (parsed.is_object() && parsed.contains("endpoint")) {
    endpoint_ = parsed["endpoint"].get<std::string>();
  }
  EXPECT_FALSE(endpoint_.empty()) << "no endpoint.json in " << server;
}

PrivateS3Server::~PrivateS3Server() {
  Resume();
  (void)std::system((Script() + " stop " + dir_.File("s3rver")).c_str());
}

S3Location PrivateS3Server::NewBucket(const std::string& purpose) {
  S3Location location = NewBucketAt(endpoint_, purpose);
  location.connect_timeout_ms = 1000;
  location.request_timeout_ms = 2000;
  location.stall_timeout_ms = 2000;
  return location;
}

void PrivateS3Server::Stop() {
  Resume();
  EXPECT_EQ(std::system((Script() + " stop " + dir_.File("s3rver") + " --keep").c_str()),
            0);
}

void PrivateS3Server::Restart() {
  EXPECT_EQ(
      std::system((Script() + " restart " + dir_.File("s3rver") + " >/dev/null").c_str()),
      0);
}

namespace {
void Signal(const std::string& pid_file, int signal) {
  std::ifstream in(pid_file);
  long pid = 0;
  if (in >> pid && pid > 0) ::kill(static_cast<pid_t>(pid), signal);
}
}  // namespace

void PrivateS3Server::Pause() { Signal(dir_.File("s3rver/pid"), SIGSTOP); }
void PrivateS3Server::Resume() { Signal(dir_.File("s3rver/pid"), SIGCONT); }

}  // namespace sheetlog::testing
