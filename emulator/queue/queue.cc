#include "emulator/queue/queue.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/env/uuid.h"
#include "emulator/table/connection.h"
#include "emulator/utf8.h"

namespace sheetlog {

namespace {

constexpr int64_t kMicrosPerSecond = 1000000;
constexpr int64_t kMaxVisibilityTimeoutS = 12 * 3600;  // SQS: 12 hours
constexpr int64_t kMaxDelayS = 900;                    // SQS: 15 minutes
constexpr int64_t kMaxRetentionS = 14 * 24 * 3600;     // SQS: 14 days
constexpr int64_t kMaxReceiveCountLimit = 1000;        // SQS redrive policy bound
constexpr size_t kMaxErrorBytes = 4096;
constexpr int kMaxListLimit = 1000;
// How often Receive purges expired messages of every queue, in clock time.
constexpr int64_t kPurgeIntervalMicros = 60 * kMicrosPerSecond;

Status ValidateQueueName(const std::string& name) {
  if (name.empty() || name.size() > 80) {
    return InvalidArgument("queue name must be 1..80 characters");
  }
  for (char ch : name) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
    if (!ok) return InvalidArgument("queue name may hold only [A-Za-z0-9_-]: " + name);
  }
  return Status::OK();
}

Status ValidateRange(const char* what, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) {
    return InvalidArgument(std::string(what) + " must be in " + std::to_string(low) +
                           ".." + std::to_string(high) + ", got " +
                           std::to_string(value));
  }
  return Status::OK();
}

constexpr const char* kQueueColumns =
    "name, visibility_timeout_s, delay_s, retention_s, max_receive_count, "
    "dead_letter_queue";

QueueOptions QueueFromRow(const SqlRow& row) {
  QueueOptions q;
  q.name = row.Text(0);
  q.visibility_timeout_s = row.Int(1);
  q.delay_s = row.Int(2);
  q.retention_s = row.Int(3);
  q.max_receive_count = row.Int(4);
  q.dead_letter_queue = row.Text(5);
  return q;
}

// Where the dialects differ, each statement is still written once, with these pieces.
// Row locks: PostgreSQL's transactions run at once on several connections (and nodes),
// so a statement that picks rows to change locks them; SQLite has one writer at a time
// and neither needs nor accepts a locking clause.
bool IsPostgresDialect(const Connection& c) {
  return c.dialect() == SqlDialect::kPostgres;
}
// The rows stay as read until the transaction ends; a row another transaction holds is
// waited for, then read as that one committed it.
const char* LockForUpdate(const Connection& c) {
  return IsPostgresDialect(c) ? " FOR UPDATE" : "";
}
// The same, except that rows another transaction holds are passed over, not waited
// for: two receivers never pick the same message and never wait for each other.
const char* LockSkippingLocked(const Connection& c) {
  return IsPostgresDialect(c) ? " FOR UPDATE SKIP LOCKED" : "";
}
// The column that orders messages by insertion (ties of a time, e.g. a SendBatch):
// SQLite's rowid; PostgreSQL has none and keeps an identity column (002_queue.sql).
const char* MessageInsertOrder(const Connection& c) {
  return IsPostgresDialect(c) ? "seq" : "rowid";
}

Status MissingQueue(const std::string& name) {
  return NotFound("queue " + name + " does not exist");
}

// LoadQueue and QueueExists: a name that is not a valid queue name names no queue, and
// never reaches the SQL (where PostgreSQL would refuse a NUL or malformed UTF-8).
Result<QueueOptions> LoadQueue(Connection& c, const std::string& name) {
  if (!ValidateQueueName(name).ok()) return MissingQueue(name);
  std::optional<QueueOptions> q;
  RETURN_IF_ERROR(
      c.RunSql(std::string("SELECT ") + kQueueColumns + " FROM queue WHERE name = ?1",
               {name},
               [&](const SqlRow& row) {
                 q = QueueFromRow(row);
                 return false;
               })
          .status());
  if (!q.has_value()) return MissingQueue(name);
  return std::move(*q);
}

// `lock`: the queue's row stays as read until the transaction ends (PostgreSQL), so
// that whole-queue changes of two nodes (Purge, Redrive) take turns.
Result<bool> QueueExists(Connection& c, const std::string& name, bool lock = false) {
  if (!ValidateQueueName(name).ok()) return false;
  ASSIGN_OR_RETURN(int64_t rows,
                   c.RunSql(std::string("SELECT 1 FROM queue WHERE name = ?1") +
                                (lock ? LockForUpdate(c) : ""),
                            {name}));
  return rows > 0;
}

