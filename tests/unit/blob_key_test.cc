#include "emulator/blob/blob_key.h"

#include <gtest/gtest.h>

#include <string>

#include "emulator/blob/blob_store.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

void ExpectRejected(std::string_view key, std::string_view message_part) {
  Status status = BlobStore::ValidateKey(key);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument)
      << QuoteForMessage(key) << " -> " << status.ToString();
  EXPECT_NE(status.message().find(message_part), std::string::npos)
      << QuoteForMessage(key) << " -> " << status.ToString();
}

TEST(BlobKeyTest, AcceptsOrdinaryKeys) {
  for (const char* key :
       {"a", "a/b", "uploads/sheet-1/3f2c.bin", "snapshots/9b1e/chunk 0001",
        "dots.in.names/.hidden/...", "symbols/!#$%&'()*+,-;<=>?@[]^_`{|}~\"",
        "utf8/donn\xC3\xA9"
        "es/\xE6\x97\xA5\xE6\x9C\xAC/\xF0\x9F\x98\x80"}) {
    EXPECT_OK(BlobStore::ValidateKey(key)) << key;
  }
  EXPECT_OK(BlobStore::ValidateKey(std::string(255, 'x')));
  std::string part(255, 'k');
  std::string longest = part + "/" + part + "/" + part + "/" + part.substr(1) + "/x";
  ASSERT_EQ(longest.size(), kMaxBlobKeyBytes);
  EXPECT_OK(BlobStore::ValidateKey(longest));
}

TEST(BlobKeyTest, RejectsPathTricksAndBadBytes) {
  ExpectRejected("", "empty key");
  ExpectRejected("..", "\"..\" is not allowed");
  ExpectRejected("a/../b", "\"..\" is not allowed");
  ExpectRejected("a/..", "\"..\" is not allowed");
  ExpectRejected("./a", "\".\" is not allowed");
  ExpectRejected("a/./b", "\".\" is not allowed");
  ExpectRejected("/abs", "absolute");
  ExpectRejected("/", "absolute");
  ExpectRejected("a/", "must not end with '/'");
  ExpectRejected("a//b", "empty part");
  ExpectRejected(std::string_view("a\0b", 3), "NUL");
  ExpectRejected("a\\b", "backslash");
  ExpectRejected("..\\..\\etc", "backslash");
  ExpectRejected("a/" + std::string(256, 'x'), "256 bytes");
  ExpectRejected("tab\there", "control character");
  ExpectRejected("new\nline", "control character");
  ExpectRejected("del\x7F", "control character");
  ExpectRejected("c1\xC2\x85", "control character");     // U+0085 (NEL)
  ExpectRejected("bad\xC3", "malformed UTF-8");          // truncated sequence
  ExpectRejected("over\xC0\xAF", "malformed UTF-8");     // overlong '/'
  ExpectRejected("sur\xED\xA0\x80", "malformed UTF-8");  // surrogate
  ExpectRejected(std::string(kMaxBlobKeyBytes + 1, 'a'), "more than 1024");
}

TEST(BlobKeyTest, PartValidationAndQuoting) {
  EXPECT_OK(ValidateBlobKeyPart("chunk-1"));
  EXPECT_FALSE(ValidateBlobKeyPart("a/b").ok());
  EXPECT_FALSE(ValidateBlobKeyPart("..").ok());
  EXPECT_FALSE(ValidateBlobKeyPart("").ok());
  EXPECT_EQ(QuoteForMessage(std::string_view("a\0\\\"", 4)), "\"a\\x00\\x5C\\x22\"");
  EXPECT_EQ(QuoteForMessage(std::string(100, 'q')).size(), 80u + 2 + 3);
}

}  // namespace
}  // namespace sheetlog
