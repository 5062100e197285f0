#include "emulator/queue/queue.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/env/uuid.h"

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

QueueOptions QueueFromRow(const Statement& s) {
  QueueOptions q;
  q.name = s.ColumnText(0);
  q.visibility_timeout_s = s.ColumnInt(1);
  q.delay_s = s.ColumnInt(2);
  q.retention_s = s.ColumnInt(3);
  q.max_receive_count = s.ColumnInt(4);
  q.dead_letter_queue = s.ColumnText(5);
  return q;
}

Result<QueueOptions> LoadQueue(SqliteConnection& c, const std::string& name) {
  ASSIGN_OR_RETURN(Statement s, c.Prepare(std::string("SELECT ") + kQueueColumns +
                                          " FROM queue WHERE name = ?1"));
  s.Bind(1, name);
  ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return NotFound("queue " + name + " does not exist");
  return QueueFromRow(s);
}

Result<bool> QueueExists(SqliteConnection& c, const std::string& name) {
  ASSIGN_OR_RETURN(Statement s, c.Prepare("SELECT 1 FROM queue WHERE name = ?1"));
  s.Bind(1, name);
  return s.Step();
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
// transaction. Sets *gone (and returns OK) if the message no longer exists.
Status CheckReceipt(SqliteConnection& c, const std::string& queue,
                    const ReceiptHandle& handle, bool* gone) {
  *gone = false;
  ASSIGN_OR_RETURN(bool exists, QueueExists(c, queue));
  if (!exists) return NotFound("queue " + queue + " does not exist");
  ASSIGN_OR_RETURN(
      Statement s,
      c.Prepare("SELECT queue, receipt, source_queue FROM queue_message WHERE id = ?1"));
  s.Bind(1, handle.message_id);
  ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) {
    *gone = true;
    return Status::OK();
  }
  std::string_view in_queue = s.ColumnView(0);
  if (in_queue == queue) {
    if (s.IsNull(1) || s.ColumnView(1) != handle.token) {
      return ConditionFailed("receipt handle is stale: message " + handle.message_id +
                             " was received again or redriven since");
    }
    return Status::OK();
  }
  if (!s.IsNull(2) && s.ColumnView(2) == queue) {
    return ConditionFailed("receipt handle is stale: message " + handle.message_id +
                           " was moved to dead-letter queue " + std::string(in_queue));
  }
  return InvalidArgument("receipt handle belongs to a message of another queue");
}

}  // namespace

QueueService::QueueService(Database* db, Clock* clock, FaultInjector* faults)
    : db_(db), clock_(clock), faults_(faults) {}

QueueService::~QueueService() { Shutdown(); }

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
  return db_->Write([&](SqliteConnection& c) -> Status {
    if (!dead_letter_queue.empty()) {
      ASSIGN_OR_RETURN(bool exists, QueueExists(c, dead_letter_queue));
      if (!exists) {
        return NotFound("dead-letter queue " + dead_letter_queue + " does not exist");
      }
    }
    int64_t now = clock_->NowMicros();
    ASSIGN_OR_RETURN(
        Statement s,
        c.Prepare(
            "INSERT INTO queue (name, visibility_timeout_s, delay_s, retention_s, "
            "max_receive_count, dead_letter_queue, created_micros, modified_micros) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) "
            "ON CONFLICT (name) DO UPDATE SET "
            "visibility_timeout_s = excluded.visibility_timeout_s, "
            "delay_s = excluded.delay_s, retention_s = excluded.retention_s, "
            "max_receive_count = excluded.max_receive_count, "
            "dead_letter_queue = excluded.dead_letter_queue, "
            "modified_micros = excluded.modified_micros"));
    s.Bind(1, options.name)
        .Bind(2, options.visibility_timeout_s)
        .Bind(3, options.delay_s)
        .Bind(4, options.retention_s)
        .Bind(5, options.max_receive_count)
        .Bind(6, dead_letter_queue)
        .Bind(7, now);
    return s.Run();
  });
}

Result<QueueOptions> QueueService::GetQueue(const std::string& name) {
  QueueOptions out;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& c) -> Status {
    ASSIGN_OR_RETURN(out, LoadQueue(c, name));
    return Status::OK();
  }));
  return out;
}

