// The snapshot format: keys, chunk codec, manifest codec, and the reader's range reads
// (FORMAT.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/uuid.h"
#include "src/snapshot/chunk_codec.h"
#include "src/snapshot/coding.h"
#include "src/snapshot/snapshot_builder.h"
#include "src/snapshot/snapshot_id.h"
#include "src/snapshot/snapshot_layout.h"
#include "src/snapshot/snapshot_reader.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

std::unique_ptr<BlobStore> OpenStore(const testing::TempDir& dir, Clock* clock) {
  BlobStoreOptions options;
  options.root = dir.File("blobs");
  options.sync = false;
  auto store = DirectoryBlobStore::Open(options, clock);
  EXPECT_OK(store);
  return std::move(store).value();
}

Cell CellOf(CellValue v, std::string format = "") { return Cell{std::move(v), format}; }

// Cells in strictly increasing order with every kind of value.
std::vector<PlacedCell> RandomCells(std::mt19937_64& rng, int count, int64_t max_row_step,
                                    int64_t max_col) {
  std::vector<PlacedCell> cells;
  CellRef at{1, 0};
  for (int i = 0; i < count; ++i) {
    int64_t step = std::uniform_int_distribution<int64_t>(0, max_row_step)(rng);
    if (step == 0 && at.col < max_col) {
      at.col += std::uniform_int_distribution<int64_t>(1, max_col - at.col)(rng);
    } else {
      at.row += std::max<int64_t>(step, 1);
      at.col = std::uniform_int_distribution<int64_t>(1, max_col)(rng);
    }
    Cell cell;
    switch (rng() % 8) {
      case 0:
        cell.value = CellValue::Number(static_cast<double>(
            std::uniform_int_distribution<int64_t>(-1000000, 1000000)(rng)));
        break;
      case 1:
        cell.value =
            CellValue::Number(std::uniform_real_distribution<double>(-1e9, 1e9)(rng));
        break;
      case 2:
        cell.value = CellValue::Boolean(rng() % 2 == 0);
        break;
      case 3:
        cell.value = CellValue::String(std::string(rng() % 40, 'a' + rng() % 26));
        break;
      case 4:
        cell.value = CellValue::String("=SUM(A1:B" + std::to_string(rng() % 100) + ")");
        switch (rng() % 4) {  // its cached result, of every kind, or none
          case 0:
            cell.cached = CellValue::Number(static_cast<double>(rng() % 1000) / 8);
            break;
          case 1:
            cell.cached = CellValue::String("#DIV/0!");
            break;
          case 2:
            cell.cached = CellValue::Boolean(rng() % 2 == 0);
            break;
          default:
            break;
        }
        break;
      case 5:
        cell.format = "0.00";  // a formatted blank
        break;
      case 6:
        cell.value = CellValue::Number(-0.0);
        cell.format = "#,##0";
        break;
      default:
        cell.value = CellValue::Number(9007199254740992.0 * ((rng() % 2) ? 1 : -1));
        break;
    }
    cells.push_back(PlacedCell{at, std::move(cell)});
  }
  return cells;
}

std::vector<PlacedCell> DecodeWhole(const std::string& object) {
  Result<ChunkHeader> header = VerifyChunk(object, "test");
  EXPECT_OK(header);
  std::vector<PlacedCell> out;
  if (!header.ok()) return out;
  for (const TileInfo& tile : header->tiles) {
    Status s = DecodeTile(std::string_view(object).substr(tile.offset, tile.length), tile,
                          [&](PlacedCell&& c) { out.push_back(std::move(c)); });
    EXPECT_OK(s);
  }
  return out;
}

