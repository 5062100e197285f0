// Property tests of the reducer and of the transform/overlay summary, on thousands of
// seeded random sheets and edit sequences:
//   (1) Sheet::Apply agrees with a dead-simple dense model that literally inserts and
//       erases rows and columns of a 2-D vector;
//   (2) the invariant: apply(S, E) == { transform(c) for c in S not deleted } with the
//       overlay on top, i.e. SheetDelta(E).ApplyTo(S) equals the model;
//   (3) the transform alone agrees with the model's bookkeeping of where each original
//       row and column went.
// Grids are tiny (a few rows and columns, via Sheet::Options limits) so that edits
// collide, hit the edges, and reach past the last used row and past the grid itself.
// A second test does the same near both ends of the real 2^31-1 grid with a sparse
// literal model, through the JSON codecs.
//
// Reproduce a failure with SHEETLOG_PROPERTY_SEED=<seed printed in the failure>.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "src/sheet/delta.h"
#include "src/sheet/sheet.h"
#include "tests/support/random_edits.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

using testing::Random;
using testing::RandomSmallEdit;

uint64_t BaseSeed() {
  const char* env = std::getenv("SHEETLOG_PROPERTY_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 20261122;
}

// ---------------------------------------------------------------------------------
// The dense model: a rows x cols grid that literally inserts and erases, and remembers
// for every current row and column which original one it is (0 = inserted since).

struct DenseModel {
  int64_t rows, cols;
  std::vector<std::vector<Cell>> grid;
  std::vector<int64_t> row_origin, col_origin;

  DenseModel(int64_t r, int64_t c) : rows(r), cols(c), grid(r, std::vector<Cell>(c)) {
    for (int64_t i = 1; i <= r; ++i) row_origin.push_back(i);
    for (int64_t j = 1; j <= c; ++j) col_origin.push_back(j);
  }

  void Write(const CellRef& ref, const Cell& cell) {
    if (ref.row < 1 || ref.row > rows || ref.col < 1 || ref.col > cols) return;
    grid[ref.row - 1][ref.col - 1] = cell;
  }

  void Apply(const SheetEdit& edit) {
    if (const auto* e = std::get_if<SetCellEdit>(&edit)) {
      Write(e->ref, e->cell);
    } else if (const auto* e = std::get_if<SetCellValueAndFormatEdit>(&edit)) {
      Write(e->ref, e->cell);
    } else if (const auto* e = std::get_if<SetCellsEdit>(&edit)) {
      e->ForEachCell([&](const CellRef& ref, const Cell& cell) { Write(ref, cell); });
    } else if (const auto* e = std::get_if<InsertRowsEdit>(&edit)) {
      if (e->after < rows) {
        grid.insert(grid.begin() + e->after, e->count, std::vector<Cell>(cols));
        grid.resize(rows);
        row_origin.insert(row_origin.begin() + e->after, e->count, 0);
        row_origin.resize(rows);
      }
      for (const auto& [col, cell] : e->values) Write({e->after + 1, col}, cell);
    } else if (const auto* e = std::get_if<DeleteRowsEdit>(&edit)) {
      if (e->at <= rows) {
        int64_t end = std::min(e->at - 1 + e->count, rows);
        grid.erase(grid.begin() + (e->at - 1), grid.begin() + end);
        grid.resize(rows, std::vector<Cell>(cols));
        row_origin.erase(row_origin.begin() + (e->at - 1), row_origin.begin() + end);
        row_origin.resize(rows, 0);
      }
    } else if (const auto* e = std::get_if<InsertColumnsEdit>(&edit)) {
      if (e->after < cols) {
        for (auto& row : grid) {
          row.insert(row.begin() + e->after, e->count, Cell{});
          row.resize(cols);
        }
        col_origin.insert(col_origin.begin() + e->after, e->count, 0);
        col_origin.resize(cols);
      }
    } else if (const auto* e = std::get_if<DeleteColumnsEdit>(&edit)) {
      if (e->at <= cols) {
        int64_t end = std::min(e->at - 1 + e->count, cols);
        for (auto& row : grid) {
          row.erase(row.begin() + (e->at - 1), row.begin() + end);
          row.resize(cols);
        }
        col_origin.erase(col_origin.begin() + (e->at - 1), col_origin.begin() + end);
        col_origin.resize(cols, 0);
      }
    } else if (const auto* e = std::get_if<ImportEdit>(&edit)) {
      if (e->mode == ImportEdit::Mode::kReplace) {
        grid.assign(rows, std::vector<Cell>(cols));
        row_origin.assign(rows, 0);
        col_origin.assign(cols, 0);
      }
      if (e->cells) {
        for (const PlacedCell& c : *e->cells) {
          Write({e->at.row + c.ref.row - 1, e->at.col + c.ref.col - 1}, c.cell);
        }
      }
    }
  }

  std::vector<PlacedCell> Cells() const {
    std::vector<PlacedCell> out;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        if (!grid[r][c].empty()) out.push_back({{r + 1, c + 1}, grid[r][c]});
      }
    }
    return out;
  }
};

