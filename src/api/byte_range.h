// The Range header of a blob GET (RFC 9110 section 14): which bytes to send.
//
// sheetlog serves one range: `bytes=first-last`, `bytes=first-` (to the end) and
// `bytes=-suffix` (the last `suffix` bytes) answer 206 with Content-Range. A range that
// starts at or beyond the end (or a zero-length suffix, or any range of an empty
// object) is unsatisfiable: 416 with `Content-Range: bytes */size`. Everything else —
// several ranges, another unit, a header that does not parse — is ignored and the
// whole object sent with 200, as RFC 9110 allows ("a server MAY ignore the Range
// header field"); clients see the 200 and know they got everything.
#pragma once

#include <cstdint>
#include <string_view>

namespace sheetlog::api {

struct ByteRange {
  enum class Kind {
    kWhole,          // no Range, or one that is ignored: 200 with every byte
    kPartial,        // 206 with bytes [first, last]
    kUnsatisfiable,  // 416
  };
  Kind kind = Kind::kWhole;
  int64_t first = 0;  // kPartial: first byte sent
  int64_t last = -1;  // kPartial: last byte sent (inclusive), < size

  int64_t length() const { return last - first + 1; }
};

// Interprets the value of a Range header (empty: none) for an object of `size` bytes.
// Never fails: input it does not serve is kWhole. REQUIRES: size >= 0.
ByteRange ParseByteRange(std::string_view header, int64_t size);

}  // namespace sheetlog::api