TEST(SnapshotKeysTest, DeterministicVersion5UuidsPerSnapshotAndChunk) {
  SnapshotId id{"sheet-1", 2, 100, 20100};
  const std::string root = SnapshotRootKey(id);
  EXPECT_EQ(root, SnapshotRootKey(id));
  EXPECT_EQ(root, "snapshots/sheet-1/" +
                      NameUuid(kSnapshotNamespaceUuid, "sheet-1/2/100/root"));
  const std::string uuid = root.substr(std::string("snapshots/sheet-1/").size());
  ASSERT_TRUE(IsUuid(uuid));
  EXPECT_EQ(uuid[14], '5');  // version 5
  EXPECT_OK(BlobStore::ValidateKey(root));

  std::set<std::string> keys{root};
  for (int64_t i = 0; i < 100; ++i) {
    std::string key = SnapshotChunkKey(id, "v1-c1024-t64-s8", i);
    EXPECT_EQ(key, SnapshotChunkKey(id, "v1-c1024-t64-s8", i));
    EXPECT_TRUE(keys.insert(key).second) << "duplicate key for chunk " << i;
  }
  // Another entry, segment, sheet or layout names other objects.
  EXPECT_NE(SnapshotRootKey({"sheet-1", 2, 101, 20101}), root);
  EXPECT_NE(SnapshotRootKey({"sheet-1", 3, 100, 20100}), root);
  EXPECT_NE(SnapshotChunkKey(id, "v1-c2048-t64-s8", 0),
            SnapshotChunkKey(id, "v1-c1024-t64-s8", 0));
  EXPECT_EQ(SnapshotRootKey({"sheet-2", 2, 100, 1}).rfind("snapshots/sheet-2/", 0), 0u);
  EXPECT_FALSE(ValidateSnapshotId({"", 0, 0, 0}).ok());
  EXPECT_FALSE(ValidateSnapshotId({"a/b", 0, 0, 0}).ok());
  EXPECT_OK(ValidateSnapshotId(id));
}

TEST(SnapshotCodingTest, VarintsAndCrc) {
  using namespace snapshot_coding;
  std::string buf;
  const std::vector<uint64_t> values{
      0, 1, 127, 128, 300, 1ull << 35, std::numeric_limits<uint64_t>::max()};
  for (uint64_t v : values) PutVarint(&buf, v);
  PutSignedVarint(&buf, -1);
  PutSignedVarint(&buf, std::numeric_limits<int64_t>::min());
  PutDouble(&buf, -0.0);
  Decoder in(buf);
  for (uint64_t v : values) {
    uint64_t got;
    ASSERT_TRUE(in.GetVarint(&got));
    EXPECT_EQ(got, v);
  }
  int64_t s;
  ASSERT_TRUE(in.GetSignedVarint(&s));
  EXPECT_EQ(s, -1);
  ASSERT_TRUE(in.GetSignedVarint(&s));
  EXPECT_EQ(s, std::numeric_limits<int64_t>::min());
  double d;
  ASSERT_TRUE(in.GetDouble(&d));
  EXPECT_TRUE(d == 0 && std::signbit(d));
  EXPECT_TRUE(in.empty());
  uint64_t v;
  EXPECT_FALSE(Decoder("\x80\x80").GetVarint(&v));  // truncated
  EXPECT_EQ(Crc32("123456789"), 0xcbf43926u);       // the standard check value
}

