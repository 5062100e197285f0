// Bounded memory: imports streamed into snapshot builds and reads.
//   - the cursor combinators (ApplyDelta, MergeCursors, SkipThrough) against the
//     in-memory reducer's definitions;
//   - OpenImportCursor: the file's cells at the anchor, in batches, stoppable, errors
//     passed on; an XLSX listing cells out of order is sorted (last write wins) and
//     refused at upload past its cap;
//   - PlanSheet + the builder: a snapshot over replace and merge imports with edits
//     around them, handed off after every chunk, equals the in-memory replay and the
//     objects of one uninterrupted build; reads of the same plan band by band too.
#include <gtest/gtest.h>

#include <map>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "src/sheet/cell_cursor.h"
#include "src/sheet/import_file.h"
#include "src/sheet/sheet.h"
#include "src/snapshot/cells_at.h"
#include "src/snapshot/sheet_plan.h"
#include "src/snapshot/snapshot_reader.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/random_edits.h"
#include "tests/support/spreadsheet_tools.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

using nlohmann::json;
using testing::Random;

class VectorCursor : public CellCursor {
 public:
  explicit VectorCursor(std::vector<PlacedCell> cells) : cells_(std::move(cells)) {}
  Result<bool> Next(PlacedCell* cell) override {
    if (next_ == cells_.size()) return false;
    *cell = cells_[next_++];
    return true;
  }

 private:
  std::vector<PlacedCell> cells_;
  size_t next_ = 0;
};

std::unique_ptr<CellCursor> CursorOver(std::vector<PlacedCell> cells) {
  return std::make_unique<VectorCursor>(std::move(cells));
}

std::vector<PlacedCell> Drain(CellCursor& cursor, Status* status = nullptr) {
  std::vector<PlacedCell> out;
  PlacedCell cell;
  while (true) {
    Result<bool> more = cursor.Next(&cell);
    if (!more.ok()) {
      if (status != nullptr) {
        *status = more.status();
      } else {
        ADD_FAILURE() << more.status().ToString();
      }
      break;
    }
    if (!*more) break;
    out.push_back(cell);
  }
  return out;
}

std::vector<PlacedCell> RandomSheet(Random& rnd, int64_t rows, int64_t cols) {
  Sheet sheet;
  for (int64_t i = rnd.In(0, rows * cols / 2); i > 0; --i) {
    sheet.Apply(SetCellEdit{{rnd.In(1, rows), rnd.In(1, cols)}, rnd.NonEmptyCell()});
  }
  return sheet.Cells();
}

SheetEdit RandomEditWithoutImport(Random& rnd, int64_t rows, int64_t cols) {
  while (true) {
    SheetEdit edit = testing::RandomSmallEdit(rnd, rows, cols);
    if (!std::holds_alternative<ImportEdit>(edit)) return edit;
  }
}

TEST(CellCursorTest, ApplyDeltaStreamsWhatApplyToComputes) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Random rnd(seed);
    const std::vector<PlacedCell> old_cells = RandomSheet(rnd, 30, 8);
    auto delta = std::make_shared<SheetDelta>();
    for (int64_t i = rnd.In(1, 25); i > 0; --i) {
      delta->Apply(RandomEditWithoutImport(rnd, 30, 8));
    }
    auto cursor = ApplyDelta(CursorOver(old_cells), delta);
    EXPECT_EQ(Drain(*cursor), delta->ApplyTo(old_cells)) << "seed " << seed;
  }
}

TEST(CellCursorTest, MergeKeepsEveryCellAndTheTopWinsAndSkipDropsAPrefix) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Random rnd(seed);
    const std::vector<PlacedCell> base = RandomSheet(rnd, 12, 6);
    const std::vector<PlacedCell> top = RandomSheet(rnd, 12, 6);
    std::map<CellRef, Cell> expected;
    for (const PlacedCell& c : base) expected[c.ref] = c.cell;
    for (const PlacedCell& c : top) expected[c.ref] = c.cell;
    std::vector<PlacedCell> want;
    for (const auto& [ref, cell] : expected) want.push_back({ref, cell});
    auto merged = MergeCursors(CursorOver(base), CursorOver(top));
    ASSERT_EQ(Drain(*merged), want) << "seed " << seed;

    const CellRef after{rnd.In(1, 12), rnd.In(1, 6)};
    std::vector<PlacedCell> tail;
    for (const PlacedCell& c : want) {
      if (after < c.ref) tail.push_back(c);
    }
    auto skipped = SkipThrough(MergeCursors(CursorOver(base), CursorOver(top)), after);
    EXPECT_EQ(Drain(*skipped), tail) << "seed " << seed;
  }
}

