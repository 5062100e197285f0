// The snapshot builder: round trips, incremental chains against the in-memory reducer,
// determinism of keys and bytes, resuming from every checkpoint, concurrent duplicates,
// and CellsInRange (the cells of a sheet at a seq from a snapshot plus later edits).
#include "src/snapshot/snapshot_builder.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/json_text.h"
#include "src/sheet/sheet.h"
#include "src/snapshot/cells_at.h"
#include "src/snapshot/snapshot_reader.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

using nlohmann::json;

std::unique_ptr<BlobStore> OpenStore(const std::string& root, Clock* clock) {
  return testing::OpenTestBlobStore(root, clock);
}

// Every object of the store: key -> body.
std::map<std::string, std::string> AllObjects(BlobStore* store) {
  std::map<std::string, std::string> objects;
  BlobListOptions list;
  while (true) {
    auto page = store->List(list);
    EXPECT_OK(page);
    if (!page.ok()) break;
    for (const BlobInfo& info : page->keys) {
      auto body = store->Get(info.key);
      EXPECT_OK(body);
      objects[info.key] = body.ok() ? *body : "";
    }
    if (!page->continuation) break;
    list.continuation = *page->continuation;
  }
  return objects;
}

SnapshotLayout SmallLayout() { return testing::SmallSnapshotLayout(); }

// Random edits within a rows x cols area (so they collide often), every built-in kind.
class EditGenerator {
 public:
  EditGenerator(uint64_t seed, int64_t rows, int64_t cols, bool replacing_imports = true)
      : rng_(seed), rows_(rows), cols_(cols), replacing_imports_(replacing_imports) {}

  Cell RandomCell() {
    Cell cell;
    switch (rng_() % 7) {
      case 0:
        break;  // empty: a clear
      case 1:
        cell.value = CellValue::Number(static_cast<double>(Int(-1000, 1000)));
        break;
      case 2:
        cell.value = CellValue::Number(Int(-1000000, 1000000) / 7.0);
        break;
      case 3:
        cell.value = CellValue::Boolean(rng_() % 2 == 0);
        break;
      case 4:
        cell.format = "0.0%";
        break;
      default:
        cell.value = CellValue::String(std::string(Int(1, 30), 'a' + rng_() % 26));
        if (rng_() % 3 == 0) cell.format = "@";
        break;
    }
    return cell;
  }

  CellRef RandomRef() { return {Int(1, rows_), Int(1, cols_)}; }

  SheetEdit Next() {
    switch (rng_() % 20) {
      case 0:
      case 1: {
        InsertRowsEdit e{Int(0, rows_), Int(1, 4), {}};
        if (rng_() % 2) e.values.emplace_back(Int(1, cols_), RandomCell());
        return e;
      }
      case 2:
      case 3:
        return DeleteRowsEdit{Int(1, rows_), Int(1, 4)};
      case 4:
        return InsertColumnsEdit{Int(0, cols_), Int(1, 2)};
      case 5:
        return DeleteColumnsEdit{Int(1, cols_), Int(1, 2)};
      case 6: {
        if (rng_() % 4 != 0) break;  // imports are rarer
        ImportEdit e;
        e.at = RandomRef();
        e.mode = replacing_imports_ && rng_() % 2 ? ImportEdit::Mode::kReplace
                                                  : ImportEdit::Mode::kMerge;
        auto cells = std::make_shared<ImportedCells>();
        for (int64_t r = 1; r <= Int(1, 6); ++r) {
          for (int64_t c = 1; c <= Int(1, 4); ++c)
            cells->push_back({{r, c}, RandomCell()});
        }
        e.cells = cells;
        return e;
      }
      case 7: {
        SetCellsEdit e;
        e.form = SetCellsEdit::Form::kRows;
        e.at = RandomRef();
        e.rows.assign(Int(1, 5), std::vector<Cell>());
        for (auto& row : e.rows) {
          for (int64_t c = Int(1, 4); c > 0; --c) row.push_back(RandomCell());
        }
        return e;
      }
      case 8: {
        SetCellsEdit e;
        std::map<CellRef, Cell> cells;
        for (int i = Int(1, 8); i > 0; --i) cells[RandomRef()] = RandomCell();
        for (auto& [ref, cell] : cells) e.cells.push_back({ref, cell});
        return e;
      }
      case 9:
        return SetCellValueAndFormatEdit{RandomRef(), RandomCell()};
      default:
        break;
    }
    return SetCellEdit{RandomRef(), RandomCell()};
  }

