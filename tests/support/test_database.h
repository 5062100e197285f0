// A real SQLite database in a test's directory (no mock: the same Database, with the
// same application schema, the server opens), with syncs off by default so unit tests do
// not wait for the disk. Unit tests open their database with these rather than by hand
// (the tests of Database::Open itself aside).
#pragma once

#include <memory>
#include <string>

#include "emulator/env/clock.h"
#include "emulator/sqlite/database.h"

namespace sheetlog::testing {

// Opens (creating) the database at `path` on `clock` with the application's schema
// (src/app/schema.h: schema/ migrations, the `entry` stream). Records a test failure and
// returns null if it cannot be opened.
std::unique_ptr<Database> OpenTestDatabase(const std::string& path, Clock* clock,
                                           SyncMode sync = SyncMode::kOff);

// The same without the application's schema: the emulator's own tables only
// (emulator/schema/), for the tests of the emulator's services (queues, tables, the
// execution history, the function runtime) that sit below the application. `clock` may
// be null (SystemClock).
std::unique_ptr<Database> OpenEmulatorTestDatabase(const std::string& path, Clock* clock,
                                                   SyncMode sync = SyncMode::kOff);

}  // namespace sheetlog::testing
