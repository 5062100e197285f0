// emulator/table hot path: PutIfAbsent (the seed's conditional append), Query with
// limit 1 in reverse (the seed's "read the head entry") and Get, per second, on a real
// SQLite file (WAL, synchronous=NORMAL, the default durability).
//
//   build/<dir>/table_bench [--benchmark_min_time=2]
//
// Two tables with the Entry table's columns and key: `bench_entry` (no triggers: the
// table layer alone) and the real `entry` of schema 001 (with schema 003's change-feed
// triggers, as production runs it). Each benchmark runs with one operation per
// Database::Write / Read (the transaction and commit included) and with 100 operations
// per transaction (the operation alone). BM_RawInsert is the floor: the same INSERT
// prepared once and bound by hand. Rates are per wall-clock second (UseRealTime): a
// commit's I/O wait counts. Record results in bench/README.md.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "emulator/sqlite/database.h"
#include "emulator/table/table.h"
#include "src/app/schema.h"
#include "src/log/tables.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

const Table& BenchEntryTable() {
  static const Table table(TableSchema{"bench_entry",
                                       {"sheet_id", "segment"},
                                       {"num"},
                                       {{"sheet_id", "P"},
                                        {"segment", ""},
                                        {"num", "N"},
                                        {"seq", "Q"},
                                        {"created", "C"},
                                        {"external", "E"},
                                        {"type", "T"},
                                        {"version", "V"},
                                        {"body", "B"},
                                        {"snapshot_root", "R"}}});
  return table;
}

const char kSheet[] = "7d0c1c36-6a43-4b8e-9a3c-2f1f6b0c9e11";
const char kBody[] =
    R"json({"cells":[{"ref":"B7","value":"=SUM(A1:A6)"},{"ref":"C7","value":"42.5"}]})json";

Item EntryItem(int64_t num) {
  return Item{{"sheet_id", kSheet},
              {"segment", 0},
              {"num", num},
              {"seq", num},
              {"created", int64_t{1700000000}},
              {"type", "SetCells"},
              {"version", 1},
              {"body", kBody}};
}

struct Fixture {
  testing::TempDir dir;
  std::unique_ptr<Database> db;

  Fixture() {
    Database::Options options;
    options.path = dir.File("sheetlog.db");
    options.sync = SyncMode::kNormal;
    db = std::move(OpenSheetlogDatabase(options)).value();
    Status s = db->Write([](SqliteConnection& c) {
      return c.Exec(
          "CREATE TABLE bench_entry (sheet_id TEXT NOT NULL, segment INTEGER NOT NULL,"
          " num INTEGER NOT NULL, seq INTEGER NOT NULL, created INTEGER NOT NULL,"
          " external TEXT, type TEXT NOT NULL, version INTEGER NOT NULL, body TEXT,"
          " snapshot_root TEXT, PRIMARY KEY (sheet_id, segment, num)) WITHOUT ROWID;"
          "CREATE UNIQUE INDEX bench_entry_by_seq ON bench_entry (sheet_id, seq);");
    });
    if (!s.ok()) std::abort();
  }

  // Fills `table` with entries 0..n-1 of one segment.
  void Fill(const Table& table, int64_t n) {
    Status s = db->Write([&](Connection& c) {
      for (int64_t i = 0; i < n; ++i)
        RETURN_IF_ERROR(table.PutIfAbsent(c, EntryItem(i), nullptr));
      return Status::OK();
    });
    if (!s.ok()) std::abort();
  }
};

const Table& TableArg(const benchmark::State& state) {
  return state.range(0) == 0 ? BenchEntryTable() : EntryTable();
}