// `text` as UTF-8 of at most `max_bytes`, cut at a character boundary, with U+FFFD for
// a NUL or a byte that is not well-formed UTF-8: error texts come from anywhere, and
// are stored as text (PostgreSQL holds no other) and shown as JSON.
std::string Utf8TextPrefix(std::string_view text, size_t max_bytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const Utf8Char ch = DecodeUtf8(text, i);
    const bool kept = ch.length > 0 && ch.code != 0;
    const std::string_view piece = kept ? text.substr(i, ch.length) : kReplacement;
    if (out.size() + piece.size() > max_bytes) break;
    out.append(piece);
    i += kept ? ch.length : 1;
  }
  return out;
}

// A receipt handle: "<message id>#<token>". The token changes on every receive.
struct ReceiptHandle {
  std::string message_id;
  std::string token;
};

Result<ReceiptHandle> ParseReceipt(const std::string& handle) {
  size_t hash = handle.find('#');
  if (hash == std::string::npos || hash + 1 >= handle.size() ||
      !IsUuid(std::string_view(handle).substr(0, hash))) {
    return InvalidArgument("malformed receipt handle");
  }
  return ReceiptHandle{handle.substr(0, hash), handle.substr(hash + 1)};
}

// Whether `handle` is the newest receipt of a message of `queue`, inside a write
// transaction. Sets *gone (and returns OK) if the message no longer exists. On
// PostgreSQL the message's row stays locked until the transaction ends, so no other
// node receives it again (a new receipt) between this check and the caller's change;
// a receive in progress elsewhere is waited for, and its new receipt makes this one
// stale.
Status CheckReceipt(Connection& c, const std::string& queue, const ReceiptHandle& handle,
                    bool* gone) {
  *gone = false;
  ASSIGN_OR_RETURN(bool exists, QueueExists(c, queue));
  if (!exists) return MissingQueue(queue);
  bool found = false;
  std::string in_queue;
  std::optional<std::string> receipt;
  std::optional<std::string> source_queue;
  RETURN_IF_ERROR(
      c.RunSql(std::string("SELECT queue, receipt, source_queue FROM queue_message "
                           "WHERE id = ?1") +
                   LockForUpdate(c),
               {handle.message_id},
               [&](const SqlRow& row) {
                 found = true;
                 in_queue = row.Text(0);
                 if (!row.IsNull(1)) receipt = row.Text(1);
                 if (!row.IsNull(2)) source_queue = row.Text(2);
                 return false;
               })
          .status());
  if (!found) {
    *gone = true;
    return Status::OK();
  }
  if (in_queue == queue) {
    if (receipt != handle.token) {
      return ConditionFailed("receipt handle is stale: message " + handle.message_id +
                             " was received again or redriven since");
    }
    return Status::OK();
  }
  if (source_queue == queue) {
    return ConditionFailed("receipt handle is stale: message " + handle.message_id +
                           " was moved to dead-letter queue " + in_queue);
  }
  return InvalidArgument("receipt handle belongs to a message of another queue");
}

}  // namespace

// What the database's remote listener holds (it cannot be removed): the service,
// until the service is destroyed.
struct QueueService::RemoteWake {
  Mutex mu;
  QueueService* service GUARDED_BY(mu) = nullptr;
};

QueueService::QueueService(Transactions* db, Clock* clock, FaultInjector* faults)
    : db_(db),
      clock_(clock),
      faults_(faults),
      remote_wake_(std::make_shared<RemoteWake>()) {
  {
    MutexLock lock(&remote_wake_->mu);
    remote_wake_->service = this;
  }
  // Another node's Send wakes this node's receivers at once, not at their deadline.
  db_->AddRemoteCommitListener(RemoteChange::kQueue, [wake = remote_wake_] {
    MutexLock lock(&wake->mu);
    if (wake->service != nullptr) wake->service->Notify();
  });
}

QueueService::~QueueService() {
  {
    MutexLock lock(&remote_wake_->mu);
    remote_wake_->service = nullptr;
  }
  Shutdown();
}

Status QueueService::Hit(FaultPoint point) {
  if (faults_ == nullptr) return Status::OK();
  return faults_->Hit(point);
}

void QueueService::Notify() {
  MutexLock lock(&mu_);
  ++change_seq_;
  cv_.NotifyAll();
}

void QueueService::WakeWaiters() {
  MutexLock lock(&mu_);
  ++wake_generation_;
  cv_.NotifyAll();
}

void QueueService::Shutdown() {
  MutexLock lock(&mu_);
  shutdown_ = true;
  cv_.NotifyAll();
}

