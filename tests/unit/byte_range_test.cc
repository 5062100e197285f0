// Range headers of blob GETs (src/api/byte_range.h).
#include "src/api/byte_range.h"

#include <gtest/gtest.h>

namespace sheetlog::api {
namespace {

using Kind = ByteRange::Kind;

void ExpectPartial(const char* header, int64_t size, int64_t first, int64_t last) {
  ByteRange range = ParseByteRange(header, size);
  EXPECT_EQ(range.kind, Kind::kPartial) << header;
  EXPECT_EQ(range.first, first) << header;
  EXPECT_EQ(range.last, last) << header;
}

TEST(ParseByteRange, OneRangeIsServed) {
  ExpectPartial("bytes=0-4", 100, 0, 4);
  ExpectPartial("bytes=10-10", 100, 10, 10);
  ExpectPartial("bytes=90-1000", 100, 90, 99);  // last clipped to the end
  ExpectPartial("bytes=95-", 100, 95, 99);      // open
  ExpectPartial("bytes=-5", 100, 95, 99);       // suffix
  ExpectPartial("bytes=-500", 100, 0, 99);      // suffix longer than the object
  ExpectPartial("Bytes = 1-2", 100, 1, 2);      // unit is case-insensitive
  EXPECT_EQ(ParseByteRange("bytes=2-5", 100).length(), 4);
}

TEST(ParseByteRange, RangesBeyondTheEndAreUnsatisfiable) {
  EXPECT_EQ(ParseByteRange("bytes=100-", 100).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseByteRange("bytes=100-200", 100).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseByteRange("bytes=-0", 100).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseByteRange("bytes=0-0", 0).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseByteRange("bytes=-3", 0).kind, Kind::kUnsatisfiable);
}

TEST(ParseByteRange, EverythingElseIsIgnoredAndTheWholeObjectSent) {
  for (const char* header :
       {"", "bytes=0-1,5-6", "bytes=-1,-2", "items=0-4", "bytes=5-2", "bytes=a-4",
        "bytes=-", "bytes=4", "bytes 0-4", "bytes=99999999999999999999-",
        "bytes=-99999999999999999999", "bytes=+1-2", "bytes=1-+2"}) {
    EXPECT_EQ(ParseByteRange(header, 100).kind, Kind::kWhole) << header;
  }
}

}  // namespace
}  // namespace sheetlog::api
