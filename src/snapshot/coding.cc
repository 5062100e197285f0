#include "src/snapshot/coding.h"

#include <array>
#include <cstring>

namespace sheetlog::snapshot_coding {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutSignedVarint(std::string* out, int64_t v) {
  PutVarint(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutDouble(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  for (int i = 0; i < 8; ++i) {
    out->push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
}

void PutLengthPrefixed(std::string* out, std::string_view bytes) {
  PutVarint(out, bytes.size());
  out->append(bytes.data(), bytes.size());
}

size_t VarintLength(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

bool Decoder::GetVarint(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && !in_.empty(); shift += 7) {
    uint8_t byte = static_cast<uint8_t>(in_.front());
    in_.remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool Decoder::GetSignedVarint(int64_t* v) {
  uint64_t u;
  if (!GetVarint(&u)) return false;
  *v = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  return true;
}

bool Decoder::GetFixed32(uint32_t* v) {
  if (in_.size() < 4) return false;
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    result |= static_cast<uint32_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
  }
  in_.remove_prefix(4);
  *v = result;
  return true;
}

bool Decoder::GetDouble(double* v) {
  if (in_.size() < 8) return false;
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) {
    bits |= static_cast<uint64_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
  }
  in_.remove_prefix(8);
  std::memcpy(v, &bits, sizeof(bits));
  return true;
}

bool Decoder::GetByte(uint8_t* v) {
  if (in_.empty()) return false;
  *v = static_cast<uint8_t>(in_.front());
  in_.remove_prefix(1);
  return true;
}

bool Decoder::GetLengthPrefixed(std::string_view* bytes) {
  uint64_t n;
  return GetVarint(&n) && GetBytes(n, bytes);
}

bool Decoder::GetBytes(size_t n, std::string_view* bytes) {
  if (in_.size() < n) return false;
  *bytes = in_.substr(0, n);
  in_.remove_prefix(n);
  return true;
}

namespace {

// Slicing-by-8 tables: table[0] is the classic byte-at-a-time table; table[k][i] is
// the CRC of byte i followed by k zero bytes, so eight bytes fold in per step.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

CrcTables MakeCrcTables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t k = 1; k < 8; ++k)
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

}  // namespace

uint32_t Crc32(std::string_view bytes, uint32_t crc) {
  static const CrcTables kT = MakeCrcTables();
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t n = bytes.size();
  crc = ~crc;
  while (n >= 8) {
    const uint32_t lo = crc ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 |
                               uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    crc = kT[7][lo & 0xff] ^ kT[6][(lo >> 8) & 0xff] ^ kT[5][(lo >> 16) & 0xff] ^
          kT[4][lo >> 24] ^ kT[3][p[4]] ^ kT[2][p[5]] ^ kT[1][p[6]] ^ kT[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = kT[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace sheetlog::snapshot_coding