// ---------------------------------------------------------------------------
// Queues

Status QueueService::CreateQueue(const QueueOptions& options) {
  RETURN_IF_ERROR(ValidateQueueName(options.name));
  RETURN_IF_ERROR(ValidateRange("visibility_timeout_s", options.visibility_timeout_s, 0,
                                kMaxVisibilityTimeoutS));
  RETURN_IF_ERROR(ValidateRange("delay_s", options.delay_s, 0, kMaxDelayS));
  RETURN_IF_ERROR(ValidateRange("retention_s", options.retention_s, 1, kMaxRetentionS));
  RETURN_IF_ERROR(ValidateRange("max_receive_count", options.max_receive_count, 0,
                                kMaxReceiveCountLimit));
  std::string dead_letter_queue;
  if (options.max_receive_count > 0) {
    dead_letter_queue = options.dead_letter_queue;
    RETURN_IF_ERROR(ValidateQueueName(dead_letter_queue)
                        .Annotate("dead_letter_queue (required with max_receive_count)"));
    if (dead_letter_queue == options.name) {
      return InvalidArgument("a queue cannot be its own dead-letter queue");
    }
  }
  return db_->Write([&](Connection& c) -> Status {
    if (!dead_letter_queue.empty()) {
      ASSIGN_OR_RETURN(bool exists, QueueExists(c, dead_letter_queue));
      if (!exists) {
        return NotFound("dead-letter queue " + dead_letter_queue + " does not exist");
      }
    }
    const int64_t now = clock_->NowMicros();
    return c
        .RunSql(
            "INSERT INTO queue (name, visibility_timeout_s, delay_s, retention_s, "
            "max_receive_count, dead_letter_queue, created_micros, modified_micros) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) "
            "ON CONFLICT (name) DO UPDATE SET "
            "visibility_timeout_s = excluded.visibility_timeout_s, "
            "delay_s = excluded.delay_s, retention_s = excluded.retention_s, "
            "max_receive_count = excluded.max_receive_count, "
            "dead_letter_queue = excluded.dead_letter_queue, "
            "modified_micros = excluded.modified_micros",
            {options.name, options.visibility_timeout_s, options.delay_s,
             options.retention_s, options.max_receive_count, dead_letter_queue, now})
        .status();
  });
}

Result<QueueOptions> QueueService::GetQueue(const std::string& name) {
  QueueOptions out;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(out, LoadQueue(c, name));
    return Status::OK();
  }));
  return out;
}

Result<std::vector<QueueOptions>> QueueService::ListQueues() {
  std::vector<QueueOptions> out;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    out.clear();
    return c
        .RunSql(std::string("SELECT ") + kQueueColumns + " FROM queue ORDER BY name", {},
                [&](const SqlRow& row) {
                  out.push_back(QueueFromRow(row));
                  return true;
                })
        .status();
  }));
  return out;
}

// ---------------------------------------------------------------------------
// Send

Result<std::string> QueueService::Send(const std::string& queue, const std::string& body,
                                       std::optional<int64_t> delay_s) {
  ASSIGN_OR_RETURN(std::vector<std::string> ids, SendMany(queue, &body, 1, delay_s));
  return std::move(ids.front());
}

Result<std::vector<std::string>> QueueService::SendBatch(
    const std::string& queue, const std::vector<std::string>& bodies,
    std::optional<int64_t> delay_s) {
  if (bodies.empty() || bodies.size() > static_cast<size_t>(kMaxReceiveBatch)) {
    return InvalidArgument("a batch holds 1..10 messages");
  }
  return SendMany(queue, bodies.data(), bodies.size(), delay_s);
}

Result<std::vector<std::string>> QueueService::SendMany(const std::string& queue,
                                                        const std::string* bodies,
                                                        size_t count,
                                                        std::optional<int64_t> delay_s) {
  for (size_t i = 0; i < count; ++i) {
    if (bodies[i].empty()) return InvalidArgument("message body must not be empty");
    if (bodies[i].size() > kMaxBodyBytes) {
      return ResourceExhausted("message body of " + std::to_string(bodies[i].size()) +
                               " bytes exceeds " + std::to_string(kMaxBodyBytes));
    }
  }
  if (delay_s.has_value()) {
    RETURN_IF_ERROR(ValidateRange("delay_s", *delay_s, 0, kMaxDelayS));
  }
  RETURN_IF_ERROR(Hit(FaultPoint::kQueueSend));
  std::vector<std::string> ids;
  ids.reserve(count);
  for (size_t i = 0; i < count; ++i) ids.push_back(NewRandomUuid());

  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(QueueOptions q, LoadQueue(c, queue));
    const int64_t now = clock_->NowMicros();
    const int64_t visible_at = now + delay_s.value_or(q.delay_s) * kMicrosPerSecond;
    for (size_t i = 0; i < count; ++i) {
      RETURN_IF_ERROR(c.RunSql("INSERT INTO queue_message (id, queue, body, sent_micros, "
                               "visible_at_micros) VALUES (?1, ?2, ?3, ?4, ?5)",
                               {ids[i], queue, Value::Bytes(bodies[i]), now, visible_at})
                          .status());
    }
    c.WakeOtherProcessesAtCommit(RemoteChange::kQueue);  // their receivers may wait
    return Status::OK();
  }));
  Notify();
  return ids;
}

