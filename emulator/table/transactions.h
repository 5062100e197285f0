// Transactions: what the layers above the emulator see of the database. src/ runs table
// operations (emulator/table/table.h) inside these and never sees SQLite: the
// Connection a Work receives is opaque outside emulator/ (it is the SQLite connection
// of the transaction, emulator/sqlite/database.h), and only the composition root
// (src/app/) opens a Database. On DynamoDB the same calls become TransactWriteItems /
// strongly and eventually consistent reads; scripts/check-layers keeps src/ on this side.
#pragma once

#include <functional>

#include "emulator/status.h"

namespace sheetlog {

// A transaction in progress, handed to table operations. Opaque above emulator/.
class Connection;

class Transactions {
 public:
  using Work = std::function<Status(Connection&)>;
  virtual ~Transactions() = default;

  // Runs `work` in a write transaction (shared with concurrent callers: group commit).
  // If `work` returns an error its changes are rolled back and that error is returned;
  // otherwise returns OK once the transaction is durable. Reads inside it are strongly
  // consistent. `work` may run on another caller's thread.
  virtual Status Write(const Work& work) = 0;

  // Runs `work` in a read transaction: it sees one consistent committed state, never
  // a writer's uncommitted changes (eventually consistent reads).
  virtual Status Read(const Work& work) = 0;
};

}  // namespace sheetlog
