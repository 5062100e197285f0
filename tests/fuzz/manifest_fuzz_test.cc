// Fuzzes the snapshot manifest parser (SnapshotManifest::FromJson, src/snapshot/
// snapshot_layout.h): a root object read back from the blob store, with no checksum.
// Whatever the bytes: no crash and no exception, OK or InvalidArgument; what parses
// writes back (ToJson) to text that parses to the same manifest.
#include <gtest/gtest.h>

#include "src/snapshot/snapshot_layout.h"
#include "tests/support/fuzz_inputs.h"

namespace sheetlog::testing {
namespace {

void CheckManifest(const std::string& bytes) {
  Result<SnapshotManifest> manifest = SnapshotManifest::FromJson(bytes);
  if (!manifest.ok()) {
    EXPECT_EQ(manifest.status().code(), StatusCode::kInvalidArgument)
        << manifest.status().ToString();
    return;
  }
  const std::string text = manifest->ToJson();
  Result<SnapshotManifest> again = SnapshotManifest::FromJson(text);
  ASSERT_TRUE(again.ok()) << text << ": " << again.status().ToString();
  EXPECT_TRUE(*again == *manifest) << text;
}

TEST(ManifestFuzzTest, CorpusAndMutants) {
  FuzzDictionary dictionary;
  dictionary.tokens = {"{",
                       "}",
                       "[",
                       "]",
                       ",",
                       ":",
                       "\"",
                       "null",
                       "-1",
                       "0",
                       "9223372036854775807",
                       "18446744073709551615",
                       "-9223372036854775808",
                       "1.5",
                       "\"tiles\":",
                       "\"chunks\":",
                       "[1,2,3,4,5,6,7]",
                       "\"version\":1",
                       "\"format\":\"sheetlog-snapshot\""};
  const int64_t ran =
      FuzzCorpus("manifest", FuzzMutations(400), 0x3A41, dictionary, CheckManifest);
  EXPECT_GT(ran, 400);
}

}  // namespace
}  // namespace sheetlog::testing