// ---------------------------------------------------------------------------
// Receive

Result<std::vector<ReceivedMessage>> QueueService::Receive(
    const std::string& queue, int max_messages,
    std::optional<int64_t> visibility_timeout_s, const std::string& receiver) {
  RETURN_IF_ERROR(ValidateRange("max_messages", max_messages, 1, kMaxReceiveBatch));
  if (visibility_timeout_s.has_value()) {
    RETURN_IF_ERROR(ValidateRange("visibility_timeout_s", *visibility_timeout_s, 0,
                                  kMaxVisibilityTimeoutS));
  }
  RETURN_IF_ERROR(Hit(FaultPoint::kQueueReceive));
  RETURN_IF_ERROR(PurgeExpiredIfDue());

  std::vector<ReceivedMessage> out;
  bool moved_any = false;
  bool duplicated_any = false;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    out.clear();
    moved_any = false;
    duplicated_any = false;
    ASSIGN_OR_RETURN(QueueOptions q, LoadQueue(c, queue));
    const int64_t now = clock_->NowMicros();
    const int64_t hidden_until =
        now + visibility_timeout_s.value_or(q.visibility_timeout_s) * kMicrosPerSecond;
    const int64_t expired_before = now - q.retention_s * kMicrosPerSecond;
    bool dead_letter = false;
    if (q.max_receive_count > 0 && !q.dead_letter_queue.empty()) {
      ASSIGN_OR_RETURN(dead_letter, QueueExists(c, q.dead_letter_queue));
    }

    struct Candidate {
      std::string id;
      std::string body;
      int64_t sent_micros;
      int64_t receive_count;
      std::optional<int64_t> first_receive_micros;
    };
    // Earliest visible first (ties in the order sent). On PostgreSQL the picked rows
    // stay locked by this transaction until it commits, and rows another receiver has
    // locked are passed over: each message goes to one receiver, and neither waits. A
    // message another node received and committed meanwhile is read as committed (no
    // longer visible) and not picked.
    const std::string pick =
        std::string(
            "SELECT id, body, sent_micros, receive_count, first_receive_micros "
            "FROM queue_message WHERE queue = ?1 AND visible_at_micros <= ?2 "
            "ORDER BY visible_at_micros, ") +
        MessageInsertOrder(c) + " LIMIT ?3" + LockSkippingLocked(c);
    // Ids handled by this call. With a visibility timeout of 0 a delivered message is
    // still visible, so later rounds must skip it rather than deliver it twice.
    std::unordered_set<std::string> handled;
    std::vector<std::string> duplicates;
    while (static_cast<int>(out.size()) < max_messages) {
      // Collect first, then modify: never change rows under an open index scan.
      std::vector<Candidate> candidates;
      RETURN_IF_ERROR(
          c.RunSql(pick,
                   {queue, now,
                    static_cast<int64_t>(max_messages - out.size() + handled.size())},
                   [&](const SqlRow& row) {
                     std::string id = row.Text(0);
                     if (handled.count(id) > 0) return true;
                     Candidate cand{std::move(id), row.Text(1), row.Int(2), row.Int(3),
                                    std::nullopt};
                     if (!row.IsNull(4)) cand.first_receive_micros = row.Int(4);
                     candidates.push_back(std::move(cand));
                     return true;
                   })
              .status());
      if (candidates.empty()) break;

      for (Candidate& cand : candidates) {
        if (static_cast<int>(out.size()) >= max_messages) break;
        handled.insert(cand.id);
        if (cand.sent_micros < expired_before) {
          RETURN_IF_ERROR(
              c.RunSql("DELETE FROM queue_message WHERE id = ?1", {cand.id}).status());
          continue;
        }
        if (dead_letter && cand.receive_count >= q.max_receive_count) {
          // SQS moves a message whose receive count has reached maxReceiveCount on the
          // next receive attempt instead of delivering it.
          RETURN_IF_ERROR(
              c.RunSql(
                   "UPDATE queue_message SET queue = ?2, source_queue = ?3, "
                   "receipt = NULL, visible_at_micros = ?4, dead_lettered_micros = ?4 "
                   "WHERE id = ?1",
                   {cand.id, q.dead_letter_queue, queue, now})
                  .status());
          moved_any = true;
          continue;
        }
        std::string token = NewRandomUuid();
        RETURN_IF_ERROR(
            c.RunSql("UPDATE queue_message SET receive_count = receive_count + 1, "
                     "first_receive_micros = COALESCE(first_receive_micros, ?2), "
                     "receipt = ?3, visible_at_micros = ?4, receiver_owner = ?5 "
                     "WHERE id = ?1",
                     {cand.id, now, token, hidden_until,
                      receiver.empty() ? Value::Null() : Value(receiver)})
                .status());
        if (faults_ != nullptr &&
            faults_->ShouldDuplicate(FaultPoint::kQueueReceiveDuplicate)) {
          duplicates.push_back(cand.id);
        }
        ReceivedMessage msg;
        msg.receipt_handle = cand.id + "#" + token;
        msg.id = std::move(cand.id);
        msg.body = std::move(cand.body);
        msg.receive_count = cand.receive_count + 1;
        msg.sent_micros = cand.sent_micros;
        msg.first_receive_micros = cand.first_receive_micros.value_or(now);
        out.push_back(std::move(msg));
      }
    }
    // Injected duplicate delivery: the message stays receivable right away.
    for (const std::string& id : duplicates) {
      RETURN_IF_ERROR(
          c.RunSql("UPDATE queue_message SET visible_at_micros = ?2 WHERE id = ?1",
                   {id, now})
              .status());
      duplicated_any = true;
    }
    return Status::OK();
  }));
  if (moved_any || duplicated_any) Notify();
  return out;
}

