// The shared S3-compatible test server (scripts/s3rver; ctest's s3rver fixture starts it
// before the S3* cases and stops it after them). Each caller gets a bucket of its own,
// so cases running in parallel never see each other's objects.
#pragma once

#include <string>

#include "emulator/blob/s3_client.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {

// "http://127.0.0.1:PORT" of the running server, read from DIR/endpoint.json, DIR being
// $SHEETLOG_TEST_S3_DIR or else <build>/s3rver (where ctest's fixture starts it). Fails
// the test (and returns "") when no server is running there.
std::string S3TestEndpoint();

// True if DIR/endpoint.json (as above) names a server: for cases that skip, rather
// than fail, when run without ctest's fixture. Records no failure.
bool S3TestServerRunning();

// A location on the test server (credentials S3RVER/S3RVER) with a new, empty bucket
// named after `purpose` and a random suffix. Fails the test if it cannot be created.
S3Location NewS3TestBucket(const std::string& purpose);

// The `--blobs` value for the real binary (with AWS_* set by the caller's environment:
// S3TestEnvironment()).
std::string S3BlobsFlag(const S3Location& location);

// A test S3 server of a case's own (scripts/s3rver), for cases that make the store
// unreachable or slow: the shared one must stay up for the others. Stopped and its
// data removed when destroyed.
class PrivateS3Server {
 public:
  PrivateS3Server();  // fails the test if it cannot start
  ~PrivateS3Server();
  PrivateS3Server(const PrivateS3Server&) = delete;
  PrivateS3Server& operator=(const PrivateS3Server&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  // A location on it with a new bucket (as NewS3TestBucket), with short request bounds
  // (1 s to connect, 2 s per request) so failures come quickly.
  S3Location NewBucket(const std::string& purpose);

  void Stop();     // the process ends; its data stays
  void Restart();  // on the same port, with the same data
  void Pause();    // SIGSTOP: connections are accepted by the kernel, never answered
  void Resume();   // SIGCONT

 private:
  TempDir dir_;
  std::string endpoint_;
};

}  // namespace sheetlog::testing
