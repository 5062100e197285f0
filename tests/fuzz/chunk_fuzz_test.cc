// Fuzzes the snapshot chunk decoder (src/snapshot/chunk_codec.h): a chunk read back from
// the blob store may be damaged (a disk, an operator, a bug). Whatever the bytes: no
// crash, OK or InvalidArgument (OutOfRange for a short prefix, with a larger `needed`),
// and what VerifyChunk accepts decodes to exactly the cells its header announces, in
// order, inside each tile's box. Every mutant is also tried with its checksum recomputed,
// so that damage the CRC would catch still reaches the header and tile decoders.
//
// The corpus is chunks written by ChunkEncoder (DISABLED_WriteCorpus regenerates it).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "src/snapshot/chunk_codec.h"
#include "src/snapshot/coding.h"
#include "tests/support/fuzz_inputs.h"

namespace sheetlog::testing {
namespace {

constexpr size_t kMaxChunkMessageBytes = 1024;

void ExpectRefusal(const Status& status) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_LE(status.message().size(), kMaxChunkMessageBytes);
}

// Decodes one tile, bounded: a tile of n cells takes at least n bytes.
void CheckTile(std::string_view body, const TileInfo& tile, bool verified) {
  TileDecoder decoder(body, tile);
  PlacedCell cell;
  CellRef last;
  int64_t decoded = 0;
  while (true) {
    ASSERT_LE(decoded, static_cast<int64_t>(body.size())) << "a tile decodes forever";
    Result<bool> more = decoder.Next(&cell);
    if (!more.ok()) {
      ExpectRefusal(more.status());
      // A failed decoder stays failed.
      EXPECT_FALSE(decoder.Next(&cell).ok());
      return;
    }
    if (!*more) break;
    EXPECT_TRUE(cell.ref.row >= tile.first_row && cell.ref.row <= tile.last_row &&
                cell.ref.col >= tile.col_lo && cell.ref.col <= tile.col_hi)
        << cell.ref.row << "," << cell.ref.col;
    if (decoded > 0) {
      EXPECT_LT(last, cell.ref);
    }
    EXPECT_FALSE(cell.cell.empty());
    last = cell.ref;
    ++decoded;
  }
  EXPECT_EQ(decoded, tile.cells);
  if (verified) {
    int64_t again = 0;
    EXPECT_TRUE(DecodeTile(body, tile, [&](PlacedCell&&) { ++again; }).ok());
    EXPECT_EQ(again, decoded);
  }
}

// `tile` with bounds a damaged manifest could hold: at the ends of int64, reversed,
// below 1, and a cell count that never matches.
std::vector<TileInfo> ManifestTileVariants(const TileInfo& tile) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  std::vector<TileInfo> out(6, tile);
  out[0].first_row = kMax - 1;
  out[0].last_row = kMax;
  out[1].col_lo = kMax - 1;
  out[1].col_hi = kMax;
  out[2].first_row = kMin;
  out[2].col_lo = -5;
  out[3].first_row = tile.last_row + 1;  // reversed
  out[4].cells = -1;
  out[5].first_row = int64_t{1} << 62;
  out[5].last_row = int64_t{1} << 62;
  out[5].col_hi = int64_t{1} << 62;
  return out;
}

void CheckObject(const std::string& bytes) {
  Result<ChunkHeader> verified = VerifyChunk(bytes, "snapshots/fuzz/chunk");
  if (verified.ok()) {
    int64_t cells = 0;
    for (const TileInfo& tile : verified->tiles) {
      ASSERT_GE(tile.offset, verified->header_end);
      ASSERT_LE(tile.offset + tile.length, static_cast<int64_t>(bytes.size()));
      ASSERT_NO_FATAL_FAILURE(CheckTile(
          std::string_view(bytes).substr(tile.offset, tile.length), tile, true));
      cells += tile.cells;
    }
    EXPECT_EQ(cells, verified->cells);
  } else {
    ExpectRefusal(verified.status());
  }
  // Prefixes, as the snapshot builder reads them when it resumes.
  for (size_t length : {size_t{0}, size_t{6}, bytes.size() / 2, bytes.size()}) {
    if (length > bytes.size()) continue;
    int64_t needed = -1;
    Result<ChunkHeader> header =
        DecodeChunkHeader(std::string_view(bytes).substr(0, length), &needed);
    if (header.ok()) {
      // Tiles the bytes hold, decoded without the checksum's protection.
      for (const TileInfo& tile : header->tiles) {
        if (tile.offset + tile.length > static_cast<int64_t>(length)) break;
        const std::string_view body =
            std::string_view(bytes).substr(tile.offset, tile.length);
        ASSERT_NO_FATAL_FAILURE(CheckTile(body, tile, false));
        // The reader takes tile bounds from the manifest (JSON, no checksum): any
        // int64 may arrive there.
        for (TileInfo odd : ManifestTileVariants(tile)) {
          ASSERT_NO_FATAL_FAILURE(CheckTile(body, odd, false));
        }
      }
    } else if (header.status().code() == StatusCode::kOutOfRange) {
      EXPECT_GT(needed, static_cast<int64_t>(length))
          << "a short prefix asks for no more";
    } else {
      ExpectRefusal(header.status());
    }
  }
}