Result<int64_t> QueueService::ReleaseReceivedBy(
    const std::vector<std::string>& receivers) {
  if (receivers.empty()) return int64_t{0};
  int64_t released = 0;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    released = 0;
    const int64_t now = clock_->NowMicros();
    for (const std::string& receiver : receivers) {
      ASSIGN_OR_RETURN(const int64_t changed,
                       c.RunSql("UPDATE queue_message SET visible_at_micros = ?2, "
                                "receiver_owner = NULL WHERE receiver_owner = ?1 AND "
                                "visible_at_micros > ?2",
                                {receiver, now}));
      released += changed;
    }
    if (released > 0) c.WakeOtherProcessesAtCommit(RemoteChange::kQueue);
    return Status::OK();
  }));
  if (released > 0) Notify();
  return released;
}

// ---------------------------------------------------------------------------
// Acting on a received message

Status QueueService::ChangeVisibility(const std::string& queue,
                                      const std::string& receipt_handle,
                                      int64_t seconds) {
  RETURN_IF_ERROR(
      ValidateRange("visibility timeout", seconds, 0, kMaxVisibilityTimeoutS));
  ASSIGN_OR_RETURN(ReceiptHandle handle, ParseReceipt(receipt_handle));
  RETURN_IF_ERROR(Hit(FaultPoint::kQueueChangeVisibility));
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    bool gone = false;
    RETURN_IF_ERROR(CheckReceipt(c, queue, handle, &gone));
    if (gone) return NotFound("message " + handle.message_id + " not found");
    c.WakeOtherProcessesAtCommit(RemoteChange::kQueue);
    return c
        .RunSql("UPDATE queue_message SET visible_at_micros = ?2 WHERE id = ?1",
                {handle.message_id, clock_->NowMicros() + seconds * kMicrosPerSecond})
        .status();
  }));
  Notify();
  return Status::OK();
}

Status QueueService::Delete(const std::string& queue, const std::string& receipt_handle) {
  ASSIGN_OR_RETURN(ReceiptHandle handle, ParseReceipt(receipt_handle));
  RETURN_IF_ERROR(Hit(FaultPoint::kQueueDelete));
  return db_->Write([&](Connection& c) -> Status {
    bool gone = false;
    RETURN_IF_ERROR(CheckReceipt(c, queue, handle, &gone));
    if (gone) return Status::OK();  // deleted before: deleting twice is harmless
    return c.RunSql("DELETE FROM queue_message WHERE id = ?1", {handle.message_id})
        .status();
  });
}