void BM_PutIfAbsent(benchmark::State& state) {
  Fixture f;
  const Table& table = TableArg(state);
  const int per_txn = static_cast<int>(state.range(1));
  int64_t num = 0;
  for (auto _ : state) {
    Status s = f.db->Write([&](Connection& c) {
      for (int i = 0; i < per_txn; ++i) {
        RETURN_IF_ERROR(table.PutIfAbsent(c, EntryItem(num++), nullptr));
      }
      return Status::OK();
    });
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * per_txn);
}
BENCHMARK(BM_PutIfAbsent)
    ->UseRealTime()
    ->ArgNames({"entry_table", "per_txn"})
    ->Args({0, 1})
    ->Args({0, 100})
    ->Args({1, 1})
    ->Args({1, 100});

// A lost race: the key exists, ON CONFLICT DO NOTHING, ConditionFailed.
void BM_PutIfAbsentLost(benchmark::State& state) {
  Fixture f;
  f.Fill(BenchEntryTable(), 1);
  for (auto _ : state) {
    Status s = f.db->Write([&](Connection& c) {
      for (int i = 0; i < 100; ++i) {
        Status lost = BenchEntryTable().PutIfAbsent(c, EntryItem(0), nullptr);
        if (!lost.IsConditionFailed()) return Internal("expected ConditionFailed");
      }
      return Status::OK();
    });
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_PutIfAbsentLost)->UseRealTime();

void BM_RawInsert(benchmark::State& state) {
  Fixture f;
  int64_t num = 0;
  for (auto _ : state) {
    Status s = f.db->Write([&](SqliteConnection& c) {
      for (int i = 0; i < 100; ++i) {
        ASSIGN_OR_RETURN(Statement st,
                         c.Prepare("INSERT INTO bench_entry (sheet_id, segment, num, seq,"
                                   " created, type, version, body) VALUES (?, ?, ?, ?, ?,"
                                   " ?, ?, ?) ON CONFLICT DO NOTHING"));
        st.Bind(1, kSheet).Bind(2, 0).Bind(3, num).Bind(4, num).Bind(5,
                                                                     int64_t{1700000000});
        st.Bind(6, "SetCells").Bind(7, 1).Bind(8, kBody);
        ++num;
        RETURN_IF_ERROR(st.Run());
      }
      return Status::OK();
    });
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_RawInsert)->UseRealTime();

// The head of a 10,000-entry segment: Query(limit 1, reverse), eventually consistent.
void BM_QueryLimit1(benchmark::State& state) {
  Fixture f;
  const Table& table = TableArg(state);
  f.Fill(table, 10000);
  const int per_txn = static_cast<int>(state.range(1));
  QueryRequest q;
  q.partition = {kSheet, 0};
  q.forward = false;
  q.limit = 1;
  for (auto _ : state) {
    Status s = f.db->Read([&](Connection& c) {
      for (int i = 0; i < per_txn; ++i) {
        ASSIGN_OR_RETURN(QueryResult r, table.Query(c, q, nullptr));
        if (r.items.size() != 1 || r.items[0].at("num").AsInt() != 9999) {
          return Internal("wrong head");
        }
      }
      return Status::OK();
    });
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * per_txn);
}
BENCHMARK(BM_QueryLimit1)
    ->UseRealTime()
    ->ArgNames({"entry_table", "per_txn"})
    ->Args({0, 1})
    ->Args({0, 100})
    ->Args({1, 1})
    ->Args({1, 100});

void BM_Get(benchmark::State& state) {
  Fixture f;
  f.Fill(BenchEntryTable(), 10000);
  int64_t num = 0;
  for (auto _ : state) {
    Status s = f.db->Read([&](Connection& c) {
      for (int i = 0; i < 100; ++i) {
        Key key{{kSheet, 0}, {num++ % 10000}};
        ASSIGN_OR_RETURN(auto item,
                         BenchEntryTable().Get(c, key, Consistency::kEventual, nullptr));
        if (!item) return Internal("missing");
      }
      return Status::OK();
    });
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_Get)->UseRealTime();

}  // namespace
}  // namespace sheetlog

BENCHMARK_MAIN();
