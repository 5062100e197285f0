// SigV4 query signing against the worked example AWS publishes for S3 presigned URLs
// ("Authenticating Requests: Using Query Parameters", Amazon S3 API Reference): the
// canonical request, the string to sign and the signature must match it byte for byte.
#include "emulator/blob/sigv4.h"

#include <gtest/gtest.h>

namespace sheetlog {
namespace {

SigV4Credentials AwsExampleCredentials() {
  return {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
}

TEST(SigV4Test, PresignedGetMatchesAwsWorkedExample) {
  SigV4PresignRequest request;
  request.method = "GET";
  request.scheme = "https";
  request.host = "examplebucket.s3.amazonaws.com";
  request.encoded_path = "/test.txt";
  request.region = "us-east-1";
  request.now_unix_s = 1369353600;  // 20130524T000000Z
  request.expires_seconds = 86400;
  SigV4Presigned signed_url = SigV4Presign(request, AwsExampleCredentials());

  EXPECT_EQ(signed_url.canonical_request,
            "GET\n/test.txt\n"
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F"
            "20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&"
            "X-Amz-Expires=86400&X-Amz-SignedHeaders=host\n"
            "host:examplebucket.s3.amazonaws.com\n\nhost\nUNSIGNED-PAYLOAD");
  EXPECT_EQ(signed_url.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "3bfa292879f6447bbcda7001decf97f4a54dc650c8942174ae0a9121cf58ad04");
  EXPECT_EQ(signed_url.signature,
            "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
  EXPECT_EQ(signed_url.url,
            "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-"
            "SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2F"
            "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
            "SignedHeaders=host&X-Amz-Signature="
            "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

TEST(SigV4Test, ExtraParametersAreEncodedAndSortedIntoTheSignature) {
  SigV4PresignRequest request;
  request.method = "PUT";
  request.host = "127.0.0.1:9000";
  request.encoded_path = "/bucket/uploads/a%20b";
  request.query = {{"x-amz-tagging", "auto-delete=true"}};
  request.now_unix_s = 1369353600;
  SigV4Presigned with_tag = SigV4Presign(request, AwsExampleCredentials());
  // Upper-case X-Amz-* sort before lower-case x-amz-*, as byte order wants.
  EXPECT_NE(with_tag.canonical_request.find(
                "X-Amz-SignedHeaders=host&x-amz-tagging=auto-delete%3Dtrue\n"),
            std::string::npos)
      << with_tag.canonical_request;
  request.query.clear();
  EXPECT_NE(SigV4Presign(request, AwsExampleCredentials()).signature, with_tag.signature);
}

TEST(SigV4Test, UriEncodingFollowsS3Rules) {
  EXPECT_EQ(SigV4UriEncode("a b/c~d_e.f-g+h=", true), "a%20b/c~d_e.f-g%2Bh%3D");
  EXPECT_EQ(SigV4UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(SigV4UriEncode("\xc3\xa9", true), "%C3%A9");
  EXPECT_EQ(SigV4Timestamp(0), "19700101T000000Z");
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace sheetlog