Status QueueService::RecordFailure(const std::string& queue,
                                   const std::string& receipt_handle,
                                   const std::string& error_text) {
  ASSIGN_OR_RETURN(ReceiptHandle handle, ParseReceipt(receipt_handle));
  const std::string text = Utf8TextPrefix(error_text, kMaxErrorBytes);
  return db_->Write([&](Connection& c) -> Status {
    bool gone = false;
    RETURN_IF_ERROR(CheckReceipt(c, queue, handle, &gone));
    if (gone) return NotFound("message " + handle.message_id + " not found");
    return c
        .RunSql("UPDATE queue_message SET last_error = ?2 WHERE id = ?1",
                {handle.message_id, text})
        .status();
  });
}

// ---------------------------------------------------------------------------
// Dead letters

Result<std::optional<std::string>> QueueService::QueueOfMessage(
    const std::string& message_id) {
  std::optional<std::string> queue;
  if (!IsUuid(message_id)) return queue;  // not an id Send gives: no such message
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    queue.reset();
    return c
        .RunSql("SELECT queue FROM queue_message WHERE id = ?1", {message_id},
                [&](const SqlRow& row) {
                  queue = row.Text(0);
                  return false;
                })
        .status();
  }));
  return queue;
}

Result<std::vector<DeadLetterMessage>> QueueService::ListDeadLetters(
    const std::string& dead_letter_queue, int limit, const std::string& after_id) {
  RETURN_IF_ERROR(ValidateRange("limit", limit, 1, kMaxListLimit));
  std::vector<DeadLetterMessage> out;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    out.clear();
    ASSIGN_OR_RETURN(bool exists, QueueExists(c, dead_letter_queue));
    if (!exists) return MissingQueue(dead_letter_queue);
    // Page after (sent_micros, insertion order) of `after_id`: oldest sent first, and
    // messages sent in the same microsecond (a manual clock stands still) in the order
    // they were inserted, not by their random ids. The first page starts below any key.
    int64_t after_sent = std::numeric_limits<int64_t>::min();
    int64_t after_row = std::numeric_limits<int64_t>::min();
    if (!after_id.empty()) {
      bool found = false;
      if (IsUuid(after_id)) {
        RETURN_IF_ERROR(c.RunSql(std::string("SELECT sent_micros, ") +
                                     MessageInsertOrder(c) +
                                     " FROM queue_message WHERE id = ?1 AND queue = ?2",
                                 {after_id, dead_letter_queue},
                                 [&](const SqlRow& row) {
                                   found = true;
                                   after_sent = row.Int(0);
                                   after_row = row.Int(1);
                                   return false;
                                 })
                            .status());
      }
      if (!found) {
        return InvalidArgument("after_id " + after_id + " is not a message of " +
                               dead_letter_queue);
      }
    }
    const std::string order = MessageInsertOrder(c);
    return c
        .RunSql(
            "SELECT id, body, receive_count, last_error, sent_micros, source_queue, "
            "dead_lettered_micros FROM queue_message "
            "WHERE queue = ?1 AND (sent_micros > ?2 OR (sent_micros = ?2 AND " +
                order + " > ?3)) ORDER BY sent_micros, " + order + " LIMIT ?4",
            {dead_letter_queue, after_sent, after_row, limit},
            [&](const SqlRow& row) {
              DeadLetterMessage m;
              m.id = row.Text(0);
              m.body = row.Text(1);
              m.receive_count = row.Int(2);
              m.last_error = row.Text(3);
              m.sent_micros = row.Int(4);
              m.source_queue = row.Text(5);
              m.dead_lettered_micros = row.Int(6);
              out.push_back(std::move(m));
              return true;
            })
        .status();
  }));
  return out;
}