Result<std::vector<QueueOptions>> QueueService::ListQueues() {
  std::vector<QueueOptions> out;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& c) -> Status {
    out.clear();
    ASSIGN_OR_RETURN(Statement s, c.Prepare(std::string("SELECT ") + kQueueColumns +
                                            " FROM queue ORDER BY name"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return Status::OK();
      out.push_back(QueueFromRow(s));
    }
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

  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& c) -> Status {
    ASSIGN_OR_RETURN(QueueOptions q, LoadQueue(c, queue));
    int64_t now = clock_->NowMicros();
    int64_t visible_at = now + delay_s.value_or(q.delay_s) * kMicrosPerSecond;
    for (size_t i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(
          Statement s,
          c.Prepare("INSERT INTO queue_message (id, queue, body, sent_micros, "
                    "visible_at_micros) VALUES (?1, ?2, ?3, ?4, ?5)"));
      s.Bind(1, ids[i])
          .Bind(2, queue)
          .BindBlob(3, bodies[i])
          .Bind(4, now)
          .Bind(5, visible_at);
      RETURN_IF_ERROR(s.Run());
    }
    return Status::OK();
  }));
  Notify();
  return ids;
}

// ---------------------------------------------------------------------------
// Receive

Result<std::vector<ReceivedMessage>> QueueService::Receive(
    const std::string& queue, int max_messages,
    std::optional<int64_t> visibility_timeout_s) {
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
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& c) -> Status {
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
    // Ids handled by this call. With a visibility timeout of 0 a delivered message is
    // still visible, so later rounds must skip it rather than deliver it twice.
    std::unordered_set<std::string> handled;
    std::vector<std::string> duplicates;
    while (static_cast<int>(out.size()) < max_messages) {
      // Collect first, then modify: never change rows under an open index scan.
      std::vector<Candidate> candidates;
      {
        ASSIGN_OR_RETURN(
            Statement s,
            c.Prepare("SELECT id, body, sent_micros, receive_count, first_receive_micros "
                      "FROM queue_message WHERE queue = ?1 AND visible_at_micros <= ?2 "
                      "ORDER BY visible_at_micros LIMIT ?3"));
        s.Bind(1, queue).Bind(2, now).Bind(
            3, static_cast<int64_t>(max_messages - out.size() + handled.size()));
        while (true) {
          ASSIGN_OR_RETURN(bool row, s.Step());
          if (!row) break;
          std::string id = s.ColumnText(0);
          if (handled.count(id) > 0) continue;
          Candidate cand{std::move(id), s.ColumnText(1), s.ColumnInt(2), s.ColumnInt(3),
                         std::nullopt};
          if (!s.IsNull(4)) cand.first_receive_micros = s.ColumnInt(4);
          candidates.push_back(std::move(cand));
        }
      }
      if (candidates.empty()) break;

      for (Candidate& cand : candidates) {
        if (static_cast<int>(out.size()) >= max_messages) break;
        handled.insert(cand.id);
        if (cand.sent_micros < expired_before) {
          ASSIGN_OR_RETURN(Statement d,
                           c.Prepare("DELETE FROM queue_message WHERE id = ?1"));
          d.Bind(1, cand.id);
          RETURN_IF_ERROR(d.Run());
          continue;
        }
        if (dead_letter && cand.receive_count >= q.max_receive_count) {
          // SQS moves a message whose receive count has reached maxReceiveCount on the
          // next receive attempt instead of delivering it.
          ASSIGN_OR_RETURN(
              Statement m,
              c.Prepare(
                  "UPDATE queue_message SET queue = ?2, source_queue = ?3, "
                  "receipt = NULL, visible_at_micros = ?4, dead_lettered_micros = ?4 "
                  "WHERE id = ?1"));
          m.Bind(1, cand.id).Bind(2, q.dead_letter_queue).Bind(3, queue).Bind(4, now);
          RETURN_IF_ERROR(m.Run());
          moved_any = true;
          continue;
        }
        std::string token = NewRandomUuid();
        ASSIGN_OR_RETURN(
            Statement u,
            c.Prepare("UPDATE queue_message SET receive_count = receive_count + 1, "
                      "first_receive_micros = COALESCE(first_receive_micros, ?2), "
                      "receipt = ?3, visible_at_micros = ?4 WHERE id = ?1"));
        u.Bind(1, cand.id).Bind(2, now).Bind(3, token).Bind(4, hidden_until);
        RETURN_IF_ERROR(u.Run());
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
      ASSIGN_OR_RETURN(
          Statement v,
          c.Prepare("UPDATE queue_message SET visible_at_micros = ?2 WHERE id = ?1"));
      v.Bind(1, id).Bind(2, now);
      RETURN_IF_ERROR(v.Run());
      duplicated_any = true;
    }
    return Status::OK();
  }));
  if (moved_any || duplicated_any) Notify();
  return out;
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
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& c) -> Status {
    bool gone = false;
    RETURN_IF_ERROR(CheckReceipt(c, queue, handle, &gone));
    if (gone) return NotFound("message " + handle.message_id + " not found");
    ASSIGN_OR_RETURN(
        Statement s,
        c.Prepare("UPDATE queue_message SET visible_at_micros = ?2 WHERE id = ?1"));
    s.Bind(1, handle.message_id)
        .Bind(2, clock_->NowMicros() + seconds * kMicrosPerSecond);
    return s.Run();
  }));
  Notify();
  return Status::OK();
}