  int64_t Int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  std::mt19937_64 rng_;
  int64_t rows_;
  int64_t cols_;
  bool replacing_imports_;
};

class SnapshotBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = OpenStore(dir_.File("blobs"), &clock_); }

  // Builds to the end; returns the root key.
  std::string BuildAll(BlobStore* store, const SnapshotId& id,
                       const std::optional<std::string>& previous,
                       const SheetDelta& delta, const SnapshotLayout& layout,
                       SnapshotBuilder** out = nullptr) {
    auto builder = std::make_unique<SnapshotBuilder>(store, id, previous, delta,
                                                     SnapshotBuilder::Options{layout});
    while (true) {
      Result<bool> done = builder->WriteNextChunk();
      EXPECT_OK(done);
      if (!done.ok() || *done) break;
    }
    Result<std::string> root = builder->Finish();
    EXPECT_OK(root);
    if (out != nullptr) {
      last_builder_ = std::move(builder);
      *out = last_builder_.get();
    }
    return root.ok() ? *root : "";
  }

  std::vector<PlacedCell> ReadAll(BlobStore* store, const std::string& root) {
    std::vector<PlacedCell> cells;
    auto reader = SnapshotReader::Open(store, root);
    EXPECT_OK(reader);
    if (!reader.ok()) return cells;
    Status s = (*reader)->ForEach([&](const PlacedCell& c) {
      cells.push_back(c);
      return Status::OK();
    });
    EXPECT_OK(s);
    return cells;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<BlobStore> store_;
  std::unique_ptr<SnapshotBuilder> last_builder_;
};

TEST_F(SnapshotBuilderTest, RoundTripsRandomSheetsBuiltFromEmpty) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    EditGenerator gen(seed, 400, 40);
    Sheet sheet;
    SheetDelta delta;
    for (int i = 0; i < 3000; ++i) {
      SetCellEdit edit{gen.RandomRef(), gen.RandomCell()};
      sheet.Apply(edit);
      delta.Apply(edit);
    }
    SnapshotLayout layout = SmallLayout();
    layout.chunk_bytes = seed % 2 ? 1024 : 1 << 20;
    SnapshotBuilder* builder = nullptr;
    SnapshotId id{"sheet", 0, static_cast<int64_t>(seed), static_cast<int64_t>(seed)};
    const std::string root =
        BuildAll(store_.get(), id, std::nullopt, delta, layout, &builder);
    ASSERT_EQ(ReadAll(store_.get(), root), sheet.Cells()) << "seed " << seed;
    const SnapshotManifest& m = builder->manifest();
    EXPECT_EQ(m.cells, static_cast<int64_t>(sheet.CellCount()));
    auto used = sheet.UsedRange();
    ASSERT_TRUE(used.has_value());
    EXPECT_EQ(m.rows, used->last.row);
    EXPECT_EQ(m.cols, used->last.col);
    for (const ChunkInfo& chunk : m.chunks) {
      auto info = store_->Head(chunk.key);
      ASSERT_OK(info);
      EXPECT_EQ(info->size, chunk.bytes);
      EXPECT_LE(info->size, layout.chunk_bytes);  // no cell here is near 1 KiB
    }
    if (seed % 2) {
      EXPECT_GT(m.chunks.size(), 20u);
    }
  }
}