std::string Describe(const std::vector<PlacedCell>& cells) {
  std::string out;
  for (const PlacedCell& c : cells) {
    out += ' ';  // appends: GCC 12 -O3 warns (-Wrestrict) on " " + std::string
    out += FormatCellRef(c.ref);
    out += '=';
    out += c.cell.DebugString();
  }
  return out.empty() ? " (empty)" : out;
}

std::string Describe(const SheetEdit& edit) {
  std::string out(EditTypeName(edit));
  nlohmann::json body = EncodeEditBody(edit);
  if (!body.is_null()) out += " " + body.dump();
  if (const auto* e = std::get_if<ImportEdit>(&edit); e && e->cells) {
    out += " payload:" + Describe(*e->cells);
  }
  return out;
}

TEST(SheetPropertyTest, ReducerDeltaAndTransformAgreeWithTheDenseModel) {
  const uint64_t seed = BaseSeed();
  const int kRounds = 6000;
  int64_t structural_noops_seen = 0;
  for (int round = 0; round < kRounds; ++round) {
    Random rnd(seed * 1000003 + static_cast<uint64_t>(round));
    int64_t rows = rnd.In(1, 8);
    int64_t cols = rnd.In(1, 6);

    // The old sheet S.
    DenseModel model(rows, cols);
    int fill = static_cast<int>(rnd.In(0, 3));  // empty, sparse, half, dense
    for (int64_t r = 1; r <= rows; ++r) {
      for (int64_t c = 1; c <= cols; ++c) {
        if (rnd.In(0, 2) < fill) model.Write({r, c}, rnd.NonEmptyCell());
      }
    }
    const std::vector<PlacedCell> old_cells = model.Cells();

    // The edits E.
    std::vector<SheetEdit> edits;
    for (int i = rnd.In(0, 24); i > 0; --i)
      edits.push_back(RandomSmallEdit(rnd, rows, cols));

    Sheet::Options options;
    options.row_limit = rows;
    options.col_limit = cols;
    // Compaction at random moments, from every edit to never.
    options.compaction_floor = static_cast<size_t>(rnd.In(0, 2) == 0 ? 0 : rnd.In(1, 6));
    options.max_transform_pieces = static_cast<size_t>(rnd.OneIn(3) ? 0 : rnd.In(2, 12));
    if (rnd.OneIn(4)) options.compaction_floor = options.max_transform_pieces = 1u << 30;
    Sheet sheet = Sheet::FromCells(old_cells, options);
    SheetDelta delta(rows, cols);
    SheetDelta moved(rows, cols);  // the same edits, moved in (what PlanSheet does)
    bool replaced = false;
    ReplayStats expected_stats;

    std::string history = "seed " + std::to_string(seed) + " round " +
                          std::to_string(round) + ", grid " + std::to_string(rows) + "x" +
                          std::to_string(cols) + ", S:" + Describe(old_cells);
    for (const SheetEdit& edit : edits) {
      history += "\n  " + Describe(edit);
      model.Apply(edit);
      sheet.Apply(edit);
      delta.Apply(edit);
      moved.Apply(SheetEdit(edit));
      expected_stats.Count(edit);
      if (const auto* e = std::get_if<ImportEdit>(&edit)) {
        replaced |= e->mode == ImportEdit::Mode::kReplace;
      }
    }
    SCOPED_TRACE(history);
    const std::vector<PlacedCell> expected = model.Cells();

    // (1) The reducer, whole and by every read path.
    ASSERT_EQ(sheet.Cells(), expected)
        << "reducer:" << Describe(sheet.Cells()) << "\nmodel:" << Describe(expected);
    ASSERT_EQ(sheet.CellCount(), expected.size());
    for (int64_t r = 1; r <= rows; ++r) {
      for (int64_t c = 1; c <= cols; ++c) {
        const Cell& want = model.grid[r - 1][c - 1];
        const Cell* got = sheet.Find({r, c});
        if (want.empty()) {
          ASSERT_EQ(got, nullptr) << FormatCellRef({r, c});
        } else {
          ASSERT_NE(got, nullptr) << FormatCellRef({r, c});
          ASSERT_EQ(*got, want) << FormatCellRef({r, c});
        }
      }
    }
    CellRange range{{rnd.In(1, rows), rnd.In(1, cols)}, {0, 0}};
    range.last = {rnd.In(range.first.row, rows + 1), rnd.In(range.first.col, cols + 1)};
    auto read = sheet.ReadRange(range);
    ASSERT_OK(read);
    for (int64_t r = range.first.row; r <= range.last.row; ++r) {
      for (int64_t c = range.first.col; c <= range.last.col; ++c) {
        Cell want = (r <= rows && c <= cols) ? model.grid[r - 1][c - 1] : Cell{};
        size_t i = static_cast<size_t>(r - range.first.row);
        size_t j = static_cast<size_t>(c - range.first.col);
        ASSERT_EQ(read->values[i][j], want.value)
            << "ReadRange at " << FormatCellRef({r, c});
        ASSERT_EQ(read->has_formats ? read->formats[i][j] : "", want.format);
      }
    }
    ASSERT_EQ(sheet.stats(), expected_stats);

    // (2) The invariant: the old sheet through the transform, the overlay on top.
    ASSERT_EQ(delta.ApplyTo(old_cells), expected)
        << "delta:" << Describe(delta.ApplyTo(old_cells))
        << "\nmodel:" << Describe(expected) << "\nrows "
        << delta.transform().rows().DebugString() << ", columns "
        << delta.transform().columns().DebugString();
    ASSERT_EQ(delta.replaced(), replaced);
    ASSERT_EQ(delta.stats(), expected_stats);
    ASSERT_EQ(moved.overlay(), delta.overlay())
        << "moved in:" << Describe(moved.ApplyTo(old_cells));
    ASSERT_EQ(moved.transform(), delta.transform());
    ASSERT_EQ(moved.replaced(), replaced);
    ASSERT_EQ(moved.stats(), expected_stats);
    delta.overlay().ForEach([&](const CellRef& ref, const Cell&) {
      ASSERT_TRUE(ref.row >= 1 && ref.row <= rows && ref.col >= 1 && ref.col <= cols);
    });
    // Streaming in pieces gives the same as a whole: feed S one cell at a time.
    std::vector<PlacedCell> streamed;
    DeltaMerger merger(delta, [&](const CellRef& ref, const Cell& cell) {
      ASSERT_TRUE(streamed.empty() || streamed.back().ref < ref) << "out of order";
      streamed.push_back({ref, cell});
    });
    for (const PlacedCell& c : old_cells) merger.Add(c.ref, Cell(c.cell));
    merger.Finish();
    ASSERT_EQ(streamed, expected);

    // (3) The transform alone, against the model's bookkeeping of origins.
    for (int64_t p = 1; p <= rows; ++p) {
      int64_t origin = model.row_origin[p - 1];
      ASSERT_EQ(delta.transform().rows().Backward(p).value_or(0), origin) << "row " << p;
    }
    for (int64_t old = 1; old <= rows; ++old) {
      auto it = std::find(model.row_origin.begin(), model.row_origin.end(), old);
      std::optional<int64_t> want;
      if (it != model.row_origin.end()) want = (it - model.row_origin.begin()) + 1;
      ASSERT_EQ(delta.transform().rows().Forward(old), want) << "old row " << old;
    }
    for (int64_t p = 1; p <= cols; ++p) {
      ASSERT_EQ(delta.transform().columns().Backward(p).value_or(0),
                model.col_origin[p - 1])
          << "column " << p;
    }
    for (int64_t old = 1; old <= cols; ++old) {
      auto it = std::find(model.col_origin.begin(), model.col_origin.end(), old);
      std::optional<int64_t> want;
      if (it != model.col_origin.end()) want = (it - model.col_origin.begin()) + 1;
      ASSERT_EQ(delta.transform().columns().Forward(old), want) << "old column " << old;
    }
    if (delta.transform().IsIdentity() && !edits.empty()) ++structural_noops_seen;
  }
  // The generator reaches both "nothing moved" and "something moved" outcomes.
  EXPECT_GT(structural_noops_seen, 0);
  EXPECT_LT(structural_noops_seen, kRounds);
}