Status QueueService::Delete(const std::string& queue, const std::string& receipt_handle) {
  ASSIGN_OR_RETURN(ReceiptHandle handle, ParseReceipt(receipt_handle));
  RETURN_IF_ERROR(Hit(FaultPoint::kQueueDelete));
  return db_->Write([&](SqliteConnection& c) -> Status {
    bool gone = false;
    RETURN_IF_ERROR(CheckReceipt(c, queue, handle, &gone));
    if (gone) return Status::OK();  // deleted before: deleting twice is harmless
    ASSIGN_OR_RETURN(Statement s, c.Prepare("DELETE FROM queue_message WHERE id = ?1"));
    s.Bind(1, handle.message_id);
    return s.Run();
  });
}

Status QueueService::RecordFailure(const std::string& queue,
                                   const std::string& receipt_handle,
                                   const std::string& error_text) {
  ASSIGN_OR_RETURN(ReceiptHandle handle, ParseReceipt(receipt_handle));
  std::string_view text(error_text);
  text = text.substr(0, kMaxErrorBytes);
  return db_->Write([&](SqliteConnection& c) -> Status {
    bool gone = false;
    RETURN_IF_ERROR(CheckReceipt(c, queue, handle, &gone));
    if (gone) return NotFound("message " + handle.message_id + " not found");
    ASSIGN_OR_RETURN(Statement s,
                     c.Prepare("UPDATE queue_message SET last_error = ?2 WHERE id = ?1"));
    s.Bind(1, handle.message_id).Bind(2, text);
    return s.Run();
  });
}

// ---------------------------------------------------------------------------
// Dead letters

Result<std::optional<std::string>> QueueService::QueueOfMessage(
    const std::string& message_id) {
  std::optional<std::string> queue;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& c) -> Status {
    queue.reset();
    ASSIGN_OR_RETURN(Statement s,
                     c.Prepare("SELECT queue FROM queue_message WHERE id = ?"));
    s.Bind(1, message_id);
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) queue = s.ColumnText(0);
    return Status::OK();
  }));
  return queue;
}