TEST_F(SnapshotBuilderTest, IncrementalChainEqualsReplayAtEveryStep) {
  for (uint64_t seed = 100; seed < 110; ++seed) {
    EditGenerator gen(seed, 120, 16);
    Sheet sheet;
    std::optional<std::string> previous;
    std::vector<PlacedCell> previous_cells;
    for (int64_t step = 1; step <= 14; ++step) {
      SheetDelta delta;
      std::vector<SheetEdit> batch;
      for (int64_t i = gen.Int(step == 1 ? 200 : 1, step == 1 ? 400 : 40); i > 0; --i) {
        batch.push_back(gen.Next());
        sheet.Apply(batch.back());
        delta.Apply(batch.back());
      }
      SnapshotId id{"sheet", 0, step * 10, step * 10};
      const std::string root = BuildAll(store_.get(), id, previous, delta, SmallLayout());
      std::vector<PlacedCell> cells = ReadAll(store_.get(), root);
      ASSERT_EQ(cells, sheet.Cells()) << "seed " << seed << " step " << step;

      // The cells at this step from the previous snapshot plus this batch, range by
      // range, equal the reducer's.
      std::unique_ptr<SnapshotReader> prev_reader;
      if (previous) {
        auto opened = SnapshotReader::Open(store_.get(), *previous);
        ASSERT_OK(opened);
        prev_reader = std::move(opened).value();
      }
      for (int k = 0; k < 5; ++k) {
        CellRef a = gen.RandomRef(), b = gen.RandomRef();
        CellRange range{{std::min(a.row, b.row), std::min(a.col, b.col)},
                        {std::max(a.row, b.row) + 5, std::max(a.col, b.col)}};
        auto got = CellsInRange(prev_reader.get(), batch, range);
        ASSERT_OK(got);
        std::vector<PlacedCell> expected;
        sheet.ForEachCell([&](const CellRef& ref, const Cell& cell) {
          if (range.Contains(ref)) expected.push_back({ref, cell});
        });
        ASSERT_EQ(*got, expected)
            << "seed " << seed << " step " << step << " range " << FormatRange(range);
      }
      previous = root;
      previous_cells = std::move(cells);
    }
  }
}

TEST_F(SnapshotBuilderTest, RepeatedBuildWritesTheSameKeysAndBytes) {
  EditGenerator gen(5, 300, 20, /*replacing_imports=*/false);
  SheetDelta delta;
  for (int i = 0; i < 2000; ++i) delta.Apply(gen.Next());
  SnapshotId id{"sheet", 1, 7, 107};
  const std::string root = BuildAll(store_.get(), id, std::nullopt, delta, SmallLayout());
  EXPECT_EQ(root, SnapshotRootKey(id));
  const auto first = AllObjects(store_.get());
  ASSERT_GT(first.size(), 5u);
  // Again in the same store: nothing new, nothing changed.
  EXPECT_EQ(BuildAll(store_.get(), id, std::nullopt, delta, SmallLayout()), root);
  EXPECT_EQ(AllObjects(store_.get()), first);
  // And in another store: the same keys and bytes.
  auto other = OpenStore(dir_.File("other"), &clock_);
  EXPECT_EQ(BuildAll(other.get(), id, std::nullopt, delta, SmallLayout()), root);
  EXPECT_EQ(AllObjects(other.get()), first);
  // Another layout writes other chunk keys (never overwriting these) and the same root.
  SnapshotLayout bigger = SmallLayout();
  bigger.chunk_bytes = 4096;
  EXPECT_EQ(BuildAll(other.get(), id, std::nullopt, delta, bigger), root);
  const auto both = AllObjects(other.get());
  for (const auto& [key, body] : first) {
    if (key != root) {
      EXPECT_EQ(both.at(key), body);
    }
  }
  EXPECT_GT(both.size(), first.size());
}

TEST_F(SnapshotBuilderTest, ConcurrentDuplicatesWriteIdenticalObjects) {
  EditGenerator gen(8, 200, 12, /*replacing_imports=*/false);
  SheetDelta delta;
  for (int i = 0; i < 1500; ++i) delta.Apply(gen.Next());
  SnapshotId id{"sheet", 0, 3, 3};
  auto reference_store = OpenStore(dir_.File("reference"), &clock_);
  BuildAll(reference_store.get(), id, std::nullopt, delta, SmallLayout());
  const auto expected = AllObjects(reference_store.get());

  // Two invocations interleaving chunk by chunk, one a chunk behind the other.
  SnapshotBuilder a(store_.get(), id, std::nullopt, delta, {SmallLayout()});
  SnapshotBuilder b(store_.get(), id, std::nullopt, delta, {SmallLayout()});
  ASSERT_OK(a.WriteNextChunk());
  bool a_done = false, b_done = false;
  while (!a_done || !b_done) {
    if (!b_done) b_done = *b.WriteNextChunk();
    if (!a_done) a_done = *a.WriteNextChunk();
  }
  ASSERT_OK(b.Finish());
  ASSERT_OK(a.Finish());
  EXPECT_EQ(AllObjects(store_.get()), expected);
}

