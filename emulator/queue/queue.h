// QueueService: the SQS standard-queue stand-in, stored in the database (the same
// tables on SQLite and PostgreSQL: emulator/schema/*/002_queue.sql), so messages, their
// in-flight state and receive counts survive a restart. As SQS standard queues:
// delivery is at least once (a consumer must tolerate seeing a message again); Receive
// hides each message it hands out for the visibility timeout; a message is removed only
// by Delete or by retention expiry; with max_receive_count > 0 the next Receive moves a
// message that reached it to the dead-letter queue, and Redrive moves it back.
//
// Receipt handles: every receive issues a new one, opaque to callers, and only the
// newest acts on the message (even after its visibility timeout, as long as nobody has
// received the message since). An older handle is stale: ConditionFailed, nothing
// changes; for Delete this is stricter than SQS, so a slow first consumer never removes
// the message a second one is working on. Other errors: no such queue is NotFound, a
// bad argument InvalidArgument, a body over 256 KiB ResourceExhausted, an armed fault
// point Unavailable.
//
// Thread-safe. All state lives in the database; the object itself only holds waiters
// (WaitForMessages), so use one per database handle. Several processes on one
// PostgreSQL database keep every promise here. The semantics in full, errors, fault
// points and wake-ups: docs/architecture.md "The queue (emulator/queue/)"; across
// nodes: docs/cluster.md "The queue on PostgreSQL".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/env/fault_points.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;
class FaultInjector;

struct QueueOptions {
  // 1..80 characters of [A-Za-z0-9_-] (SQS's rule).
  std::string name;
  // How long a received message stays hidden. 0..43200 (12 h). Default: 30.
  int64_t visibility_timeout_s = 30;
  // How long a sent message stays hidden before its first delivery. 0..900. Default: 0.
  int64_t delay_s = 0;
  // Messages older than this (by sent time) are removed. 1..1209600. Default: 14 days.
  int64_t retention_s = 14 * 24 * 3600;
  // Receives after which the next Receive moves the message to `dead_letter_queue`
  // instead of delivering it. 0 = never (no dead-letter queue). Default: 0.
  int64_t max_receive_count = 0;
  // Name of the dead-letter queue. REQUIRES when max_receive_count > 0: an existing
  // queue other than this one. Ignored (stored empty) when max_receive_count == 0.
  std::string dead_letter_queue;
};

// A message as Receive delivers it.
struct ReceivedMessage {
  std::string id;                    // UUID assigned by Send; stable across DLQ moves
  std::string body;                  // exactly the bytes sent
  std::string receipt_handle;        // new on every receive; see the file comment
  int64_t receive_count = 0;         // including this receive (1 on the first)
  int64_t sent_micros = 0;           // clock time of Send (or of the last Redrive)
  int64_t first_receive_micros = 0;  // clock time of the first receive ever
};

// A message sitting in a dead-letter queue, as ListDeadLetters shows it.
struct DeadLetterMessage {
  std::string id;
  std::string body;
  int64_t receive_count = 0;  // receives before it was dead-lettered (plus any since)
  std::string last_error;     // the last RecordFailure text; empty if none
  int64_t sent_micros = 0;    // original Send time
  std::string
      source_queue;  // where Redrive returns it; empty if sent to the DLQ directly
  int64_t dead_lettered_micros = 0;  // when it was moved; 0 if sent directly
};

struct QueueStats {
  int64_t visible = 0;    // receivable now
  int64_t in_flight = 0;  // received and still hidden by a visibility timeout
  int64_t delayed = 0;    // never received and still hidden by a send delay
  // Messages in this queue's dead-letter queue; nullopt if it has none.
  std::optional<int64_t> dead_letter_depth;
  // Age of the oldest message in the queue (by sent time), whole seconds; 0 if empty.
  int64_t oldest_age_s = 0;
};