std::string GridCsv(int64_t rows, int64_t cols) {
  std::string csv;
  for (int64_t r = 1; r <= rows; ++r) {
    for (int64_t c = 1; c <= cols; ++c) {
      if (c > 1) csv += ',';
      if ((r + c) % 5 == 0) continue;  // an empty field: no cell
      csv += (r * c) % 3 == 0 ? "s" + std::to_string(r * 1000 + c)
                              : std::to_string(r * 1000 + c);
    }
    csv += "\r\n";
  }
  return csv;
}

ImportEdit CsvImportAt(CellRef at, ImportEdit::Mode mode = ImportEdit::Mode::kReplace) {
  ImportEdit edit;
  edit.format = ImportEdit::Format::kCsv;
  edit.at = at;
  edit.mode = mode;
  return edit;
}

TEST(ImportCursorTest, StreamsTheFilesCellsAtTheAnchorInBatches) {
  const std::string csv = GridCsv(1500, 9);  // ~10,800 cells: several batches
  const ImportEdit edit = CsvImportAt({3, 2});
  auto file_cells = ReadImportedCells(edit, StringPayloadSource(csv));
  ASSERT_OK(file_cells);
  std::vector<PlacedCell> expected;
  for (const PlacedCell& c : *file_cells) {
    expected.push_back({{c.ref.row + 2, c.ref.col + 1}, c.cell});
  }
  ASSERT_GT(expected.size(), 10000u);
  auto cursor = OpenImportCursor(edit, std::make_unique<StringPayloadSource>(csv));
  EXPECT_EQ(Drain(*cursor), expected);
}

TEST(ImportCursorTest, ClosingEarlyStopsTheParserAndAnErrorIsPassedOn) {
  const std::string csv = GridCsv(3000, 9);
  {
    auto cursor =
        OpenImportCursor(CsvImportAt({1, 1}), std::make_unique<StringPayloadSource>(csv));
    PlacedCell cell;
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(*cursor->Next(&cell));
    EXPECT_EQ(cell.ref, (CellRef{2, 4}));  // row 1 holds 7 cells (two fields empty)
  }  // the parser thread, blocked handing over a batch, is stopped and joined

  const std::string bad = csv + "\"never closed,1\n";
  auto cursor =
      OpenImportCursor(CsvImportAt({1, 1}), std::make_unique<StringPayloadSource>(bad));
  Status status;
  std::vector<PlacedCell> read = Drain(*cursor, &status);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("line 3001"), std::string::npos) << status.ToString();
  PlacedCell cell;
  EXPECT_FALSE(cursor->Next(&cell).ok());  // and stays failed
}

TEST(ImportCursorTest, XlsxListingCellsOutOfOrderIsSortedAndCappedAtUpload) {
  testing::TempDir dir;
  const std::string sheet_xml = R"(<?xml version="1.0"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
<row r="3"><c r="B3"><v>3</v></c></row>
<row r="1"><c r="C1"><v>1</v></c><c r="A1"><v>2</v></c></row>
<row r="3"><c r="B3"><v>4</v></c></row>
</sheetData></worksheet>)";
  const std::string path = dir.File("unordered.xlsx");
  ASSERT_EQ(testing::PythonZip(path, testing::MinimalXlsxParts(sheet_xml)), "");
  const std::string bytes = testing::ReadFileBytes(path);
  ImportEdit edit;
  edit.format = ImportEdit::Format::kXlsx;
  edit.at = {1, 1};
  auto cursor = OpenImportCursor(edit, std::make_unique<StringPayloadSource>(bytes));
  const std::vector<PlacedCell> expected = {
      {{1, 1}, Cell{CellValue::Number(2), ""}},
      {{1, 3}, Cell{CellValue::Number(1), ""}},
      {{3, 2}, Cell{CellValue::Number(4), ""}},  // the later of two writes
  };
  EXPECT_EQ(Drain(*cursor), expected);

  StringPayloadSource source(bytes);
  EXPECT_OK(CheckImportPayload(edit, source));
  ImportLimits limits;
  limits.max_unordered_cells = 3;
  Status refused = CheckImportPayload(edit, source, limits);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("out of row order"), std::string::npos)
      << refused.ToString();
  // The same cells in order are not capped by that limit.
  const std::string csv = "1,2,3\n4,5,6\n";
  EXPECT_OK(CheckImportPayload(CsvImportAt({1, 1}), StringPayloadSource(csv), limits));
}

