// src/sheet reducer: replaying entries into an in-memory Sheet, and rebuilding a sheet
// from an old one plus a SheetDelta (the snapshot path).
//
//   build/<dir>/sheet_bench [--benchmark_filter=...]
//
// Sheets are 50,000 rows x 20 columns = 10^6 numeric cells unless the name says
// otherwise; edit streams are pre-generated from a fixed seed, so every run replays the
// same entries. One iteration = one whole replay; items/s = edits per second.
// Record results in bench/README.md with the date and machine.
#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <vector>

#include "src/sheet/delta.h"
#include "src/sheet/sheet.h"

namespace sheetlog {
namespace {

constexpr int64_t kRows = 50000;
constexpr int64_t kCols = 20;

std::vector<PlacedCell> DenseCells(int64_t rows, int64_t cols) {
  std::vector<PlacedCell> cells;
  cells.reserve(static_cast<size_t>(rows * cols));
  for (int64_t r = 1; r <= rows; ++r) {
    for (int64_t c = 1; c <= cols; ++c) {
      cells.push_back(
          {{r, c}, Cell{CellValue::Number(static_cast<double>(r * 100 + c)), ""}});
    }
  }
  return cells;
}

const std::vector<PlacedCell>& MillionCells() {
  static const auto* cells = new std::vector<PlacedCell>(DenseCells(kRows, kCols));
  return *cells;
}

// `structural_percent` of the edits are row inserts/deletes (equally often, 1-3 rows
// each) at random places inside the used range; the rest are SetCell writes there.
std::vector<SheetEdit> Edits(int n, int structural_percent, uint64_t seed,
                             bool inserts_at_top = false) {
  std::mt19937_64 rng(seed);
  auto in = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<SheetEdit> edits;
  edits.reserve(n);
  for (int i = 0; i < n; ++i) {
    if (in(1, 100) > structural_percent) {
      edits.push_back(SetCellEdit{{in(1, kRows), in(1, kCols)},
                                  Cell{CellValue::Number(static_cast<double>(i)), ""}});
      continue;
    }
    int64_t row = inserts_at_top ? 0 : in(1, kRows);
    if (inserts_at_top || in(0, 1) == 0) {
      edits.push_back(InsertRowsEdit{row, in(1, 3), {}});
    } else {
      edits.push_back(DeleteRowsEdit{std::max<int64_t>(row, 1), in(1, 3)});
    }
  }
  return edits;
}

void Replay(benchmark::State& state, const std::vector<PlacedCell>& start,
            const std::vector<SheetEdit>& edits) {
  int64_t compactions = 0;
  size_t cells = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Sheet sheet = Sheet::FromCells(start);
    state.ResumeTiming();
    for (const SheetEdit& edit : edits) sheet.Apply(edit);
    state.PauseTiming();
    compactions = sheet.compactions();
    cells = sheet.CellCount();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(edits.size()));
  state.counters["compactions"] = static_cast<double>(compactions);
  state.counters["cells_after"] = static_cast<double>(cells);
}

// 10^5 SetCell onto an empty sheet (a 1000 x 1000 area).
void BM_SetCellsIntoEmptySheet(benchmark::State& state) {
  std::mt19937_64 rng(1);
  std::vector<SheetEdit> edits;
  for (int i = 0; i < 100000; ++i) {
    edits.push_back(SetCellEdit{
        {static_cast<int64_t>(rng() % 1000) + 1, static_cast<int64_t>(rng() % 1000) + 1},
        Cell{CellValue::Number(i), ""}});
  }
  Replay(state, {}, edits);
}
BENCHMARK(BM_SetCellsIntoEmptySheet)->Unit(benchmark::kMillisecond)->Iterations(3);

// 10^5 entries on a 10^6-cell sheet, with 0, 10, 50 or 100 % structural edits.
void BM_ReplayOnMillionCells(benchmark::State& state) {
  Replay(state, MillionCells(), Edits(100000, static_cast<int>(state.range(0)), 2));
}
BENCHMARK(BM_ReplayOnMillionCells)
    ->Arg(0)
    ->Arg(10)
    ->Arg(50)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The adversarial mix: alternate "insert a row at the top" and a SetCell, 10^5 entries.
void BM_AlternateInsertAtTopAndSet(benchmark::State& state) {
  std::vector<SheetEdit> edits = Edits(100000, 50, 3, /*inserts_at_top=*/true);
  Replay(state, MillionCells(), edits);
}
BENCHMARK(BM_AlternateInsertAtTopAndSet)->Unit(benchmark::kMillisecond)->Iterations(1);

// Baseline for the above: a std::map sheet that shifts every cell on each row insert
// (what the delta avoids), on 1,000 entries only: extrapolate x100 for 10^5.
void BM_BaselineShiftEveryCell1000(benchmark::State& state) {
  std::vector<SheetEdit> edits = Edits(1000, 50, 3, /*inserts_at_top=*/true);
  for (auto _ : state) {
    state.PauseTiming();
    std::map<CellRef, Cell> sheet;
    for (const PlacedCell& c : MillionCells())
      sheet.emplace_hint(sheet.end(), c.ref, c.cell);
    state.ResumeTiming();
    for (const SheetEdit& edit : edits) {
      if (const auto* set = std::get_if<SetCellEdit>(&edit)) {
        sheet[set->ref] = set->cell;
      } else if (const auto* ins = std::get_if<InsertRowsEdit>(&edit)) {
        std::map<CellRef, Cell> next;
        for (auto& [ref, cell] : sheet) {
          next.emplace_hint(
              next.end(),
              CellRef{ref.row > ins->after ? ref.row + ins->count : ref.row, ref.col},
              std::move(cell));
        }
        sheet = std::move(next);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_BaselineShiftEveryCell1000)->Unit(benchmark::kMillisecond)->Iterations(1);

// Column edits touch every row: 10^4 entries alternating InsertColumns and
// DeleteColumns at random places (the data survives: each insert is undone).
void BM_ColumnInsertDelete(benchmark::State& state) {
  std::mt19937_64 rng(6);
  std::vector<SheetEdit> edits;
  for (int i = 0; i < 5000; ++i) {
    int64_t col = static_cast<int64_t>(rng() % kCols);
    edits.push_back(InsertColumnsEdit{col, 1});
    edits.push_back(DeleteColumnsEdit{col + 1, 1});
  }
  Replay(state, MillionCells(), edits);
}
BENCHMARK(BM_ColumnInsertDelete)->Unit(benchmark::kMillisecond)->Iterations(1);

// The snapshot path: a delta of N entries (10 % structural) applied to 10^6 old cells
// in one ordered pass.
void BM_DeltaApplyToMillionCells(benchmark::State& state) {
  SheetDelta delta;
  for (const SheetEdit& edit : Edits(static_cast<int>(state.range(0)), 10, 4)) {
    delta.Apply(edit);
  }
  size_t out = 0;
  for (auto _ : state) {
    std::vector<PlacedCell> cells = delta.ApplyTo(MillionCells());
    out = cells.size();
    benchmark::DoNotOptimize(cells.data());
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<int64_t>(MillionCells().size()));
  state.counters["pieces"] = static_cast<double>(delta.transform().piece_count());
  state.counters["cells_after"] = static_cast<double>(out);
}
BENCHMARK(BM_DeltaApplyToMillionCells)
    ->Arg(100)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// GET cells?range=A1:D20 on a 10^6-cell sheet with edits still pending in the delta.
void BM_ReadRangeA1D20(benchmark::State& state) {
  Sheet sheet = Sheet::FromCells(MillionCells());
  for (const SheetEdit& edit : Edits(1000, 10, 5)) sheet.Apply(edit);
  CellRange range = *ParseRange("A1:D20");
  for (auto _ : state) {
    auto values = sheet.ReadRange(range);
    benchmark::DoNotOptimize(values->values.data());
  }
}
BENCHMARK(BM_ReadRangeA1D20)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sheetlog

BENCHMARK_MAIN();