// ---------------------------------------------------------------------------------
// Near the far edges of the real grid: a sparse model that shifts every cell by hand.

struct SparseModel {
  std::map<CellRef, Cell> cells;

  void Write(const CellRef& ref, const Cell& cell) {
    if (!InGrid(ref)) return;
    if (cell.empty()) {
      cells.erase(ref);
    } else {
      cells[ref] = cell;
    }
  }
  // new_row(row) returns 0 for "deleted".
  template <typename RowFn, typename ColFn>
  void Move(RowFn new_row, ColFn new_col) {
    std::map<CellRef, Cell> next;
    for (auto& [ref, cell] : cells) {
      CellRef to{new_row(ref.row), new_col(ref.col)};
      if (to.row != 0 && to.col != 0 && InGrid(to)) next[to] = cell;
    }
    cells = std::move(next);
  }
  void Apply(const SheetEdit& edit) {
    auto same = [](int64_t p) { return p; };
    if (const auto* e = std::get_if<SetCellEdit>(&edit)) {
      Write(e->ref, e->cell);
    } else if (const auto* e = std::get_if<SetCellsEdit>(&edit)) {
      e->ForEachCell([&](const CellRef& ref, const Cell& cell) { Write(ref, cell); });
    } else if (const auto* e = std::get_if<InsertRowsEdit>(&edit)) {
      Move([&](int64_t r) { return r > e->after ? r + e->count : r; }, same);
      for (const auto& [col, cell] : e->values) Write({e->after + 1, col}, cell);
    } else if (const auto* e = std::get_if<DeleteRowsEdit>(&edit)) {
      int64_t last = e->at + e->count - 1;
      Move(
          [&](int64_t r) -> int64_t {
            if (r < e->at) return r;
            return r > last ? r - e->count : 0;
          },
          same);
    } else if (const auto* e = std::get_if<InsertColumnsEdit>(&edit)) {
      Move(same, [&](int64_t c) { return c > e->after ? c + e->count : c; });
    } else if (const auto* e = std::get_if<DeleteColumnsEdit>(&edit)) {
      int64_t last = e->at + e->count - 1;
      Move(same, [&](int64_t c) -> int64_t {
        if (c < e->at) return c;
        return c > last ? c - e->count : 0;
      });
    }
  }
  std::vector<PlacedCell> Cells() const {
    std::vector<PlacedCell> out;
    for (const auto& [ref, cell] : cells) out.push_back({ref, cell});
    return out;
  }
};