// --- Snapshots and reads over imports -------------------------------------------------

class ImportSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenTestBlobStore(dir_.File("blobs"), &clock_);
    ASSERT_NE(store_, nullptr);
  }

  EntryRecord Entry(const SheetEdit& edit) {
    EntryRecord e;
    e.seq = ++seq_;
    e.type = std::string(EditTypeName(edit));
    e.body = EncodeEditBody(edit).dump();
    return e;
  }

  EntryRecord ImportEntry(const ImportEdit& edit, const std::string& csv) {
    EntryRecord e = Entry(edit);
    e.external = "payloads/" + std::to_string(e.seq) + ".csv";
    EXPECT_OK(store_->Put(*e.external, csv));
    return e;
  }

  // The sheet after `entries` over `previous` (cells), by the in-memory reducer.
  std::vector<PlacedCell> Replay(const std::vector<PlacedCell>& previous,
                                 const std::vector<EntryRecord>& entries) {
    Sheet sheet;
    for (const PlacedCell& c : previous) sheet.Apply(SetCellEdit{c.ref, c.cell});
    auto edits = EditsOfEntries(entries, store_.get());
    EXPECT_OK(edits);
    for (const SheetEdit& edit : *edits) sheet.Apply(edit);
    return sheet.Cells();
  }

  std::vector<PlacedCell> ReadAll(const std::string& root) {
    auto reader = SnapshotReader::Open(store_.get(), root);
    EXPECT_OK(reader);
    std::vector<PlacedCell> cells;
    EXPECT_OK((*reader)->ForEach([&](const PlacedCell& c) {
      cells.push_back(c);
      return Status::OK();
    }));
    return cells;
  }

  // Builds `id` from `plan`, a new builder resuming from the checkpoint for every chunk
  // (a hand-off after each, as a worker near its time budget does).
  std::string BuildHandingOff(const SnapshotId& id, const SheetPlan& plan,
                              int64_t* chunks) {
    json checkpoint = nullptr;
    *chunks = 0;
    while (true) {
      SnapshotBuilder::Options options;
      options.layout = testing::SmallSnapshotLayout();
      auto builder = NewSnapshotBuilder(store_.get(), id, plan, options);
      if (!checkpoint.is_null()) {
        EXPECT_OK(builder->Resume(checkpoint));
      }
      Result<bool> done = builder->WriteNextChunk();
      EXPECT_OK(done);
      if (!done.ok()) return "";
      ++*chunks;
      checkpoint = builder->Checkpoint();
      if (*done) {
        Result<std::string> root = builder->Finish();
        EXPECT_OK(root);
        return root.ok() ? *root : "";
      }
    }
  }

  std::map<std::string, std::string> Objects(const std::string& prefix) {
    std::map<std::string, std::string> objects;
    BlobListOptions list;
    list.prefix = prefix;
    auto page = store_->List(list);
    EXPECT_OK(page);
    for (const BlobInfo& info : page->keys) objects[info.key] = *store_->Get(info.key);
    return objects;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<BlobStore> store_;
  int64_t seq_ = 0;
};

