// A health probe of the table store (GET /v1/health): the cheapest read that still
// reaches the database, so that what it measures is the store's round trip, never the
// size of a table.
#pragma once

#include "emulator/status.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

// `SELECT 1` in a read transaction of `db`: reads no table. OK once the store answered;
// otherwise its error (PostgreSQL unreachable: Unavailable naming where). Bounded by the
// store's own timeouts only (PostgreSQL's connect timeout): a caller that must not wait
// longer runs it on a thread of its own (src/app/bounded_call.h).
Status ProbeTableStore(Transactions& db);

}  // namespace sheetlog