// Positions 1..4 or the last 4 of the axis.
int64_t EdgePosition(Random& rnd, int64_t limit) {
  return rnd.OneIn(2) ? rnd.In(1, 4) : rnd.In(limit - 3, limit);
}

// A count that is small, or reaches exactly to the end of the grid from `first`.
int64_t EdgeCount(Random& rnd, int64_t first, int64_t limit) {
  int64_t to_end = limit - first + 1;
  return rnd.OneIn(3) ? to_end : rnd.In(1, std::min<int64_t>(3, to_end));
}

SheetEdit RandomEdgeEdit(Random& rnd) {
  auto ref = [&] {
    return CellRef{EdgePosition(rnd, kMaxRow), EdgePosition(rnd, kMaxColumn)};
  };
  switch (rnd.In(0, 7)) {
    case 0:
    case 1:
      return SetCellEdit{ref(), rnd.AnyCell()};
    case 2: {
      SetCellsEdit e;
      std::map<CellRef, Cell> cells;
      for (int i = rnd.In(1, 3); i > 0; --i) cells[ref()] = rnd.AnyCell();
      for (auto& [r, c] : cells) e.cells.push_back({r, c});
      return e;
    }
    case 3: {
      int64_t after = EdgePosition(rnd, kMaxRow) - 1;
      InsertRowsEdit e{after, EdgeCount(rnd, after + 1, kMaxRow), {}};
      if (rnd.OneIn(2))
        e.values.push_back({EdgePosition(rnd, kMaxColumn), rnd.NonEmptyCell()});
      return e;
    }
    case 4: {
      int64_t at = EdgePosition(rnd, kMaxRow);
      return DeleteRowsEdit{at, EdgeCount(rnd, at, kMaxRow)};
    }
    case 5: {
      int64_t after = EdgePosition(rnd, kMaxColumn) - 1;
      return InsertColumnsEdit{after, EdgeCount(rnd, after + 1, kMaxColumn)};
    }
    default: {
      int64_t at = EdgePosition(rnd, kMaxColumn);
      return DeleteColumnsEdit{at, EdgeCount(rnd, at, kMaxColumn)};
    }
  }
}

