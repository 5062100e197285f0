// TransactWrite (DynamoDB TransactWriteItems) and its items (table.h).
#include <set>

#include "emulator/table/connection.h"
#include "emulator/table/table.h"
#include "emulator/table/table_sql.h"

namespace sheetlog {

using namespace table_sql;  // NOLINT: the helpers of this module's own files

// ---------------------------------------------------------------------------
// TransactItem

TransactItem TransactItem::Put(const Table& t, Item item, std::vector<Condition> c) {
  TransactItem ti{Kind::kPut, &t, std::move(item), {}, {}, std::move(c)};
  return ti;
}

TransactItem TransactItem::PutIfAbsent(const Table& t, Item item) {
  return Put(t, std::move(item), {Condition::ItemNotExists()});
}

TransactItem TransactItem::Update(const Table& t, UpdateRequest u) {
  TransactItem ti{Kind::kUpdate, &t, {}, std::move(u), {}, {}};
  return ti;
}

TransactItem TransactItem::Delete(const Table& t, Key key, std::vector<Condition> c) {
  TransactItem ti{Kind::kDelete, &t, {}, {}, std::move(key), std::move(c)};
  return ti;
}

TransactItem TransactItem::Check(const Table& t, Key key, std::vector<Condition> c) {
  TransactItem ti{Kind::kConditionCheck, &t, {}, {}, std::move(key), std::move(c)};
  return ti;
}

// ---------------------------------------------------------------------------
// TransactWrite

Status TransactWrite(Connection& conn, const std::vector<TransactItem>& items,
                     UnitMeter* meter) {
  if (items.size() > kMaxTransactItems) {
    return InvalidArgument("transaction of " + std::to_string(items.size()) +
                           " items exceeds DynamoDB's 100");
  }
  // DynamoDB rejects a transaction that touches one item twice.
  std::set<std::pair<const Table*, std::vector<Value>>> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    const TransactItem& t = items[i];
    if (t.table == nullptr) {
      return InvalidArgument("transaction item " + std::to_string(i) + " has no table");
    }
    Key key;
    if (t.kind == TransactItem::Kind::kPut) {
      RETURN_IF_ERROR(t.table->ValidateItem(t.item).Annotate(
          "transaction item " + std::to_string(i) + " (" + t.table->name() + ")"));
      key = t.table->KeyOf(t.item);
    } else {
      key = t.kind == TransactItem::Kind::kUpdate ? t.update.key : t.key;
      RETURN_IF_ERROR(t.table->ValidateKey(key).Annotate(
          "transaction item " + std::to_string(i) + " (" + t.table->name() + ")"));
    }
    std::vector<Value> full = key.partition;
    full.insert(full.end(), key.sort.begin(), key.sort.end());
    if (!seen.emplace(t.table, std::move(full)).second) {
      return InvalidArgument("transaction item " + std::to_string(i) + " (" +
                             t.table->name() +
                             ") addresses an item already in the "
                             "transaction");
    }
  }

  RETURN_IF_ERROR(conn.Savepoint("sheetlog_transact"));
  std::vector<double> units(items.size(), 0);
  Status status;
  size_t i = 0;
  for (; i < items.size() && status.ok(); ++i) {
    const TransactItem& t = items[i];
    switch (t.kind) {
      case TransactItem::Kind::kPut:
        status = t.table->PutUncharged(conn, t.item, t.conditions, &units[i]);
        break;
      case TransactItem::Kind::kUpdate:
        status = t.table->UpdateUncharged(conn, t.update, &units[i]).status();
        break;
      case TransactItem::Kind::kDelete:
        status = t.table->DeleteUncharged(conn, t.key, t.conditions, &units[i]);
        break;
      case TransactItem::Kind::kConditionCheck:
        status = t.table->CheckUncharged(conn, t.key, t.conditions, &units[i]);
        break;
    }
    if (!status.ok()) {
      status = status.Annotate("transaction cancelled: item " + std::to_string(i) + " (" +
                               t.table->name() + ")");
    }
  }
  if (status.ok()) {
    status = conn.ReleaseSavepoint("sheetlog_transact");
  } else {
    Status undo = conn.RollbackToSavepoint("sheetlog_transact");
    if (undo.ok()) undo = conn.ReleaseSavepoint("sheetlog_transact");
    if (!undo.ok()) return undo;
  }
  // Transactional writes cost double, the cancelled ones included.
  for (size_t j = 0; j < i; ++j) items[j].table->Charge(meter, 0, 2 * units[j]);
  return status;
}

}  // namespace sheetlog
