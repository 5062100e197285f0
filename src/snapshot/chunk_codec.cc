#include "src/snapshot/chunk_codec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/snapshot/coding.h"

namespace sheetlog {

using namespace snapshot_coding;  // NOLINT: the codec's own helpers

namespace {

constexpr std::string_view kMagic = "SLSC";
constexpr size_t kPrefixBytes = 5;   // magic + version byte
constexpr size_t kTrailerBytes = 4;  // CRC-32
// Anything larger cannot be a real coordinate and would overflow int64 arithmetic.
constexpr uint64_t kMaxCoordinate = uint64_t{1} << 62;

enum ValueType : uint8_t {
  kNoValue = 0,
  kFalse = 1,
  kTrue = 2,
  kInteger = 3,
  kDouble = 4,
  kString = 5,
  kError = 6,  // an error value: its code, length-prefixed ("#DIV/0!")
};
constexpr uint8_t kHasFormat = 0x08;
constexpr uint8_t kHasCached = 0x10;
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

// A value's tag (its type in the low 3 bits, `flags` above) and bytes.
void PutValue(const CellValue& value, uint8_t flags, std::string* out) {
  if (value.is_null()) {
    out->push_back(static_cast<char>(kNoValue | flags));
  } else if (value.is_boolean()) {
    out->push_back(static_cast<char>((value.boolean() ? kTrue : kFalse) | flags));
  } else if (value.is_string()) {
    out->push_back(static_cast<char>(kString | flags));
    PutLengthPrefixed(out, value.string());
  } else if (value.is_error()) {
    out->push_back(static_cast<char>(kError | flags));
    PutLengthPrefixed(out, value.error());
  } else {
    const double d = value.number();
    // Integral numbers within +-2^53 (every one a double holds exactly) as varints;
    // -0.0 stays a double so that its sign survives.
    if (d >= -kMaxExactInteger && d <= kMaxExactInteger && d == std::trunc(d) &&
        !(d == 0 && std::signbit(d))) {
      out->push_back(static_cast<char>(kInteger | flags));
      PutSignedVarint(out, static_cast<int64_t>(d));
    } else {
      out->push_back(static_cast<char>(kDouble | flags));
      PutDouble(out, d);
    }
  }
}

// The bytes of a value of `type` into *value; false (with *why) if truncated or unknown.
bool GetValue(uint8_t type, Decoder* in, CellValue* value, std::string* why) {
  switch (type) {
    case kNoValue:
      *value = CellValue();
      return true;
    case kFalse:
      *value = CellValue::Boolean(false);
      return true;
    case kTrue:
      *value = CellValue::Boolean(true);
      return true;
    case kInteger: {
      int64_t v;
      if (!in->GetSignedVarint(&v)) {
        *why = "truncated integer";
        return false;
      }
      *value = CellValue::Number(static_cast<double>(v));
      return true;
    }
    case kDouble: {
      double v;
      if (!in->GetDouble(&v)) {
        *why = "truncated number";
        return false;
      }
      *value = CellValue::Number(v);
      return true;
    }
    case kString: {
      std::string_view s;
      if (!in->GetLengthPrefixed(&s)) {
        *why = "truncated string";
        return false;
      }
      *value = CellValue::String(std::string(s));
      return true;
    }
    case kError: {
      std::string_view code;
      if (!in->GetLengthPrefixed(&code)) {
        *why = "truncated error value";
        return false;
      }
      if (std::find(std::begin(kCellErrorCodes), std::end(kCellErrorCodes), code) ==
          std::end(kCellErrorCodes)) {
        *why = "unknown error value";
        return false;
      }
      *value = CellValue::Error(std::string(code));
      return true;
    }
    default:
      *why = "unknown value type " + std::to_string(type);
      return false;
  }
}

}  // namespace

size_t ChunkEncoder::EntrySize(const TileInfo& t, int64_t body_len) {
  return VarintLength(t.first_row) + VarintLength(t.last_row - t.first_row) +
         VarintLength(t.col_lo) + VarintLength(t.col_hi - t.col_lo) +
         VarintLength(t.cells) + VarintLength(body_len);
}

void ChunkEncoder::PutEntry(std::string* out, const TileInfo& t, int64_t body_len) {
  PutVarint(out, t.first_row);
  PutVarint(out, t.last_row - t.first_row);
  PutVarint(out, t.col_lo);
  PutVarint(out, t.col_hi - t.col_lo);
  PutVarint(out, t.cells);
  PutVarint(out, body_len);
}

void ChunkEncoder::EncodeCell(const PlacedCell& cell, const OpenTile* tile,
                              std::string* out) {
  if (tile == nullptr) {
    PutVarint(out, 0);
    PutVarint(out, cell.ref.col);
  } else {
    const int64_t row_delta = cell.ref.row - tile->last.row;
    PutVarint(out, row_delta);
    PutVarint(out, row_delta == 0 ? cell.ref.col - tile->last.col - 1 : cell.ref.col);
  }
  const uint8_t flags = (cell.cell.format.empty() ? 0 : kHasFormat) |
                        (cell.cell.cached.is_null() ? 0 : kHasCached);
  PutValue(cell.cell.value, flags, out);
  if (flags & kHasFormat) PutLengthPrefixed(out, cell.cell.format);
  if (flags & kHasCached) PutValue(cell.cell.cached.get(), 0, out);
}

int64_t ChunkEncoder::SizeWith(size_t closed_header, size_t open_entry, int64_t bodies,
                               int64_t tiles) const {
  const size_t header_len = VarintLength(tiles) + closed_header + open_entry;
  return static_cast<int64_t>(kPrefixBytes + VarintLength(header_len) + header_len +
                              kTrailerBytes) +
         bodies;
}

int64_t ChunkEncoder::EncodedSize() const {
  const int64_t open_body = has_open_ ? static_cast<int64_t>(open_.body.size()) : 0;
  return SizeWith(closed_header_bytes_, has_open_ ? EntrySize(open_.info, open_body) : 0,
                  static_cast<int64_t>(closed_bodies_.size()) + open_body,
                  static_cast<int64_t>(closed_.size()) + (has_open_ ? 1 : 0));
}

bool ChunkEncoder::TryAdd(const PlacedCell& cell) {
  const int64_t row = cell.ref.row;
  const int64_t col = cell.ref.col;
  bool new_tile = !has_open_ || row - open_.info.first_row >= layout_.stripe_rows;
  std::string encoded;
  if (!new_tile) {
    EncodeCell(cell, &open_, &encoded);
    if (static_cast<int64_t>(open_.body.size() + encoded.size()) > layout_.tile_bytes) {
      new_tile = true;
      encoded.clear();
    }
  }
  if (new_tile) EncodeCell(cell, nullptr, &encoded);

  const int64_t open_body = has_open_ ? static_cast<int64_t>(open_.body.size()) : 0;
  const int64_t bodies = static_cast<int64_t>(closed_bodies_.size()) + open_body +
                         static_cast<int64_t>(encoded.size());
  TileInfo next;
  size_t closed_header = closed_header_bytes_;
  int64_t tiles = static_cast<int64_t>(closed_.size());
  if (new_tile) {
    if (has_open_) {
      closed_header += EntrySize(open_.info, open_body);
      ++tiles;
    }
    next = TileInfo{row, row, col, col, 1, 0, 0};
    ++tiles;
  } else {
    next = open_.info;
    next.last_row = row;
    next.col_lo = std::min(next.col_lo, col);
    next.col_hi = std::max(next.col_hi, col);
    ++next.cells;
    ++tiles;
  }
  const int64_t next_body =
      (new_tile ? 0 : open_body) + static_cast<int64_t>(encoded.size());
  const int64_t size = SizeWith(closed_header, EntrySize(next, next_body), bodies, tiles);
  if (cells_ > 0 && size > layout_.chunk_bytes) return false;

  if (new_tile) {
    if (has_open_) {
      open_.info.offset = static_cast<int64_t>(closed_bodies_.size());
      open_.info.length = open_body;
      closed_.push_back(open_.info);
      closed_bodies_ += open_.body;
      closed_header_bytes_ = closed_header;
    }
    open_.body.clear();
    has_open_ = true;
  }
  open_.info = next;
  open_.body += encoded;
  open_.last = cell.ref;
  ++cells_;
  return true;
}

std::string ChunkEncoder::Finish(std::vector<TileInfo>* tiles) {
  if (has_open_) {
    open_.info.offset = static_cast<int64_t>(closed_bodies_.size());
    open_.info.length = static_cast<int64_t>(open_.body.size());
    closed_.push_back(open_.info);
    closed_bodies_ += open_.body;
  }
  std::string header;
  PutVarint(&header, closed_.size());
  for (const TileInfo& t : closed_) PutEntry(&header, t, t.length);
  std::string out;
  out.reserve(kPrefixBytes + 10 + header.size() + closed_bodies_.size() + kTrailerBytes);
  out.append(kMagic);
  out.push_back(static_cast<char>(kSnapshotFormatVersion));
  PutLengthPrefixed(&out, header);
  const int64_t body_start = static_cast<int64_t>(out.size());
  out += closed_bodies_;
  PutFixed32(&out, Crc32(out));
  tiles->clear();
  for (TileInfo t : closed_) {
    t.offset += body_start;
    tiles->push_back(t);
  }
  closed_.clear();
  closed_bodies_.clear();
  closed_header_bytes_ = 0;
  has_open_ = false;
  open_ = OpenTile();
  cells_ = 0;
  return out;
}

Result<ChunkHeader> DecodeChunkHeader(std::string_view prefix, int64_t* needed) {
  auto bad = [](const std::string& why) {
    return InvalidArgument("not a snapshot chunk: " + why);
  };
  Decoder in(prefix);
  std::string_view magic;
  uint8_t version = 0;
  if (prefix.size() < kPrefixBytes + 1) {
    if (needed != nullptr) *needed = 64;
    return OutOfRange("chunk prefix too short");
  }
  if (!in.GetBytes(4, &magic) || magic != kMagic) return bad("bad magic");
  if (!in.GetByte(&version) || version != kSnapshotFormatVersion) {
    return InvalidArgument("unsupported snapshot chunk version " +
                           std::to_string(version));
  }
  uint64_t header_len = 0;
  if (!in.GetVarint(&header_len)) {
    if (prefix.size() >= kPrefixBytes + 10) return bad("bad header length");
    if (needed != nullptr) *needed = kPrefixBytes + 10;
    return OutOfRange("chunk prefix too short");
  }
  if (header_len > (uint64_t{1} << 40)) return bad("header length out of range");
  const int64_t header_end =
      static_cast<int64_t>(prefix.size() - in.remaining() + header_len);
  std::string_view header_bytes;
  if (!in.GetBytes(header_len, &header_bytes)) {
    if (needed != nullptr) *needed = header_end;
    return OutOfRange("chunk prefix too short");
  }
  Decoder h(header_bytes);
  uint64_t count = 0;
  if (!h.GetVarint(&count) || count > header_len) return bad("bad tile count");
  ChunkHeader result;
  result.header_end = header_end;
  int64_t offset = header_end;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t first_row, row_span, col_lo, col_span, cells, body_len;
    if (!h.GetVarint(&first_row) || !h.GetVarint(&row_span) || !h.GetVarint(&col_lo) ||
        !h.GetVarint(&col_span) || !h.GetVarint(&cells) || !h.GetVarint(&body_len)) {
      return bad("truncated tile entry");
    }
    if (first_row < 1 || col_lo < 1 || first_row > kMaxCoordinate ||
        row_span > kMaxCoordinate || col_lo > kMaxCoordinate ||
        col_span > kMaxCoordinate || first_row + row_span > kMaxCoordinate ||
        col_lo + col_span > kMaxCoordinate || cells == 0 || cells > body_len ||
        body_len > (uint64_t{1} << 40)) {
      return bad("tile entry out of range");
    }
    TileInfo t{
        static_cast<int64_t>(first_row), static_cast<int64_t>(first_row + row_span),
        static_cast<int64_t>(col_lo),    static_cast<int64_t>(col_lo + col_span),
        static_cast<int64_t>(cells),     offset,
        static_cast<int64_t>(body_len)};
    offset += t.length;
    result.cells += t.cells;
    result.tiles.push_back(t);
  }
  if (!h.empty()) return bad("trailing bytes in header");
  return result;
}

