#include "src/log/tables.h"

namespace sheetlog {

const Table& EntryTable() {
  static const Table table(
      TableSchema{"entry",
                  {"sheet_id", "segment"},
                  {"num"},
                  {{"sheet_id", "P"},
                   {"segment", ""},  // second half of the binary Segment Id "P"
                   {"num", "N"},
                   {"seq", "Q"},
                   {"created", "C"},
                   {"external", "E"},
                   {"type", "T"},
                   {"version", "V"},
                   {"body", "B"},
                   {"snapshot_root", "R"},
                   {"metadata", "M"}},
                  // The log's flat order: the head of a sheet is the newest item here.
                  {{"entry_by_seq", {"sheet_id"}, {"seq"}}}});
  return table;
}

const Table& SegmentTable() {
  static const Table table(TableSchema{"segment",
                                       {"sheet_id"},
                                       {"num"},
                                       {{"sheet_id", "P"},
                                        {"num", "N"},
                                        {"created", "C"},
                                        {"first_seq", "F"},
                                        {"last_snapshot", "L"},
                                        {"archive", "A"}}});
  return table;
}

const Table& SheetTable() {
  static const Table table(TableSchema{"sheet",
                                       {"id"},
                                       {},
                                       {{"id", "P"},
                                        {"name", "N"},
                                        {"created", "C"},
                                        {"snapshot_every", "S"},
                                        {"segment_entries", "G"},
                                        {"first_seq", "F"},
                                        {"snapshot_entry_seq", "Z"},
                                        {"base_root", "X"},
                                        {"client_snapshot_seq", "K"},
                                        {"fork_of", "O"},
                                        {"fork_seq", "W"},
                                        {"shared_blobs", "H"}}});
  return table;
}

const Table& SheetDeletionTable() {
  static const Table table(TableSchema{
      "sheet_deletion", {"sheet_id"}, {}, {{"sheet_id", "P"}, {"deleted", "D"}}});
  return table;
}

}  // namespace sheetlog