TEST(ChunkCodecTest, RoundTripsEveryValueKindExactly) {
  std::mt19937_64 rng(7);
  SnapshotLayout layout;
  layout.chunk_bytes = 1 << 20;
  layout.tile_bytes = 512;
  layout.stripe_rows = 4;
  std::vector<PlacedCell> cells = RandomCells(rng, 3000, 3, 50);
  ChunkEncoder encoder(layout);
  for (const PlacedCell& c : cells) ASSERT_TRUE(encoder.TryAdd(c));
  const int64_t predicted = encoder.EncodedSize();
  std::vector<TileInfo> tiles;
  std::string object = encoder.Finish(&tiles);
  EXPECT_EQ(static_cast<int64_t>(object.size()), predicted);
  EXPECT_TRUE(encoder.empty());
  std::vector<PlacedCell> back = DecodeWhole(object);
  ASSERT_EQ(back.size(), cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    ASSERT_EQ(back[i], cells[i]) << "cell " << i;
    if (cells[i].cell.value.is_number()) {  // -0.0 keeps its sign
      EXPECT_EQ(std::signbit(back[i].cell.value.number()),
                std::signbit(cells[i].cell.value.number()));
    }
  }
  // Tiles obey the layout: at most stripe_rows rows, at most tile_bytes (no cell here
  // is larger), bounding boxes hold their cells, and the header matches.
  int64_t total = 0;
  for (const TileInfo& t : tiles) {
    EXPECT_LT(t.last_row - t.first_row, layout.stripe_rows);
    EXPECT_LE(t.length, layout.tile_bytes);
    total += t.cells;
  }
  EXPECT_EQ(total, static_cast<int64_t>(cells.size()));
  int64_t needed = 0;
  Result<ChunkHeader> header = DecodeChunkHeader(object, &needed);
  ASSERT_OK(header);
  EXPECT_EQ(header->tiles, tiles);
  // A prefix too short for the header says how much is needed.
  Result<ChunkHeader> partial = DecodeChunkHeader(object.substr(0, 12), &needed);
  EXPECT_EQ(partial.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(needed, header->header_end);
  // The same cells encode to the same bytes.
  for (const PlacedCell& c : cells) ASSERT_TRUE(encoder.TryAdd(c));
  std::vector<TileInfo> again_tiles;
  EXPECT_EQ(encoder.Finish(&again_tiles), object);
}

// Infinisheet's error values (CellError) survive a snapshot, formatted or
// not, as a value and as a formula's cached result.
TEST(ChunkCodecTest, RoundTripsErrorValues) {
  SnapshotLayout layout;
  std::vector<PlacedCell> cells = {
      {{1, 1}, Cell{CellValue::Error("#DIV/0!")}},
      {{1, 2}, Cell{CellValue::Error("#N/A"), "0.00"}},
      {{2, 1}, Cell{CellValue::String("=1/0"), "", CellValue::Error("#DIV/0!")}},
  };
  ChunkEncoder encoder(layout);
  for (const PlacedCell& c : cells) ASSERT_TRUE(encoder.TryAdd(c));
  std::vector<TileInfo> tiles;
  std::vector<PlacedCell> back = DecodeWhole(encoder.Finish(&tiles));
  EXPECT_EQ(back, cells);
}

TEST(ChunkCodecTest, RespectsTheChunkLimitAndAdmitsOneOversizedCell) {
  SnapshotLayout layout;
  layout.chunk_bytes = 2048;
  layout.tile_bytes = 256;
  std::mt19937_64 rng(11);
  std::vector<PlacedCell> cells = RandomCells(rng, 2000, 2, 30);
  ChunkEncoder encoder(layout);
  std::vector<std::string> objects;
  std::vector<PlacedCell> decoded;
  for (const PlacedCell& c : cells) {
    if (!encoder.TryAdd(c)) {
      std::vector<TileInfo> tiles;
      objects.push_back(encoder.Finish(&tiles));
      ASSERT_TRUE(encoder.TryAdd(c));  // an empty chunk takes any cell
    }
  }
  std::vector<TileInfo> tiles;
  objects.push_back(encoder.Finish(&tiles));
  ASSERT_GT(objects.size(), 10u);
  for (const std::string& o : objects) {
    EXPECT_LE(static_cast<int64_t>(o.size()), layout.chunk_bytes);
    // Full chunks are nearly full: the cut is at the last cell that fits.
    for (PlacedCell& c : DecodeWhole(o)) decoded.push_back(std::move(c));
  }
  for (size_t i = 0; i + 1 < objects.size(); ++i) {
    EXPECT_GT(static_cast<int64_t>(objects[i].size()), layout.chunk_bytes - 200);
  }
  EXPECT_EQ(decoded, cells);

  // A single cell larger than the limit makes a chunk of its own.
  PlacedCell big{{5, 5}, CellOf(CellValue::String(std::string(5000, 'x')))};
  ASSERT_TRUE(encoder.TryAdd(PlacedCell{{1, 1}, CellOf(CellValue::Number(1))}));
  EXPECT_FALSE(encoder.TryAdd(big));
  encoder.Finish(&tiles);
  ASSERT_TRUE(encoder.TryAdd(big));
  EXPECT_FALSE(encoder.TryAdd(PlacedCell{{6, 1}, CellOf(CellValue::Number(2))}));
  std::string alone = encoder.Finish(&tiles);
  EXPECT_GT(static_cast<int64_t>(alone.size()), layout.chunk_bytes);
  EXPECT_EQ(DecodeWhole(alone), std::vector<PlacedCell>{big});
}

TEST(ChunkCodecTest, RefusesDamage) {
  SnapshotLayout layout;
  ChunkEncoder encoder(layout);
  ASSERT_TRUE(encoder.TryAdd(PlacedCell{{3, 4}, CellOf(CellValue::String("hello"))}));
  std::vector<TileInfo> tiles;
  std::string object = encoder.Finish(&tiles);
  for (size_t i = 0; i < object.size(); ++i) {
    std::string damaged = object;
    damaged[i] ^= 0x01;
    EXPECT_FALSE(VerifyChunk(damaged, "k").ok()) << "flip at byte " << i;
  }
  EXPECT_FALSE(VerifyChunk(object.substr(0, object.size() - 1), "k").ok());
  std::string wrong_version = object;
  wrong_version[4] = 2;
  int64_t needed;
  EXPECT_EQ(DecodeChunkHeader(wrong_version, &needed).status().code(),
            StatusCode::kInvalidArgument);
  // A tile body cut short fails instead of inventing cells.
  Status s =
      DecodeTile(std::string_view(object).substr(tiles[0].offset, tiles[0].length - 1),
                 tiles[0], [](PlacedCell&&) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(SnapshotManifestTest, JsonRoundTripIsExactAndDeterministic) {
  SnapshotManifest m;
  m.id = {"s", 1, 2, 3};
  m.layout.chunk_bytes = 4096;
  m.cells = 10;
  m.rows = 7;
  m.cols = 3;
  m.chunks.push_back(ChunkInfo{"snapshots/s/x", 4000, 10, {{1, 7, 1, 3, 10, 9, 3980}}});
  const std::string text = m.ToJson();
  EXPECT_EQ(text, m.ToJson());
  Result<SnapshotManifest> back = SnapshotManifest::FromJson(text);
  ASSERT_OK(back);
  EXPECT_EQ(*back, m);
  EXPECT_EQ(back->ToJson(), text);
  EXPECT_NE(text.find("\"version\":1"), std::string::npos);

  EXPECT_FALSE(SnapshotManifest::FromJson("not json").ok());
  EXPECT_FALSE(SnapshotManifest::FromJson("{\"format\":1}").ok());
  std::string future = text;
  future.replace(future.find("\"version\":1"), 11, "\"version\":9");
  Result<SnapshotManifest> refused = SnapshotManifest::FromJson(future);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("version 9"), std::string::npos);
}

// --- Reader over snapshots built from nothing -----------------------------------------

class SnapshotReaderTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = OpenStore(dir_, &clock_); }

  // Builds a snapshot holding exactly `cells` (sorted), returns the root key.
  std::string Build(const std::vector<PlacedCell>& cells, SnapshotLayout layout,
                    SnapshotId id = {"sheet", 0, 10, 10}) {
    SheetDelta delta;
    for (const PlacedCell& c : cells) {
      delta.Apply(SetCellEdit{c.ref, c.cell});
    }
    SnapshotBuilder builder(store_.get(), id, std::nullopt, std::move(delta), {layout});
    while (true) {
      Result<bool> done = builder.WriteNextChunk();
      EXPECT_OK(done);
      if (!done.ok() || *done) break;
    }
    Result<std::string> root = builder.Finish();
    EXPECT_OK(root);
    return root.ok() ? *root : "";
  }

  std::unique_ptr<SnapshotReader> Open(const std::string& root) {
    auto reader = SnapshotReader::Open(store_.get(), root);
    EXPECT_OK(reader);
    return reader.ok() ? std::move(reader).value() : nullptr;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<BlobStore> store_;
};

TEST_F(SnapshotReaderTest, EmptySheetHasNoChunks) {
  const std::string root = Build({}, SnapshotLayout());
  auto reader = Open(root);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->manifest().chunks.empty());
  EXPECT_EQ(reader->manifest().cells, 0);
  EXPECT_EQ(reader->manifest().rows, 0);
  auto cells = reader->ReadRange({{1, 1}, {100, 100}});
  ASSERT_OK(cells);
  EXPECT_TRUE(cells->empty());
  {
    int n = 0;
    ASSERT_OK(reader->ForEach([&](const PlacedCell&) {
      ++n;
      return Status::OK();
    }));
    EXPECT_EQ(n, 0);
  }
  EXPECT_EQ(reader->chunks_fetched(), 0);
  EXPECT_EQ(store_->Stats().objects, 1);  // the manifest alone
}