Result<ChunkHeader> VerifyChunk(std::string_view object, std::string_view key) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("snapshot chunk " + std::string(key) + " is damaged: " + why);
  };
  if (object.size() < kPrefixBytes + kTrailerBytes + 1) return bad("too short");
  Decoder trailer(object.substr(object.size() - kTrailerBytes));
  uint32_t stored = 0;
  (void)trailer.GetFixed32(&stored);
  if (Crc32(object.substr(0, object.size() - kTrailerBytes)) != stored) {
    return bad("checksum mismatch");
  }
  int64_t needed = 0;
  Result<ChunkHeader> header = DecodeChunkHeader(object, &needed);
  if (!header.ok()) return bad(header.status().message());
  int64_t end = header->header_end;
  for (const TileInfo& t : header->tiles) end += t.length;
  if (end + static_cast<int64_t>(kTrailerBytes) != static_cast<int64_t>(object.size())) {
    return bad("tile lengths do not add up to the object size");
  }
  return header;
}

Result<bool> TileDecoder::Next(PlacedCell* out) {
  if (!failed_.ok()) return failed_;
  auto bad = [&](const std::string& why) {
    failed_ = InvalidArgument("bad snapshot tile at row " +
                              std::to_string(tile_.first_row) + ": " + why);
    return failed_;
  };
  // The tile may come from a manifest rather than from DecodeChunkHeader: its bounds
  // are checked once, so that the arithmetic below cannot overflow.
  if (decoded_ == 0 && !(tile_.first_row >= 1 && tile_.first_row <= tile_.last_row &&
                         static_cast<uint64_t>(tile_.last_row) <= kMaxCoordinate &&
                         tile_.col_lo >= 1 && tile_.col_lo <= tile_.col_hi &&
                         static_cast<uint64_t>(tile_.col_hi) <= kMaxCoordinate)) {
    return bad("tile bounds out of range");
  }
  if (decoded_ == tile_.cells) {
    if (!in_.empty()) return bad("trailing bytes");
    return false;
  }
  Decoder in(in_);
  uint64_t row_delta, col_code;
  uint8_t tag;
  if (!in.GetVarint(&row_delta) || !in.GetVarint(&col_code) || !in.GetByte(&tag)) {
    return bad("truncated cell");
  }
  if (row_delta > kMaxCoordinate || col_code > kMaxCoordinate) {
    return bad("coordinate out of range");
  }
  const bool first = decoded_ == 0;
  const int64_t base_row = first ? tile_.first_row : last_.row;
  const bool same_row = !first && row_delta == 0;
  // Checked before adding, so that damaged bytes cannot overflow the sums: base_row and
  // last_.col lie inside the tile, whose bounds the header keeps within kMaxCoordinate.
  if (row_delta > static_cast<uint64_t>(tile_.last_row - base_row) ||
      (same_row && (last_.col >= tile_.col_hi ||
                    col_code > static_cast<uint64_t>(tile_.col_hi - last_.col - 1)))) {
    return bad("cell outside its tile or out of order");
  }
  PlacedCell cell;
  cell.ref.row = base_row + static_cast<int64_t>(row_delta);
  cell.ref.col = same_row ? last_.col + 1 + static_cast<int64_t>(col_code)
                          : static_cast<int64_t>(col_code);
  if (cell.ref.row > tile_.last_row || cell.ref.col < tile_.col_lo ||
      cell.ref.col > tile_.col_hi || (!first && !(last_ < cell.ref))) {
    return bad("cell outside its tile or out of order");
  }
  if ((tag & ~(kHasFormat | kHasCached | 0x07)) != 0) return bad("unknown tag bits");
  std::string why;
  if (!GetValue(tag & 0x07, &in, &cell.cell.value, &why)) return bad(why);
  if (tag & kHasFormat) {
    std::string_view f;
    if (!in.GetLengthPrefixed(&f) || f.empty()) return bad("truncated format");
    cell.cell.format = std::string(f);
  }
  if (tag & kHasCached) {
    uint8_t cached_tag;
    if (!in.GetByte(&cached_tag)) return bad("truncated cached result");
    if ((cached_tag & ~0x07) != 0 || (cached_tag & 0x07) == kNoValue) {
      return bad("bad cached result type");
    }
    CellValue cached;
    if (!GetValue(cached_tag, &in, &cached, &why)) return bad(why);
    cell.cell.cached = std::move(cached);
    if (!cell.cell.value.is_formula()) return bad("a cached result without a formula");
  }
  if (cell.cell.empty()) return bad("an empty cell is never stored");
  in_ = in_.substr(in_.size() - in.remaining());
  last_ = cell.ref;
  ++decoded_;
  *out = std::move(cell);
  return true;
}

Status DecodeTile(std::string_view body, const TileInfo& tile,
                  const std::function<void(PlacedCell&&)>& sink) {
  TileDecoder decoder(body, tile);
  PlacedCell cell;
  while (true) {
    Result<bool> more = decoder.Next(&cell);
    if (!more.ok()) return more.status();
    if (!*more) return Status::OK();
    sink(std::move(cell));
  }
}

}  // namespace sheetlog
