#include "emulator/table/table_store_probe.h"

#include "emulator/table/connection.h"

namespace sheetlog {

Status ProbeTableStore(Transactions& db) {
  return db.Read([](Connection& c) -> Status {
    bool answered = false;
    RETURN_IF_ERROR(c.RunSql("SELECT 1", {}, [&](const SqlRow&) {
                       answered = true;
                       return false;
                     }).status());
    if (!answered) return Internal("the table store answered SELECT 1 with no row");
    return Status::OK();
  });
}

}  // namespace sheetlog