TEST_F(SnapshotReaderTest, RangeReadsFetchOnlyCoveringChunks) {
  // A dense 3000 x 12 block: many chunks of a few stripes each.
  std::vector<PlacedCell> cells;
  for (int64_t r = 1; r <= 3000; ++r) {
    for (int64_t c = 1; c <= 12; ++c) {
      cells.push_back(PlacedCell{{r, c}, CellOf(CellValue::Number(r * 100 + c))});
    }
  }
  SnapshotLayout layout;
  layout.chunk_bytes = 4096;
  layout.tile_bytes = 512;
  layout.stripe_rows = 16;
  auto reader = Open(Build(cells, layout));
  ASSERT_NE(reader, nullptr);
  const SnapshotManifest& m = reader->manifest();
  ASSERT_GT(m.chunks.size(), 50u);
  EXPECT_EQ(m.cells, 36000);
  EXPECT_EQ(m.rows, 3000);
  EXPECT_EQ(m.cols, 12);

  // Which chunk holds each cell, from the chunk objects themselves.
  std::map<CellRef, size_t> holder;
  for (size_t i = 0; i < m.chunks.size(); ++i) {
    auto object = store_->Get(m.chunks[i].key);
    ASSERT_OK(object);
    EXPECT_LE(static_cast<int64_t>(object->size()), layout.chunk_bytes);
    for (const PlacedCell& c : DecodeWhole(*object)) holder[c.ref] = i;
  }

  std::mt19937_64 rng(3);
  for (int round = 0; round < 40; ++round) {
    int64_t r1 = std::uniform_int_distribution<int64_t>(1, 3100)(rng);
    int64_t r2 = r1 + std::uniform_int_distribution<int64_t>(0, 60)(rng);
    int64_t c1 = std::uniform_int_distribution<int64_t>(1, 14)(rng);
    int64_t c2 = c1 + std::uniform_int_distribution<int64_t>(0, 3)(rng);
    CellRange range{{r1, c1}, {r2, c2}};
    std::vector<PlacedCell> expected;
    std::set<size_t> holding;
    for (const PlacedCell& c : cells) {
      if (range.Contains(c.ref)) {
        expected.push_back(c);
        holding.insert(holder[c.ref]);
      }
    }
    const int64_t before = reader->chunks_fetched();
    auto got = reader->ReadRange(range);
    ASSERT_OK(got);
    EXPECT_EQ(*got, expected) << FormatRange(range);
    const int64_t fetched = reader->chunks_fetched() - before;
    // Every chunk holding a cell of the range is read, once; at most one more chunk
    // whose tile's bounding box (a stripe boundary) meets the range without a cell in it.
    EXPECT_GE(fetched, static_cast<int64_t>(holding.size())) << FormatRange(range);
    EXPECT_LE(fetched, static_cast<int64_t>(holding.size()) + 1) << FormatRange(range);
    if (r1 > 3000 || c1 > 12) {
      EXPECT_EQ(fetched, 0);
    }
  }
  // A one-row read of the middle touches exactly one chunk and a few KB.
  const int64_t bytes_before = reader->bytes_fetched();
  const int64_t before = reader->chunks_fetched();
  auto row = reader->ReadRange({{1500, 1}, {1500, 12}});
  ASSERT_OK(row);
  EXPECT_EQ(row->size(), 12u);
  EXPECT_EQ(reader->chunks_fetched() - before, 1);
  EXPECT_LE(reader->bytes_fetched() - bytes_before, layout.tile_bytes * 2);
}