TEST_F(SnapshotBuilderTest, ResumingFromEveryCheckpointGivesIdenticalObjects) {
  // Snapshot 1 from nothing, then snapshot 2 from snapshot 1 plus structural edits, so
  // that the resumed build walks a previous snapshot through a transform and overlay.
  EditGenerator gen(21, 300, 14, /*replacing_imports=*/false);
  SheetDelta first, second;
  for (int i = 0; i < 1500; ++i)
    first.Apply(SetCellEdit{gen.RandomRef(), gen.RandomCell()});
  for (int i = 0; i < 60; ++i) second.Apply(gen.Next());
  const SnapshotId id1{"sheet", 0, 0, 0}, id2{"sheet", 0, 50, 50};
  const SnapshotLayout layout = SmallLayout();

  auto reference = OpenStore(dir_.File("reference"), &clock_);
  const std::string root1 = BuildAll(reference.get(), id1, std::nullopt, first, layout);
  SnapshotBuilder* uninterrupted = nullptr;
  BuildAll(reference.get(), id2, root1, second, layout, &uninterrupted);
  const int64_t chunks = uninterrupted->chunks_written();
  ASSERT_GT(chunks, 10);
  const auto expected = AllObjects(reference.get());

  for (int64_t k = 0; k <= chunks; ++k) {
    testing::TempDir dir;
    auto store = OpenStore(dir.File("blobs"), &clock_);
    ASSERT_EQ(BuildAll(store.get(), id1, std::nullopt, first, layout), root1);
    std::string saved;
    {
      SnapshotBuilder builder(store.get(), id2, root1, second, {layout});
      saved = builder.Checkpoint().dump();  // before anything: a valid start
      for (int64_t i = 0; i < k; ++i) {
        auto done = builder.WriteNextChunk();
        ASSERT_OK(done);
        saved = builder.Checkpoint().dump();
        ASSERT_LT(saved.size(), 600u);  // small, whatever the sheet
      }
    }  // the invocation dies here
    SnapshotBuilder resumed(store.get(), id2, root1, second, {layout});
    Status s = resumed.Resume(ParseJson(saved));
    ASSERT_OK(s);
    EXPECT_EQ(resumed.chunks_written(), k);
    while (true) {
      auto done = resumed.WriteNextChunk();
      ASSERT_OK(done);
      if (*done) break;
    }
    ASSERT_OK(resumed.Finish());
    EXPECT_EQ(resumed.manifest(), uninterrupted->manifest()) << "k = " << k;
    ASSERT_EQ(AllObjects(store.get()), expected)
        << "interrupted after " << k << " chunks";
  }
}