Result<int64_t> QueueService::Redrive(const std::string& dead_letter_queue,
                                      std::optional<std::string> message_id) {
  int64_t moved = 0;
  bool expired_one = false;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    moved = 0;
    expired_one = false;
    // Locked: two nodes redriving one queue take turns instead of updating the same
    // messages in different orders (a deadlock).
    ASSIGN_OR_RETURN(bool exists, QueueExists(c, dead_letter_queue, /*lock=*/true));
    if (!exists) return MissingQueue(dead_letter_queue);
    ASSIGN_OR_RETURN(QueueOptions dlq, LoadQueue(c, dead_letter_queue));
    const int64_t now = clock_->NowMicros();
    // Messages past the dead-letter queue's own retention are expired: the retention
    // purge removes them whenever it next runs, and no Receive delivers them. They are
    // removed here, not moved and not counted, so a redrive never reports a message
    // that is then dropped.
    const int64_t expired_before = now - dlq.retention_s * kMicrosPerSecond;
    // Back to the recorded source queue, visible now, as if freshly sent (receive count
    // and first receive cleared, so max_receive_count starts over; sent time reset, so
    // the source queue's retention starts over, as SQS's redrive does: its redriven
    // messages are new messages with a new enqueue time); last_error and the id stay.
    // A message being received from the dead-letter queue elsewhere is waited for, then
    // moved (its receipt goes stale), as if the receive had come first.
    constexpr const char* kMove =
        "UPDATE queue_message SET queue = source_queue, source_queue = NULL, "
        "dead_lettered_micros = NULL, receive_count = 0, first_receive_micros = NULL, "
        "receipt = NULL, visible_at_micros = ?2, sent_micros = ?2 "
        "WHERE queue = ?1 AND source_queue IN (SELECT name FROM queue)";
    if (!message_id.has_value()) {
      RETURN_IF_ERROR(c.RunSql("DELETE FROM queue_message WHERE queue = ?1 AND "
                               "sent_micros < ?2",
                               {dead_letter_queue, expired_before})
                          .status());
      ASSIGN_OR_RETURN(moved, c.RunSql(kMove, {dead_letter_queue, now}));
      if (moved > 0) c.WakeOtherProcessesAtCommit(RemoteChange::kQueue);
      return Status::OK();
    }
    bool found = false;
    std::optional<std::string> source;
    int64_t sent_micros = 0;
    if (IsUuid(*message_id)) {
      RETURN_IF_ERROR(c.RunSql("SELECT source_queue, sent_micros FROM queue_message "
                               "WHERE id = ?1 AND queue = ?2",
                               {*message_id, dead_letter_queue},
                               [&](const SqlRow& row) {
                                 found = true;
                                 if (!row.IsNull(0)) source = row.Text(0);
                                 sent_micros = row.Int(1);
                                 return false;
                               })
                          .status());
    }
    if (!found) {
      return NotFound("message " + *message_id + " is not in " + dead_letter_queue);
    }
    if (sent_micros < expired_before) {
      RETURN_IF_ERROR(
          c.RunSql("DELETE FROM queue_message WHERE id = ?1", {*message_id}).status());
      expired_one = true;  // committed; reported as NotFound below
      return Status::OK();
    }
    if (!source.has_value()) {
      return FailedPrecondition("message " + *message_id +
                                " has no source queue to return to");
    }
    ASSIGN_OR_RETURN(bool source_exists, QueueExists(c, *source));
    if (!source_exists) {
      return FailedPrecondition("source queue " + *source + " no longer exists");
    }
    ASSIGN_OR_RETURN(moved, c.RunSql(std::string(kMove) + " AND id = ?3",
                                     {dead_letter_queue, now, *message_id}));
    c.WakeOtherProcessesAtCommit(RemoteChange::kQueue);
    return Status::OK();
  }));
  if (expired_one) {
    return NotFound("message " + *message_id + " of " + dead_letter_queue +
                    " was past the queue's retention: expired (removed), not redriven");
  }
  if (moved > 0) Notify();
  return moved;
}

Result<int64_t> QueueService::Purge(const std::string& queue) {
  int64_t deleted = 0;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    deleted = 0;
    // Locked: two purges of one queue take turns. Messages being received elsewhere
    // are waited for, then deleted: every message sent before the purge goes.
    ASSIGN_OR_RETURN(bool exists, QueueExists(c, queue, /*lock=*/true));
    if (!exists) return MissingQueue(queue);
    ASSIGN_OR_RETURN(deleted,
                     c.RunSql("DELETE FROM queue_message WHERE queue = ?1", {queue}));
    return Status::OK();
  }));
  if (deleted > 0) Notify();
  return deleted;
}

Result<int64_t> QueueService::DeleteAllMessages(Connection& conn) {
  return conn.RunSql("DELETE FROM queue_message", {});
}

// ---------------------------------------------------------------------------
// Retention