class QueueService {
 public:
  static constexpr int kMaxReceiveBatch = 10;
  static constexpr size_t kMaxBodyBytes = 256 * 1024;

  // `db` (SQLite's Database or a PostgresDatabase), `clock` must outlive this object.
  // `faults` may be null (no fault points).
  QueueService(Transactions* db, Clock* clock, FaultInjector* faults = nullptr);
  ~QueueService();
  QueueService(const QueueService&) = delete;
  QueueService& operator=(const QueueService&) = delete;

  // Creates the queue, or updates the options of an existing queue of that name
  // (idempotent). Messages already in the queue keep their visibility deadlines.
  Status CreateQueue(const QueueOptions& options);
  // NotFound if there is no such queue.
  Result<QueueOptions> GetQueue(const std::string& name);
  // All queues, ordered by name.
  Result<std::vector<QueueOptions>> ListQueues();

  // Adds a message; returns its id. `delay_s` (0..900) overrides the queue's delay.
  Result<std::string> Send(const std::string& queue, const std::string& body,
                           std::optional<int64_t> delay_s = std::nullopt);
  // Adds 1..10 messages in one transaction (all or none); ids in input order.
  Result<std::vector<std::string>> SendBatch(
      const std::string& queue, const std::vector<std::string>& bodies,
      std::optional<int64_t> delay_s = std::nullopt);

  // Receives up to `max_messages` (1..10) visible messages, earliest visible first, and
  // hides each for `visibility_timeout_s` (0..43200; default: the queue's). Returns an
  // empty vector if none is visible; never waits (see WaitForMessages). Messages due
  // for the dead-letter queue are moved there and not returned; expired ones are
  // deleted. One write transaction per call. `receiver`: the lease owner id
  // (emulator/runtime/cluster_membership.h) of the receiving process, kept with each
  // message received so that ReleaseReceivedBy can hand them on when that process is
  // gone; "" keeps none (the message waits out its visibility timeout, as on SQS).
  Result<std::vector<ReceivedMessage>> Receive(
      const std::string& queue, int max_messages = 1,
      std::optional<int64_t> visibility_timeout_s = std::nullopt,
      const std::string& receiver = "");

  // Makes every message of every queue that one of `receivers` received and that is
  // still hidden visible now, as if its visibility timeout had ended: those owners are
  // gone (their leases were released or lapsed), so nothing will delete or defer what
  // they held. Returns how many. One write transaction; wakes receivers here and on
  // other nodes. A redelivery to a process that is in fact still running is what
  // at-least-once delivery allows (the execution history turns it into a no-op).
  Result<int64_t> ReleaseReceivedBy(const std::vector<std::string>& receivers);

  // Hides the message for `seconds` (0..43200) from now; 0 makes it visible at once.
  // Stale handle: ConditionFailed. Message gone: NotFound.
  Status ChangeVisibility(const std::string& queue, const std::string& receipt_handle,
                          int64_t seconds);

  // Deletes the message: its work is done. Stale handle: ConditionFailed, nothing
  // deleted. Message already gone: OK.
  Status Delete(const std::string& queue, const std::string& receipt_handle);

  // Keeps `error_text` as the message's last error, shown by ListDeadLetters if it is
  // dead-lettered later: as UTF-8 text of at most 4 KiB (cut at a character boundary; a
  // NUL or a byte that is not UTF-8 becomes U+FFFD). Does not change visibility.
  // Stale handle: ConditionFailed. Message gone: NotFound.
  Status RecordFailure(const std::string& queue, const std::string& receipt_handle,
                       const std::string& error_text);

  // The queue that holds message `message_id` now (its own queue, or the dead-letter
  // queue it was moved to), or nullopt once the message is gone: deleted (its work is
  // done, or its consumer took over its fate) or purged by retention. Message ids are
  // unique across queues. Reads only.
  Result<std::optional<std::string>> QueueOfMessage(const std::string& message_id);