TEST(SheetPropertyTest, FarEdgesOfTheRealGridThroughTheCodecs) {
  const uint64_t seed = BaseSeed();
  for (int round = 0; round < 2000; ++round) {
    Random rnd(seed * 7919 + static_cast<uint64_t>(round));
    SparseModel model;
    for (int i = rnd.In(0, 12); i > 0; --i) {
      model.Write({EdgePosition(rnd, kMaxRow), EdgePosition(rnd, kMaxColumn)},
                  rnd.NonEmptyCell());
    }
    const std::vector<PlacedCell> old_cells = model.Cells();
    Sheet::Options options;
    if (rnd.OneIn(2)) options.compaction_floor = options.max_transform_pieces = 0;
    Sheet sheet = Sheet::FromCells(old_cells, options);
    SheetDelta delta;
    std::string history = "seed " + std::to_string(seed) + " round " +
                          std::to_string(round) + ", S:" + Describe(old_cells);
    for (int i = rnd.In(0, 12); i > 0; --i) {
      SheetEdit generated = RandomEdgeEdit(rnd);
      // Every generated edit is one the codec accepts, and it survives the round trip.
      std::string type(EditTypeName(generated));
      nlohmann::json body = EncodeEditBody(generated);
      auto parsed = ParseEdit(type, 1, body);
      ASSERT_OK(parsed) << type << " " << body.dump() << ": "
                        << parsed.status().ToString();
      ASSERT_EQ(*parsed, generated) << type << " " << body.dump();
      history += "\n  " + Describe(*parsed);
      model.Apply(*parsed);
      sheet.Apply(*parsed);
      delta.Apply(*parsed);
    }
    SCOPED_TRACE(history);
    const std::vector<PlacedCell> expected = model.Cells();
    ASSERT_EQ(sheet.Cells(), expected)
        << "reducer:" << Describe(sheet.Cells()) << "\nmodel:" << Describe(expected);
    ASSERT_EQ(delta.ApplyTo(old_cells), expected);
    for (const PlacedCell& c : expected) ASSERT_EQ(*sheet.Find(c.ref), c.cell);
    // Every old cell that survives sits where the transform says.
    for (const PlacedCell& c : old_cells) {
      auto moved = delta.transform().Forward(c.ref);
      if (!moved) continue;
      ASSERT_EQ(delta.transform().Backward(*moved), c.ref);
      if (delta.overlay().Find(*moved) == nullptr) {
        ASSERT_NE(sheet.Find(*moved), nullptr) << FormatCellRef(c.ref);
        ASSERT_EQ(*sheet.Find(*moved), c.cell);
      }
    }
  }
}

}  // namespace
}  // namespace sheetlog