Result<std::vector<DeadLetterMessage>> QueueService::ListDeadLetters(
    const std::string& dead_letter_queue, int limit, const std::string& after_id) {
  RETURN_IF_ERROR(ValidateRange("limit", limit, 1, kMaxListLimit));
  std::vector<DeadLetterMessage> out;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& c) -> Status {
    out.clear();
    ASSIGN_OR_RETURN(bool exists, QueueExists(c, dead_letter_queue));
    if (!exists) return NotFound("queue " + dead_letter_queue + " does not exist");
    // Page after (sent_micros, rowid) of `after_id`: oldest sent first, and messages
    // sent in the same microsecond (a manual clock stands still) in the order they were
    // inserted, not by their random ids. The first page starts below any key.
    int64_t after_sent = std::numeric_limits<int64_t>::min();
    int64_t after_row = std::numeric_limits<int64_t>::min();
    if (!after_id.empty()) {
      ASSIGN_OR_RETURN(Statement a,
                       c.Prepare("SELECT sent_micros, rowid FROM queue_message "
                                 "WHERE id = ?1 AND queue = ?2"));
      a.Bind(1, after_id).Bind(2, dead_letter_queue);
      ASSIGN_OR_RETURN(bool row, a.Step());
      if (!row) {
        return InvalidArgument("after_id " + after_id + " is not a message of " +
                               dead_letter_queue);
      }
      after_sent = a.ColumnInt(0);
      after_row = a.ColumnInt(1);
    }
    ASSIGN_OR_RETURN(
        Statement s,
        c.Prepare(
            "SELECT id, body, receive_count, last_error, sent_micros, source_queue, "
            "dead_lettered_micros FROM queue_message "
            "WHERE queue = ?1 AND (sent_micros > ?2 OR (sent_micros = ?2 AND rowid > "
            "?3)) "
            "ORDER BY sent_micros, rowid LIMIT ?4"));
    s.Bind(1, dead_letter_queue).Bind(2, after_sent).Bind(3, after_row).Bind(4, limit);
    while (true) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) return Status::OK();
      DeadLetterMessage m;
      m.id = s.ColumnText(0);
      m.body = s.ColumnText(1);
      m.receive_count = s.ColumnInt(2);
      m.last_error = s.ColumnText(3);
      m.sent_micros = s.ColumnInt(4);
      m.source_queue = s.ColumnText(5);
      m.dead_lettered_micros = s.ColumnInt(6);
      out.push_back(std::move(m));
    }
  }));
  return out;
}

Result<int64_t> QueueService::Redrive(const std::string& dead_letter_queue,
                                      std::optional<std::string> message_id) {
  int64_t moved = 0;
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& c) -> Status {
    moved = 0;
    ASSIGN_OR_RETURN(bool exists, QueueExists(c, dead_letter_queue));
    if (!exists) return NotFound("queue " + dead_letter_queue + " does not exist");
    const int64_t now = clock_->NowMicros();
    // Back to the recorded source queue, visible now, as if freshly sent (receive count
    // and first receive cleared, so max_receive_count starts over); last_error stays.
    constexpr const char* kMove =
        "UPDATE queue_message SET queue = source_queue, source_queue = NULL, "
        "dead_lettered_micros = NULL, receive_count = 0, first_receive_micros = NULL, "
        "receipt = NULL, visible_at_micros = ?2 "
        "WHERE queue = ?1 AND source_queue IN (SELECT name FROM queue)";
    if (message_id.has_value()) {
      ASSIGN_OR_RETURN(Statement f, c.Prepare("SELECT source_queue FROM queue_message "
                                              "WHERE id = ?1 AND queue = ?2"));
      f.Bind(1, *message_id).Bind(2, dead_letter_queue);
      ASSIGN_OR_RETURN(bool row, f.Step());
      if (!row) {
        return NotFound("message " + *message_id + " is not in " + dead_letter_queue);
      }
      if (f.IsNull(0)) {
        return FailedPrecondition("message " + *message_id +
                                  " has no source queue to return to");
      }
      std::string source = f.ColumnText(0);
      ASSIGN_OR_RETURN(bool source_exists, QueueExists(c, source));
      if (!source_exists) {
        return FailedPrecondition("source queue " + source + " no longer exists");
      }
      ASSIGN_OR_RETURN(Statement m, c.Prepare(std::string(kMove) + " AND id = ?3"));
      m.Bind(1, dead_letter_queue).Bind(2, now).Bind(3, *message_id);
      RETURN_IF_ERROR(m.Run());
    } else {
      ASSIGN_OR_RETURN(Statement m, c.Prepare(kMove));
      m.Bind(1, dead_letter_queue).Bind(2, now);
      RETURN_IF_ERROR(m.Run());
    }
    moved = c.Changes();
    return Status::OK();
  }));
  if (moved > 0) Notify();
  return moved;
}

