// The event log's DynamoDB tables (seed 001), as emulator/table sees them: key columns
// and the one-letter attribute names the seed uses to keep items small. The SQL lives
// in schema/sqlite/001_event_log.sql; schema/README.md documents every column.
#pragma once

#include "emulator/table/table.h"

namespace sheetlog {

// Seed 001 "Entry": PK (sheet_id, segment) = the seed's Segment Id (UUID + Num),
// SK num.
const Table& EntryTable();
// Seed 001 "Segment": PK sheet_id, SK num.
const Table& SegmentTable();
// Sheet metadata: PK id.
const Table& SheetTable();
// Seed 000 "Pending Snapshots" has its own owner: src/log/pending_snapshots.h.
// Tombstones of deleted sheets (schema/008, src/log/sheet_deletion.h): PK sheet_id.
const Table& SheetDeletionTable();

// Reserved entry types written only by the system.
inline constexpr const char* kSnapshotType = "Snapshot";
inline constexpr const char* kEndSegmentType = "EndSegment";

}  // namespace sheetlog
