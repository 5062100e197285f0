// Every fault point, in one list. Code marks a step where a crash or an error would
// matter with `RETURN_IF_ERROR(faults->Hit(FaultPoint::kSnapshotAfterChunk))`; tests,
// and operators with --enable-faults (POST /v1/admin/faults {"point": NAME}), arm a
// point by its name. A name not in this list is refused, so a misspelled point cannot
// leave a test passing without testing anything.
//
// The application's points (log., uploads., sheet., snapshot., effects.) are listed
// here beside the emulator's because the injector, which lives in emulator/, checks the
// names; it knows nothing else about them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sheetlog {

// X(constant, "name", what a hit there stands for)
#define SHEETLOG_FAULT_POINTS(X)                                                         \
  /* emulator/blob */                                                                    \
  X(kBlobPut, "blob.put", "a PUT before anything is written")                            \
  X(kBlobPutAfterBody, "blob.put.after_body",                                            \
    "a PUT with its body in place, before its metadata (the commit point)")              \
  X(kBlobPutAfterCommit, "blob.put.after_commit",                                        \
    "a PUT committed, before it is answered")                                            \
  X(kBlobDelete, "blob.delete", "a DELETE before anything is removed")                   \
  X(kBlobPutTags, "blob.put_tags", "a tagging PUT before the tags are written")          \
  X(kBlobSweepDelete, "blob.sweep.delete", "the lifecycle sweep deleting an object")     \
  /* emulator/queue */                                                                   \
  X(kQueueSend, "queue.send", "SendMessage before the message is stored")                \
  X(kQueueReceive, "queue.receive", "ReceiveMessage before any message is taken")        \
  X(kQueueReceiveDuplicate, "queue.receive.duplicate",                                   \
    "(duplicate) a received message is delivered twice")                                 \
  X(kQueueChangeVisibility, "queue.change_visibility",                                   \
    "ChangeMessageVisibility before it is applied")                                      \
  X(kQueueDelete, "queue.delete", "DeleteMessage before the message is removed")         \
  /* emulator/runtime */                                                                 \
  X(kRuntimeBeforeHandler, "runtime.before_handler",                                     \
    "an invocation about to call its handler")                                           \
  X(kRuntimeAfterHandlerBeforeHistory, "runtime.after_handler_before_history",           \
    "a handler returned, before its outcome is in the execution history")                \
  X(kRuntimeAfterHandlerBeforeCheckpoint, "runtime.after_handler_before_checkpoint",     \
    "a stream batch handled, before its checkpoint")                                     \
  X(kRuntimeStreamDuplicate, "runtime.stream.duplicate",                                 \
    "(duplicate) a stream batch is handed to its handler twice")                         \
  X(kRuntimeQueueDuplicate, "runtime.queue.duplicate",                                   \
    "(duplicate) a queue message is handed to its handler twice")                        \
  X(kRuntimeQueueAfterHistoryBeforeDelete, "runtime.queue.after_history_before_delete",  \
    "a queue invocation recorded, before its message is deleted")                        \
  X(kHistoryAfterReadBeforeClaim, "history.after_read_before_claim",                     \
    "the execution history read, before the invocation claims its key")                  \
  X(kHistoryFinish, "history.finish", "before an invocation's outcome row is written")   \
  /* emulator/table/migrations (both backends) */                                        \
  X(kMigrationBeforeCommit, "migration.before_commit",                                   \
    "a migration applied and recorded, before its transaction commits")                  \
  /* src/log */                                                                          \
  X(kLogAddEntryBeforePut, "log.add_entry.before_put",                                   \
    "Add Entry before its conditional put")                                              \
  X(kLogPolicyBefore, "log.policy.before",                                               \
    "an append committed, before the snapshot and segment policies run")                 \
  X(kLogTruncateBeforeDrop, "log.truncate.before_drop",                                  \
    "a truncation with its base built, before entries are dropped")                      \
  X(kLogForkBeforeSheet, "log.fork.before_sheet",                                        \
    "a fork's segments and entries written, before its sheet row (same transaction)")    \
  X(kUploadsAfterBlobBeforeEntry, "uploads.after_blob_before_entry",                     \
    "a large body stored, before its entry is appended")                                 \
  X(kSheetPurgeBefore, "sheet.purge.before", "a deleted sheet's purge before it starts") \
  X(kSheetPurgeAfterObject, "sheet.purge.after_object",                                  \
    "a deleted sheet's purge after each object it deletes")                              \
  /* src/effects */                                                                      \
  X(kEffectsAfterSnapshotSend, "effects.after_snapshot_send",                            \
    "a snapshot job sent, before the change-feed batch is done")                         \
  X(kEffectsBeforeUntag, "effects.before_untag",                                         \
    "before a large entry's blob is untagged")                                           \
  /* src/snapshot */                                                                     \
  X(kSnapshotMessageLost, "snapshot.message_lost",                                       \
    "a snapshot job is dropped as if its message were lost")                             \
  X(kSnapshotAfterChunk, "snapshot.after_chunk", "a snapshot build after each chunk")    \
  X(kSnapshotBeforeComplete, "snapshot.before_complete",                                 \
    "a snapshot built, before its root is written onto the entry")                       \
  X(kSnapshotAfterComplete, "snapshot.after_complete",                                   \
    "a snapshot completed, before its message is deleted")                               \
  /* src/app (GET /v1/health) */                                                         \
  X(kHealthTableStore, "health.table_store",                                             \
    "a health probe about to read the table store (error: the store unreachable; "       \
    "delay: a store that does not answer)")                                              \
  X(kHealthBlobStore, "health.blob_store",                                               \
    "a health probe about to read the blob store (error: the store unreachable; "        \
    "delay: a store that does not answer)")

enum class FaultPoint : uint8_t {
#define SHEETLOG_FAULT_POINT_ENUM(constant, name, meaning) constant,
  SHEETLOG_FAULT_POINTS(SHEETLOG_FAULT_POINT_ENUM)
#undef SHEETLOG_FAULT_POINT_ENUM
};

inline constexpr size_t kFaultPointCount = 0
#define SHEETLOG_FAULT_POINT_COUNT(constant, name, meaning) +1
    SHEETLOG_FAULT_POINTS(SHEETLOG_FAULT_POINT_COUNT)
#undef SHEETLOG_FAULT_POINT_COUNT
    ;

struct FaultPointInfo {
  FaultPoint point;
  std::string_view name;
  std::string_view meaning;
};

// Every point, in the order of the list above.
inline constexpr FaultPointInfo kFaultPoints[] = {
#define SHEETLOG_FAULT_POINT_INFO(constant, name, meaning) \
  {FaultPoint::constant, name, meaning},
    SHEETLOG_FAULT_POINTS(SHEETLOG_FAULT_POINT_INFO)
#undef SHEETLOG_FAULT_POINT_INFO
};

inline constexpr std::string_view FaultPointName(FaultPoint point) {
  return kFaultPoints[static_cast<size_t>(point)].name;
}

// The point named `name`, or nullopt if there is none.
inline std::optional<FaultPoint> FindFaultPoint(std::string_view name) {
  for (const FaultPointInfo& info : kFaultPoints) {
    if (info.name == name) return info.point;
  }
  return std::nullopt;
}

}  // namespace sheetlog