Result<int64_t> QueueService::Purge(const std::string& queue) {
  int64_t deleted = 0;
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& c) -> Status {
    deleted = 0;
    ASSIGN_OR_RETURN(bool exists, QueueExists(c, queue));
    if (!exists) return NotFound("queue " + queue + " does not exist");
    ASSIGN_OR_RETURN(Statement d,
                     c.Prepare("DELETE FROM queue_message WHERE queue = ?1"));
    d.Bind(1, queue);
    RETURN_IF_ERROR(d.Run());
    deleted = c.Changes();
    return Status::OK();
  }));
  if (deleted > 0) Notify();
  return deleted;
}

// ---------------------------------------------------------------------------
// Retention

Result<int64_t> QueueService::PurgeExpired() {
  int64_t purged = 0;
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& c) -> Status {
    purged = 0;
    const int64_t now = clock_->NowMicros();
    std::vector<std::pair<std::string, int64_t>> queues;
    {
      ASSIGN_OR_RETURN(Statement s, c.Prepare("SELECT name, retention_s FROM queue"));
      while (true) {
        ASSIGN_OR_RETURN(bool row, s.Step());
        if (!row) break;
        queues.emplace_back(s.ColumnText(0), s.ColumnInt(1));
      }
    }
    for (const auto& [name, retention_s] : queues) {
      ASSIGN_OR_RETURN(Statement d,
                       c.Prepare("DELETE FROM queue_message WHERE queue = ?1 "
                                 "AND sent_micros < ?2"));
      d.Bind(1, name).Bind(2, now - retention_s * kMicrosPerSecond);
      RETURN_IF_ERROR(d.Run());
      purged += c.Changes();
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
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& c) -> Status {
    stats = QueueStats();
    ASSIGN_OR_RETURN(QueueOptions q, LoadQueue(c, queue));
    const int64_t now = clock_->NowMicros();
    {
      ASSIGN_OR_RETURN(Statement s,
                       c.Prepare("SELECT COUNT(*) FROM queue_message "
                                 "WHERE queue = ?1 AND visible_at_micros <= ?2"));
      s.Bind(1, queue).Bind(2, now);
      RETURN_IF_ERROR(s.Step().status());
      stats.visible = s.ColumnInt(0);
    }
    {
      ASSIGN_OR_RETURN(Statement s,
                       c.Prepare("SELECT TOTAL(receive_count > 0), "
                                 "TOTAL(receive_count = 0) FROM queue_message "
                                 "WHERE queue = ?1 AND visible_at_micros > ?2"));
      s.Bind(1, queue).Bind(2, now);
      RETURN_IF_ERROR(s.Step().status());
      stats.in_flight = static_cast<int64_t>(s.ColumnDouble(0));
      stats.delayed = static_cast<int64_t>(s.ColumnDouble(1));
    }
    {
      ASSIGN_OR_RETURN(Statement s,
                       c.Prepare("SELECT MIN(sent_micros) FROM queue_message "
                                 "WHERE queue = ?1"));
      s.Bind(1, queue);
      RETURN_IF_ERROR(s.Step().status());
      if (!s.IsNull(0)) {
        stats.oldest_age_s =
            std::max<int64_t>(0, (now - s.ColumnInt(0)) / kMicrosPerSecond);
      }
    }
    if (q.max_receive_count > 0 && !q.dead_letter_queue.empty()) {
      ASSIGN_OR_RETURN(Statement s,
                       c.Prepare("SELECT COUNT(*) FROM queue_message WHERE queue = ?1"));
      s.Bind(1, q.dead_letter_queue);
      RETURN_IF_ERROR(s.Step().status());
      stats.dead_letter_depth = s.ColumnInt(0);
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
    Status read = db_->Read([&](SqliteConnection& c) -> Status {
      earliest.reset();
      ASSIGN_OR_RETURN(bool exists, QueueExists(c, queue));
      if (!exists) return NotFound("queue " + queue + " does not exist");
      ASSIGN_OR_RETURN(Statement s, c.Prepare("SELECT MIN(visible_at_micros) FROM "
                                              "queue_message WHERE queue = ?1"));
      s.Bind(1, queue);
      RETURN_IF_ERROR(s.Step().status());
      if (!s.IsNull(0)) earliest = s.ColumnInt(0);
      return Status::OK();
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