TEST_F(SnapshotBuilderTest, ResumeRefusesACheckpointOfAnotherBuild) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{{1, 1}, Cell{CellValue::Number(1), ""}});
  SnapshotId id{"sheet", 0, 5, 5};
  SnapshotBuilder builder(store_.get(), id, std::nullopt, delta, {SmallLayout()});
  ASSERT_TRUE(*builder.WriteNextChunk());
  const json checkpoint = builder.Checkpoint();
  EXPECT_TRUE(checkpoint["done"].get<bool>());

  SnapshotLayout other_layout = SmallLayout();
  other_layout.tile_bytes = 100;
  SnapshotBuilder wrong_layout(store_.get(), id, std::nullopt, delta, {other_layout});
  EXPECT_EQ(wrong_layout.Resume(checkpoint).code(), StatusCode::kInvalidArgument);
  SnapshotBuilder wrong_id(store_.get(), {"sheet", 0, 6, 6}, std::nullopt, delta,
                           {SmallLayout()});
  EXPECT_EQ(wrong_id.Resume(checkpoint).code(), StatusCode::kInvalidArgument);
  SnapshotBuilder wrong_previous(store_.get(), id, "snapshots/sheet/x", delta,
                                 {SmallLayout()});
  EXPECT_EQ(wrong_previous.Resume(checkpoint).code(), StatusCode::kInvalidArgument);
  SnapshotBuilder garbage(store_.get(), id, std::nullopt, delta, {SmallLayout()});
  EXPECT_EQ(garbage.Resume(json{{"v", 1}}).code(), StatusCode::kInvalidArgument);

  // A finished checkpoint resumes straight to Finish, with the same root bytes.
  const auto before = AllObjects(store_.get());
  SnapshotBuilder again(store_.get(), id, std::nullopt, delta, {SmallLayout()});
  ASSERT_OK(again.Resume(checkpoint));
  EXPECT_EQ(again.Finish().status().code(), StatusCode::kOk);
  auto after = AllObjects(store_.get());
  ASSERT_EQ(after.size(), before.size() + 1);  // the chunk unchanged, plus the root
  for (const auto& [key, body] : before) EXPECT_EQ(after.at(key), body);
  EXPECT_EQ(SnapshotManifest::FromJson(after.at(SnapshotRootKey(id)))->cells, 1);

  // A checkpoint counting a chunk that is gone cannot resume.
  ASSERT_OK(store_->Delete(builder.manifest().chunks[0].key));
  SnapshotBuilder lost(store_.get(), id, std::nullopt, delta, {SmallLayout()});
  EXPECT_TRUE(lost.Resume(checkpoint).IsNotFound());

  // Finish before the chunks are written is refused.
  SnapshotBuilder early(store_.get(), {"sheet", 0, 9, 9}, std::nullopt, delta,
                        {SmallLayout()});
  EXPECT_EQ(early.Finish().status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(SnapshotBuilderTest, ReplacingImportDoesNotReadThePreviousSnapshot) {
  SheetDelta first;
  for (int64_t r = 1; r <= 500; ++r)
    first.Apply(SetCellEdit{{r, 1}, Cell{CellValue::Number(r), ""}});
  const std::string root1 =
      BuildAll(store_.get(), {"sheet", 0, 0, 0}, std::nullopt, first, SmallLayout());
  SheetDelta second;
  ImportEdit import;
  import.at = {2, 2};
  import.mode = ImportEdit::Mode::kReplace;
  import.cells =
      std::make_shared<ImportedCells>(ImportedCells{{{1, 1},
                                                     Cell {
                                                       CellValue::String("x"),
                                                       ""
                                                     }},
                                                    { {2, 1},
                                                      Cell {
                                                        CellValue::Boolean(true),
                                                        ""
                                                      } }});
  second.Apply(import);
  second.Apply(SetCellEdit{{1, 1}, Cell{CellValue::Number(7), ""}});
  SnapshotBuilder* builder = nullptr;
  const std::string root2 =
      BuildAll(store_.get(), {"sheet", 0, 9, 9}, root1, second, SmallLayout(), &builder);
  EXPECT_EQ(builder->previous(), nullptr);  // never opened
  EXPECT_EQ(ReadAll(store_.get(), root2),
            (std::vector<PlacedCell>{{{1, 1}, Cell{CellValue::Number(7), ""}},
                                     {{2, 2}, Cell{CellValue::String("x"), ""}},
                                     {{3, 2}, Cell{CellValue::Boolean(true), ""}}}));
}

TEST_F(SnapshotBuilderTest, InsertsMoveCellsAcrossChunksInOrder) {
  // A tall column; inserting many rows near the top and deleting some near the bottom
  // moves every later cell into other stripes and chunks.
  SheetDelta first;
  Sheet sheet;
  for (int64_t r = 1; r <= 3000; ++r) {
    SetCellEdit e{{r, 1 + r % 3}, Cell{CellValue::Number(r), ""}};
    first.Apply(e);
    sheet.Apply(e);
  }
  const std::string root1 =
      BuildAll(store_.get(), {"sheet", 0, 0, 0}, std::nullopt, first, SmallLayout());
  SheetDelta second;
  std::vector<SheetEdit> edits{InsertRowsEdit{10, 1000000, {}},
                               DeleteRowsEdit{1002500, 300}, InsertColumnsEdit{0, 2},
                               SetCellEdit{{5, 5}, Cell{CellValue::String("new"), ""}},
                               DeleteRowsEdit{1, 3}};
  for (const SheetEdit& e : edits) {
    second.Apply(e);
    sheet.Apply(e);
  }
  SnapshotBuilder* builder = nullptr;
  const std::string root2 =
      BuildAll(store_.get(), {"sheet", 0, 9, 9}, root1, second, SmallLayout(), &builder);
  EXPECT_EQ(ReadAll(store_.get(), root2), sheet.Cells());
  // Each chunk of the previous snapshot was fetched exactly once.
  auto prev = SnapshotReader::Open(store_.get(), root1);
  ASSERT_OK(prev);
  EXPECT_EQ(builder->previous()->chunks_fetched(),
            static_cast<int64_t>((*prev)->manifest().chunks.size()));
}

TEST_F(SnapshotBuilderTest, CellsInRangeFetchesOnlyWhatTheMappedRangeNeeds) {
  SheetDelta first;
  Sheet sheet;
  for (int64_t r = 1; r <= 4000; ++r) {
    for (int64_t c = 1; c <= 5; ++c) {
      SetCellEdit e{{r, c}, Cell{CellValue::Number(r * 10 + c), c == 2 ? "0.0" : ""}};
      first.Apply(e);
      sheet.Apply(e);
    }
  }
  const std::string root =
      BuildAll(store_.get(), {"sheet", 0, 0, 0}, std::nullopt, first, SmallLayout());
  auto reader = SnapshotReader::Open(store_.get(), root);
  ASSERT_OK(reader);
  ASSERT_GT((*reader)->manifest().chunks.size(), 100u);
  // Rows 3000.. now live a million rows further down, column B is gone, and two writes.
  std::vector<SheetEdit> after{
      InsertRowsEdit{2999, 1000000, {}}, DeleteColumnsEdit{2, 1},
      SetCellEdit{{1003001, 1}, Cell{CellValue::String("w"), ""}},
      SetCellEdit{{1003002, 2}, Cell{}}};
  for (const SheetEdit& e : after) sheet.Apply(e);
  const CellRange range{{1002995, 1}, {1003010, 3}};
  auto got = CellsInRange(reader->get(), after, range);
  ASSERT_OK(got);
  std::vector<PlacedCell> expected;
  sheet.ForEachCell([&](const CellRef& ref, const Cell& cell) {
    if (range.Contains(ref)) expected.push_back({ref, cell});
  });
  EXPECT_EQ(*got, expected);
  EXPECT_EQ(got->size(), 11u * 3 - 1);
  EXPECT_LE((*reader)->chunks_fetched(), 2);  // source rows 3000..3010 only

  // The dense grid of GET .../cells.
  auto grid = RangeValuesOf(range, *got);
  ASSERT_OK(grid);
  ASSERT_EQ(grid->values.size(), 16u);
  EXPECT_TRUE(grid->values[0][0].is_null());  // inserted rows are empty
  EXPECT_EQ(grid->values[6][0], CellValue::String("w"));
  EXPECT_EQ(grid->values[6][1], CellValue::Number(30013));  // old column C moved to B
  EXPECT_FALSE(grid->has_formats);  // the formatted column B was deleted
  EXPECT_EQ(RangeValuesOf({{1, 1}, {3000, 3000}}, {}, 1000000).status().code(),
            StatusCode::kInvalidArgument);
  auto formatted =
      RangeValuesOf({{1, 1}, {1, 2}}, {{{1, 2}, Cell{CellValue::Null(), "0%"}}});
  ASSERT_OK(formatted);
  EXPECT_TRUE(formatted->has_formats);
  EXPECT_EQ(formatted->formats[0][1], "0%");
  EXPECT_EQ(formatted->formats[0][0], "");
}

}  // namespace
}  // namespace sheetlog