  // Up to `limit` messages of queue `dead_letter_queue`, oldest sent first, without
  // receiving them (no receipt handles issued, nothing changes). `after_id` pages: pass
  // the id of the last message of the previous page. Works on any queue.
  Result<std::vector<DeadLetterMessage>> ListDeadLetters(
      const std::string& dead_letter_queue, int limit = 100,
      const std::string& after_id = "");

  // Moves messages of `dead_letter_queue` back to the queue each came from, visible now
  // with receive count 0, last error and id kept, and a fresh retention start: the sent
  // time becomes now, as SQS's redrive makes each redriven message a new message with a
  // new enqueue time, so the source queue's retention never drops a message right after
  // it was redriven. Messages already past the dead-letter queue's own retention
  // (expired, only not purged yet) are removed instead, neither moved nor counted: a
  // redrive never reports a message that is then dropped. With `message_id`, only that
  // message (NotFound if it is not in this queue, or was expired and removed).
  // Messages with no recorded source queue, or whose source queue no longer exists,
  // stay. Returns how many moved.
  Result<int64_t> Redrive(const std::string& dead_letter_queue,
                          std::optional<std::string> message_id = std::nullopt);

  // SQS PurgeQueue: deletes every message of `queue` (visible, in flight and delayed;
  // not those of its dead-letter queue) and returns how many. A consumer holding one
  // of them finds it gone: its Delete is OK, its ChangeVisibility NotFound. NotFound
  // if there is no such queue.
  Result<int64_t> Purge(const std::string& queue);
  // Deletes every message of every queue (dead-letter queues included; the queues
  // stay), inside the caller's transaction: the queues' part of an admin reset
  // (App::Reset). Returns how many.
  Result<int64_t> DeleteAllMessages(Connection& conn);

  // Deletes messages older than their queue's retention (by sent time), in every
  // queue. Returns how many. Receive also calls it, at most once a minute of clock time,
  // and never delivers an expired message regardless.
  Result<int64_t> PurgeExpired();

  // Counts for one queue, computed at the current clock time.
  Result<QueueStats> Stats(const std::string& queue);

  // Blocks until a message of `queue` is visible (returns true), until the clock
  // reaches `deadline_micros` (returns false), or until WakeWaiters() is called
  // (returns false at once; the caller re-checks its own stop flag). Wakes as soon as a
  // Send/ChangeVisibility/Redrive makes a message visible, or when the earliest hidden
  // message's visibility deadline arrives on the Clock. True does not reserve the
  // message: another consumer may receive it first. NotFound for a missing queue;
  // Unavailable after Shutdown().
  Result<bool> WaitForMessages(const std::string& queue, int64_t deadline_micros);

  // Makes every WaitForMessages call that is blocked now return false.
  void WakeWaiters();
  // Makes current and future WaitForMessages calls return Unavailable. Other calls keep
  // working. Idempotent.
  void Shutdown();

 private:
  // Wakes WaitForMessages callers: something may have become visible.
  void Notify();
  // PurgeExpired(), if a minute of clock time has passed since the last purge.
  Status PurgeExpiredIfDue();
  Status Hit(FaultPoint point);
  Result<std::vector<std::string>> SendMany(const std::string& queue,
                                            const std::string* bodies, size_t count,
                                            std::optional<int64_t> delay_s);

  Transactions* db_;
  Clock* clock_;
  FaultInjector* faults_;

  struct RemoteWake;
  std::shared_ptr<RemoteWake> remote_wake_;

  Mutex mu_;
  CondVar cv_;
  uint64_t change_seq_ GUARDED_BY(mu_) = 0;       // bumped on every wake-worthy change
  uint64_t wake_generation_ GUARDED_BY(mu_) = 0;  // bumped by WakeWaiters()
  bool shutdown_ GUARDED_BY(mu_) = false;
  int64_t last_purge_micros_ GUARDED_BY(mu_) = 0;
};

}  // namespace sheetlog