TEST_F(ImportSnapshotTest, SnapshotOverImportsEqualsReplayAndHandsOffAtEveryChunk) {
  int64_t total_chunks = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Random rnd(seed);
    // The previous snapshot: random cells.
    std::vector<EntryRecord> first;
    for (int i = 0; i < 60; ++i)
      first.push_back(Entry(RandomEditWithoutImport(rnd, 40, 8)));
    const std::vector<PlacedCell> previous_cells = Replay({}, first);
    SnapshotBuilder::Options options;
    options.layout = testing::SmallSnapshotLayout();
    auto first_plan = PlanSheet(store_.get(), std::nullopt, first);
    ASSERT_OK(first_plan);
    SnapshotId first_id{"sheet", 0, seq_, seq_};
    auto first_builder = NewSnapshotBuilder(store_.get(), first_id, *first_plan, options);
    while (!*first_builder->WriteNextChunk()) {
    }
    const std::string previous_root = *first_builder->Finish();
    ASSERT_EQ(ReadAll(previous_root), previous_cells);

    // Then edits, a merge import, edits, (sometimes) a replace import, edits, another
    // merge: every way the stages combine.
    std::vector<EntryRecord> since;
    auto some_edits = [&] {
      for (int i = rnd.In(0, 8); i > 0; --i) {
        since.push_back(Entry(RandomEditWithoutImport(rnd, 40, 8)));
      }
    };
    some_edits();
    since.push_back(
        ImportEntry(CsvImportAt({rnd.In(1, 20), rnd.In(1, 4)}, ImportEdit::Mode::kMerge),
                    GridCsv(rnd.In(30, 80), rnd.In(3, 8))));
    some_edits();
    if (seed % 2 == 0) {
      since.push_back(ImportEntry(CsvImportAt({rnd.In(1, 5), rnd.In(1, 3)}),
                                  GridCsv(rnd.In(60, 150), rnd.In(3, 8))));
      some_edits();
    }
    since.push_back(
        ImportEntry(CsvImportAt({rnd.In(1, 30), rnd.In(1, 6)}, ImportEdit::Mode::kMerge),
                    GridCsv(rnd.In(10, 40), rnd.In(1, 5))));
    some_edits();
    const std::vector<PlacedCell> expected = Replay(previous_cells, since);

    auto plan = PlanSheet(store_.get(), previous_root, since);
    ASSERT_OK(plan);
    ASSERT_TRUE(plan->base) << "an import among the entries makes a streamed base";
    SnapshotId id{"sheet", 0, seq_ + 1, seq_ + 1};
    const std::string prefix = SnapshotKeyPrefix("sheet");
    const auto existing = Objects(prefix);
    auto made_since = [&] {
      auto objects = Objects(prefix);
      for (const auto& [key, body] : existing) objects.erase(key);
      return objects;
    };
    int64_t chunks = 0;
    const std::string root = BuildHandingOff(id, *plan, &chunks);
    ASSERT_EQ(ReadAll(root), expected) << "seed " << seed;
    total_chunks += chunks;

    // One uninterrupted build into a fresh store writes the same objects.
    const auto handed_off = made_since();
    ASSERT_GE(static_cast<int64_t>(handed_off.size()), chunks);  // chunks and a root
    for (const auto& [key, body] : handed_off) ASSERT_OK(store_->Delete(key));
    auto builder = NewSnapshotBuilder(store_.get(), id, *plan, options);
    while (!*builder->WriteNextChunk()) {
    }
    ASSERT_OK(builder->Finish());
    EXPECT_EQ(made_since(), handed_off) << "seed " << seed;

    // Reads of the same sheet from the plan: band by band (one pass over the files)
    // and a range out of order (the stream starts over).
    StreamRegionReader stream(plan->base);
    std::vector<PlacedCell> banded;
    for (int64_t row = 1; row <= 210; row += 7) {
      auto band = CellsInRange(&stream, plan->delta, CellRange{{row, 1}, {row + 6, 20}});
      ASSERT_OK(band);
      banded.insert(banded.end(), band->begin(), band->end());
    }
    std::vector<PlacedCell> expected_banded;
    for (const PlacedCell& c : expected) {
      if (c.ref.row <= 216 && c.ref.col <= 20) expected_banded.push_back(c);
    }
    EXPECT_EQ(banded, expected_banded) << "seed " << seed;
    const CellRange middle{{5, 2}, {9, 4}};
    auto again = CellsInRange(&stream, plan->delta, middle);
    ASSERT_OK(again);
    std::vector<PlacedCell> expected_middle;
    for (const PlacedCell& c : expected) {
      if (middle.Contains(c.ref)) expected_middle.push_back(c);
    }
    EXPECT_EQ(*again, expected_middle) << "seed " << seed;
  }
  EXPECT_GT(total_chunks, 12);  // so builds were handed off many times
}

TEST_F(ImportSnapshotTest, PlanWithoutImportsKeepsTheSnapshotAsItsBase) {
  std::vector<EntryRecord> entries = {
      Entry(SetCellEdit{{1, 1}, Cell{CellValue::Number(1), ""}})};
  auto plan = PlanSheet(store_.get(), std::string("some/root"), entries);
  ASSERT_OK(plan);
  EXPECT_FALSE(plan->base);
  EXPECT_EQ(plan->previous_root, "some/root");
  EXPECT_EQ(plan->delta.overlay().size(), 1u);
}

}  // namespace
}  // namespace sheetlog