TEST_F(SnapshotReaderTest, NarrowColumnReadsOfAWideSheetSkipOtherColumns) {
  // 8 rows x 6000 columns: a row spans several chunks; a read of columns 1..5 needs only
  // the chunk (and the tile) holding the start of each row.
  std::vector<PlacedCell> cells;
  for (int64_t r = 1; r <= 8; ++r) {
    for (int64_t c = 1; c <= 6000; ++c) {
      cells.push_back(PlacedCell{{r, c}, CellOf(CellValue::Number(c))});
    }
  }
  SnapshotLayout layout;
  layout.chunk_bytes = 8192;
  layout.tile_bytes = 1024;
  auto reader = Open(Build(cells, layout));
  ASSERT_NE(reader, nullptr);
  auto narrow = reader->ReadRange({{1, 1}, {8, 5}});
  ASSERT_OK(narrow);
  EXPECT_EQ(narrow->size(), 40u);
  const int64_t narrow_fetched = reader->chunks_fetched();
  const int64_t narrow_bytes = reader->bytes_fetched();
  auto wide = reader->ReadRange({{1, 1}, {8, 6000}});
  ASSERT_OK(wide);
  EXPECT_EQ(wide->size(), 48000u);
  const int64_t wide_fetched = reader->chunks_fetched() - narrow_fetched;
  const int64_t wide_bytes = reader->bytes_fetched() - narrow_bytes;
  EXPECT_EQ(wide_fetched, static_cast<int64_t>(reader->manifest().chunks.size()));
  EXPECT_LE(narrow_fetched, 8);  // one chunk per row start
  EXPECT_LT(narrow_fetched * 3, wide_fetched);
  EXPECT_LE(narrow_bytes, 8 * layout.tile_bytes);  // one tile per row start
  EXPECT_LT(narrow_bytes * 20, wide_bytes);
}

