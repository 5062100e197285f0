// Fuzzes the CSV import parser (src/sheet/csv.h). Whatever the input: no crash, OK or
// InvalidArgument naming line and field, cells in file order inside the grid, none
// empty, strings valid UTF-8, and the same cells and the same status whether the file
// arrives whole, byte by byte or in uneven pieces (uploads stream it in pieces).
#include <gtest/gtest.h>

#include <vector>

#include "src/sheet/csv.h"
#include "src/sheet/sheet_edit.h"
#include "tests/support/fuzz_inputs.h"

namespace sheetlog::testing {
namespace {

constexpr size_t kMaxCsvMessageBytes = 1024;

struct Parsed {
  Status status;
  std::vector<PlacedCell> cells;
};

// Feeds `bytes` in pieces of `piece` bytes (0 = whole).
Parsed Parse(const std::string& bytes, size_t piece) {
  Parsed out;
  CsvParser parser([&](const CellRef& ref, Cell cell) {
    out.cells.push_back({ref, std::move(cell)});
    return Status::OK();
  });
  const size_t step = piece == 0 ? bytes.size() + 1 : piece;
  for (size_t at = 0; at < bytes.size() && out.status.ok(); at += step) {
    out.status = parser.Feed(std::string_view(bytes).substr(at, step));
  }
  if (out.status.ok()) out.status = parser.Finish();
  return out;
}

void CheckCsv(const std::string& bytes) {
  const Parsed whole = Parse(bytes, 0);
  if (!whole.status.ok()) {
    EXPECT_EQ(whole.status.code(), StatusCode::kInvalidArgument)
        << whole.status.ToString();
    EXPECT_EQ(whole.status.message().rfind("CSV line ", 0), 0u) << whole.status.message();
    EXPECT_LE(whole.status.message().size(), kMaxCsvMessageBytes);
  }
  EXPECT_LE(whole.cells.size(), bytes.size() + 1);
  for (size_t i = 0; i < whole.cells.size(); ++i) {
    const PlacedCell& placed = whole.cells[i];
    ASSERT_TRUE(InGrid(placed.ref)) << placed.ref.row << "," << placed.ref.col;
    if (i > 0) {
      ASSERT_LT(whole.cells[i - 1].ref, placed.ref) << "cells out of file order at " << i;
    }
    EXPECT_FALSE(placed.cell.empty()) << "an empty field reached the sink at " << i;
    if (placed.cell.value.is_string()) {
      EXPECT_TRUE(IsValidUtf8(placed.cell.value.string()));
    }
  }
  // The split points of the upload do not change the outcome.
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}}) {
    const Parsed split = Parse(bytes, piece);
    EXPECT_EQ(split.status.code(), whole.status.code()) << "piece " << piece;
    EXPECT_EQ(split.status.message(), whole.status.message()) << "piece " << piece;
    ASSERT_EQ(split.cells.size(), whole.cells.size()) << "piece " << piece;
    for (size_t i = 0; i < split.cells.size(); ++i) {
      ASSERT_TRUE(split.cells[i] == whole.cells[i]) << "piece " << piece << " cell " << i;
    }
  }
}

TEST(CsvFuzzTest, CorpusAndMutants) {
  FuzzDictionary dictionary;
  dictionary.tokens = {
      ",",     "\"",    "\"\"", "\r\n",    "\n",    "\r",    "\xEF\xBB\xBF",
      "TRUE",  "false", "007",  "-.5",     "1e308", "=A1+1", "9007199254740993",
      "1,234", "50%",   " 1 ",  "\"a,b\"", "\"x\"y"};
  dictionary.nest_open = "\"";
  dictionary.nest_close = "\"\"";
  const int64_t ran = FuzzCorpus("csv", FuzzMutations(300), 0xC5F, dictionary, CheckCsv);
  EXPECT_GT(ran, 300);
}

}  // namespace
}  // namespace sheetlog::testing