void CheckChunk(const std::string& bytes) {
  ASSERT_NO_FATAL_FAILURE(CheckObject(bytes));
  if (bytes.size() <= 4) return;
  std::string fixed = bytes.substr(0, bytes.size() - 4);
  snapshot_coding::PutFixed32(&fixed, snapshot_coding::Crc32(fixed));
  ASSERT_NO_FATAL_FAILURE(CheckObject(fixed));
}

TEST(ChunkFuzzTest, CorpusAndMutants) {
  FuzzDictionary dictionary;
  dictionary.tokens = {"SLSC\x01",
                       std::string("\x00", 1),
                       "\xff\xff\xff\xff\xff\xff\xff\xff\x7f",
                       "\x80\x80\x80\x80\x80\x80\x80\x80\x40",
                       "\x01",
                       "\x7f",
                       "\x05\x03",
                       "\x08",
                       "\x10",
                       "\x15"};
  dictionary.nest_open = "\x80";
  dictionary.nest_close = "\x01";
  const int64_t ran =
      FuzzCorpus("chunk", FuzzMutations(600), 0xC4C, dictionary, CheckChunk);
  EXPECT_GT(ran, 600);
}

// Writes the corpus: chunks of random cells (numbers, strings, booleans, formats,
// formulas with cached results, sparse and at the grid's far corner) under small and
// default layouts. Run by hand: --gtest_also_run_disabled_tests
// --gtest_filter=*WriteCorpus.
TEST(ChunkFuzzTest, DISABLED_WriteCorpus) {
  const std::filesystem::path dir =
      std::filesystem::path(SHEETLOG_SOURCE_DIR) / "tests/fuzz/corpus/chunk";
  std::filesystem::create_directories(dir);
  std::mt19937_64 random(42);
  SnapshotLayout small;
  small.chunk_bytes = 1024;
  small.tile_bytes = 96;
  small.stripe_rows = 4;
  int written = 0;
  for (const SnapshotLayout& layout : {small, SnapshotLayout()}) {
    for (int variant = 0; variant < 3; ++variant) {
      ChunkEncoder encoder(layout);
      CellRef ref{1 + static_cast<int64_t>(random() % 5), 1};
      if (variant == 2) ref = {kMaxRow - 40, kMaxColumn - 3};
      for (int i = 0; i < 60; ++i) {
        Cell cell;
        switch (random() % 7) {
          case 0:
            cell = Cell(CellValue::Number(static_cast<double>(random() % 2000) - 1000));
            break;
          case 1:
            cell = Cell(CellValue::Number(-0.0), "0.00");
            break;
          case 2:
            cell = Cell(CellValue::Number(1e300 / static_cast<double>(1 + random() % 7)));
            break;
          case 3:
            cell = Cell(
                CellValue::String("s" + std::to_string(random() % 100) + " \xc3\xa9"));
            break;
          case 4:
            cell = Cell(CellValue::Boolean(random() % 2 == 0), "@");
            break;
          case 5:
            cell = Cell(CellValue::String("=A1*2"), "", CellValue::Number(42));
            break;
          default:
            cell = Cell(CellValue::Null(), "yyyy-mm-dd");
        }
        if (!encoder.TryAdd(PlacedCell{ref, cell})) break;
        if (ref.col < kMaxColumn && random() % 3 != 0) {
          ref.col += 1 + static_cast<int64_t>(random() % 3);
          if (ref.col > kMaxColumn) ref = {ref.row + 1, 1};
        } else {
          ref = {ref.row + 1 + static_cast<int64_t>(random() % 3), 1};
        }
        if (ref.row > kMaxRow) break;
      }
      std::vector<TileInfo> tiles;
      const std::string object = encoder.Finish(&tiles);
      std::ofstream(dir / ("chunk_" + std::to_string(++written) + ".bin"),
                    std::ios::binary)
          << object;
      ASSERT_TRUE(VerifyChunk(object, "k").ok());
    }
  }
}

}  // namespace
}  // namespace sheetlog::testing