TEST_F(SnapshotReaderTest, ScanFromAPositionSkipsEarlierChunks) {
  std::mt19937_64 rng(5);
  std::vector<PlacedCell> cells = RandomCells(rng, 5000, 3, 20);
  SnapshotLayout layout;
  layout.chunk_bytes = 2048;
  layout.tile_bytes = 256;
  layout.stripe_rows = 8;
  auto reader = Open(Build(cells, layout));
  ASSERT_NE(reader, nullptr);
  const size_t chunks = reader->manifest().chunks.size();
  ASSERT_GT(chunks, 20u);
  for (size_t start : {size_t{0}, size_t{1}, cells.size() / 2, cells.size() - 1}) {
    const int64_t before = reader->chunks_fetched();
    auto cursor = reader->Scan(cells[start].ref);
    std::vector<PlacedCell> rest;
    PlacedCell c;
    while (true) {
      auto more = cursor->Next(&c);
      ASSERT_OK(more);
      if (!*more) break;
      rest.push_back(c);
    }
    EXPECT_EQ(rest, std::vector<PlacedCell>(cells.begin() + start + 1, cells.end()));
    const int64_t fetched = reader->chunks_fetched() - before;
    if (start == cells.size() - 1) {
      EXPECT_LE(fetched, 1);
    }
    if (start == cells.size() / 2) {
      EXPECT_LE(fetched, static_cast<int64_t>(chunks / 2 + 2));
    }
  }
}

TEST_F(SnapshotReaderTest, MissingOrDamagedObjectsAreErrors) {
  EXPECT_TRUE(
      SnapshotReader::Open(store_.get(), "snapshots/none/x").status().IsNotFound());
  ASSERT_OK(store_->Put("snapshots/bad/root", "{}"));
  EXPECT_EQ(SnapshotReader::Open(store_.get(), "snapshots/bad/root").status().code(),
            StatusCode::kInvalidArgument);

  std::mt19937_64 rng(9);
  std::vector<PlacedCell> cells = RandomCells(rng, 500, 2, 10);
  SnapshotLayout layout;
  layout.chunk_bytes = 2048;
  layout.tile_bytes = 512;
  auto reader = Open(Build(cells, layout));
  ASSERT_NE(reader, nullptr);
  const ChunkInfo& victim = reader->manifest().chunks[1];
  auto object = store_->Get(victim.key);
  ASSERT_OK(object);
  std::string damaged = *object;
  damaged[damaged.size() / 2] ^= 0x40;
  ASSERT_OK(store_->Put(victim.key, damaged));
  Status scanned = reader->ForEach([](const PlacedCell&) { return Status::OK(); });
  EXPECT_EQ(scanned.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(scanned.message().find(victim.key), std::string::npos);
  ASSERT_OK(store_->Delete(victim.key));
  EXPECT_TRUE(
      reader->ForEach([](const PlacedCell&) { return Status::OK(); }).IsNotFound());
}

}  // namespace
}  // namespace sheetlog
