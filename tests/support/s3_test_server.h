// The shared S3-compatible test server (scripts/s3rver; ctest's s3rver fixture starts it
// before the S3* cases and stops it after them). Each caller gets a bucket of its own,
// so cases running in parallel never see each other's objects.
#pragma once

#include <string>

#include "emulator/blob/s3_client.h"

namespace sheetlog::testing {

// "http://127.0.0.1:PORT" of the running server, read from
// $SHEETLOG_TEST_S3_DIR/endpoint.json. Fails the test (and returns "") when the
// variable is not set: run S3* cases through ctest, or start one with
// `scripts/s3rver start DIR` and set SHEETLOG_TEST_S3_DIR=DIR.
std::string S3TestEndpoint();

// A location on the test server (credentials S3RVER/S3RVER) with a new, empty bucket
// named after `purpose` and a random suffix. Fails the test if it cannot be created.
S3Location NewS3TestBucket(const std::string& purpose);

// The `--blobs` value for the real binary (with AWS_* set by the caller's environment:
// S3TestEnvironment()).
std::string S3BlobsFlag(const S3Location& location);

}  // namespace sheetlog::testing
