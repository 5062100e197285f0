// Byte-level encoding helpers of the snapshot chunk format (FORMAT.md): LEB128 varints,
// zig-zag signed varints, little-endian fixed-width integers and doubles, CRC-32.
// Internal to src/snapshot.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sheetlog::snapshot_coding {

void PutVarint(std::string* out, uint64_t v);
void PutSignedVarint(std::string* out, int64_t v);  // zig-zag
void PutFixed32(std::string* out, uint32_t v);
void PutDouble(std::string* out, double v);  // IEEE-754 bits, little-endian
void PutLengthPrefixed(std::string* out, std::string_view bytes);

size_t VarintLength(uint64_t v);

// A cursor over encoded bytes. Every Get* returns false (and leaves the cursor in an
// unspecified position) when the input is truncated or malformed.
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  bool GetVarint(uint64_t* v);
  bool GetSignedVarint(int64_t* v);
  bool GetFixed32(uint32_t* v);
  bool GetDouble(double* v);
  bool GetByte(uint8_t* v);
  bool GetLengthPrefixed(std::string_view* bytes);
  bool GetBytes(size_t n, std::string_view* bytes);
  size_t remaining() const { return in_.size(); }
  bool empty() const { return in_.empty(); }

 private:
  std::string_view in_;
};

// CRC-32 (IEEE 802.3 polynomial, as zlib's crc32), continuing from `crc`.
uint32_t Crc32(std::string_view bytes, uint32_t crc = 0);

}  // namespace sheetlog::snapshot_coding