Result<int64_t> QueueService::PurgeExpired() {
  int64_t purged = 0;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    purged = 0;
    const int64_t now = clock_->NowMicros();
    std::vector<std::pair<std::string, int64_t>> queues;
    RETURN_IF_ERROR(
        c.RunSql("SELECT name, retention_s FROM queue", {}, [&](const SqlRow& row) {
           queues.emplace_back(row.Text(0), row.Int(1));
           return true;
         }).status());
    // Expired messages that a receiver elsewhere holds are passed over, not waited
    // for: that receive deletes them itself (it never delivers an expired message),
    // and two nodes purging at once never wait for each other.
    const std::string purge =
        std::string(
            "DELETE FROM queue_message WHERE id IN (SELECT id FROM queue_message "
            "WHERE queue = ?1 AND sent_micros < ?2") +
        LockSkippingLocked(c) + ")";
    for (const auto& [name, retention_s] : queues) {
      ASSIGN_OR_RETURN(int64_t deleted,
                       c.RunSql(purge, {name, now - retention_s * kMicrosPerSecond}));
      purged += deleted;
    }
    return Status::OK();
  }));
  return purged;
}

Status QueueService::PurgeExpiredIfDue() {
  {
    MutexLock lock(&mu_);
    int64_t now = clock_->NowMicros();
    if (last_purge_micros_ != 0 && now - last_purge_micros_ < kPurgeIntervalMicros) {
      return Status::OK();
    }
    last_purge_micros_ = now;
  }
  return PurgeExpired().status();
}

// ---------------------------------------------------------------------------
// Observing

Result<QueueStats> QueueService::Stats(const std::string& queue) {
  QueueStats stats;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    stats = QueueStats();
    ASSIGN_OR_RETURN(QueueOptions q, LoadQueue(c, queue));
    const int64_t now = clock_->NowMicros();
    // One pass over the queue: visible, in flight (received, hidden), delayed (never
    // received, hidden), and the oldest sent time.
    RETURN_IF_ERROR(
        c.RunSql("SELECT "
                 "COALESCE(SUM(CASE WHEN visible_at_micros <= ?2 THEN 1 ELSE 0 END), 0), "
                 "COALESCE(SUM(CASE WHEN visible_at_micros > ?2 AND receive_count > 0 "
                 "THEN 1 ELSE 0 END), 0), "
                 "COALESCE(SUM(CASE WHEN visible_at_micros > ?2 AND receive_count = 0 "
                 "THEN 1 ELSE 0 END), 0), "
                 "MIN(sent_micros) FROM queue_message WHERE queue = ?1",
                 {queue, now},
                 [&](const SqlRow& row) {
                   stats.visible = row.Int(0);
                   stats.in_flight = row.Int(1);
                   stats.delayed = row.Int(2);
                   if (!row.IsNull(3)) {
                     stats.oldest_age_s =
                         std::max<int64_t>(0, (now - row.Int(3)) / kMicrosPerSecond);
                   }
                   return false;
                 })
            .status());
    if (q.max_receive_count > 0 && !q.dead_letter_queue.empty()) {
      RETURN_IF_ERROR(c.RunSql("SELECT COUNT(*) FROM queue_message WHERE queue = ?1",
                               {q.dead_letter_queue},
                               [&](const SqlRow& row) {
                                 stats.dead_letter_depth = row.Int(0);
                                 return false;
                               })
                          .status());
    }
    return Status::OK();
  }));
  return stats;
}

Result<bool> QueueService::WaitForMessages(const std::string& queue,
                                           int64_t deadline_micros) {
  MutexLock lock(&mu_);
  const uint64_t wake_generation = wake_generation_;
  while (true) {
    if (shutdown_) return Unavailable("queue service is shutting down");
    if (wake_generation_ != wake_generation) return false;
    // Read the change counter before the database: a Send that commits after our read
    // has bumped it by the time we compare below, so its wake-up is never lost.
    const uint64_t seen = change_seq_;
    lock.Unlock();
    std::optional<int64_t> earliest;
    Status read = db_->Read([&](Connection& c) -> Status {
      earliest.reset();
      ASSIGN_OR_RETURN(bool exists, QueueExists(c, queue));
      if (!exists) return MissingQueue(queue);
      return c
          .RunSql("SELECT MIN(visible_at_micros) FROM queue_message WHERE queue = ?1",
                  {queue},
                  [&](const SqlRow& row) {
                    if (!row.IsNull(0)) earliest = row.Int(0);
                    return false;
                  })
          .status();
    });
    lock.Lock();
    if (!read.ok()) return read;
    int64_t now = clock_->NowMicros();
    if (earliest.has_value() && *earliest <= now) return true;
    if (now >= deadline_micros) return false;
    const int64_t until =
        earliest.has_value() ? std::min(*earliest, deadline_micros) : deadline_micros;
    while (change_seq_ == seen && !shutdown_ && wake_generation_ == wake_generation &&
           clock_->NowMicros() < until) {
      clock_->WaitUntil(cv_, mu_, until);
    }
  }
}

}  // namespace sheetlog
