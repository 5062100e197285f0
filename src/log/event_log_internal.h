// Helpers the files of the event log share (event_log.cc, event_log_add_entry.cc,
// event_log_read.cc, event_log_truncate.cc, event_log_fork.cc): the item codecs of the
// Sheet, Segment and Entry tables and the segment queries, on a Connection of the
// caller's transaction.
// Not for use outside src/log/event_log*.cc: everything else goes through EventLog.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/table.h"
#include "src/log/log_records.h"

namespace sheetlog::event_log_internal {

// A column's value, or nullopt when the item lacks it or holds null.
std::optional<std::string> OptionalString(const Item& item, const std::string& column);
std::optional<int64_t> OptionalInt(const Item& item, const std::string& column);
int64_t IntOr(const Item& item, const std::string& column, int64_t fallback);

// The Entry table's item of `e` (entry_item.num etc.; absent optionals left out).
Item EntryItem(const std::string& sheet_id, const EntryRecord& e);
SheetInfo SheetFromItem(const Item& item);

// Whether a metadata object text carries a client-set "snapshot".
bool HasClientSnapshot(const std::optional<std::string>& metadata);

// All segments of a sheet, oldest first (Segment items are tiny; one query).
Result<std::vector<SegmentInfo>> QuerySegments(Connection& conn,
                                               const std::string& sheet_id,
                                               UnitMeter* meter);

// Repeated paged Query over one segment: entries with num in [from_num, to_num]
// (to_num = -1: to the end), appending at most `limit - out->size()` entries.
Status QuerySegmentEntries(Connection& conn, const std::string& sheet_id, int64_t segment,
                           int64_t from_num, int64_t to_num, size_t limit, int page_size,
                           UnitMeter* meter, std::vector<EntryRecord>* out);

// EventLog::LastSnapshot() on `conn`: the newer of the newest completed Snapshot entry
// and the newest retained entry with a client-set "snapshot". `sheet` is the sheet's
// item; `newest` the newest segment when the caller has read it (else it is queried).
Result<std::optional<SnapshotRef>> ReadLastSnapshot(
    Connection& conn, const std::string& sheet_id, const Item& sheet,
    const std::optional<SegmentInfo>& newest, UnitMeter* meter);

}  // namespace sheetlog::event_log_internal
