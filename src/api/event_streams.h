// Internal to src/api: the event streams (Server-Sent Events) behind
// GET /v1/sheets/{id}/events (seed 004's event-carried state transfer): a sheet's
// committed entries from a seq on, then live; and behind GET /v1/admin/events: the
// pipeline's journal (src/effects/pipeline_events.h: "job", "snapshot", and "queues"
// when depths or dead letters change, checked every 5 s of the clock) from `from` /
// after `after` / Last-Event-ID, then live, with ids "<epoch>-<n>" (the epoch random per
// server start: an id of another start gets a `gap`, reason "restart", and everything
// kept).
//
//   id: <seq>            event: entry      data: the entry as GET .../entries shows it
//                        event: metadata   data: the entry, after a PATCH of its metadata
//                        event: snapshot   data: the entry, once its snapshot completed
//                        event: truncated  data: {"first_seq"}
//                        event: gone       data: {"first_seq"} — `from` was truncated
//                        event: deleted    data: {} — the sheet was deleted
//                        event: overflow   data: {"resume_from"} — too slow; reconnect
//   : heartbeat          every 15 s of the (injected) clock, so proxies keep idle
//                        streams open
//
// A resume (Last-Event-ID + 1, which wins over `from`) neither skips nor repeats an
// entry, and once caught up a stream sends the current state the id-less events convey
// (SendState). Entries are sent only after they committed (the change feed only wakes a
// stream; entries are read back from the log). A stream with 256 KiB unsent is closed
// with `overflow` naming where to resume, so memory never grows with a slow client; no
// stream holds a request thread (one pump thread writes them, between Start and Stop).
// The rules and their reasons: README.md "Live updates".
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "emulator/env/mutex.h"
#include "src/api/entry_json.h"
#include "src/api/router.h"

namespace sheetlog {
class Clock;
class EventLog;
class PipelineEvents;
class SheetChangeHub;
struct SheetChange;
}  // namespace sheetlog

namespace sheetlog::api {

// Thread-safe: streams are opened from request workers, fed from the change hub's and
// the journal's threads, and written by the pump.
class EventStreams {
 public:
  EventStreams(EventLog* log, SheetChangeHub* changes, PipelineEvents* journal,
               Clock* clock, const EntryPresenter* entries);
  // Stops (if still running).
  ~EventStreams();
  EventStreams(const EventStreams&) = delete;
  EventStreams& operator=(const EventStreams&) = delete;

  // Starts the pump (heartbeats, and the sheet streams' reads of the log). Call once,
  // before streams are opened.
  void Start();
  // Stops the pump and closes every stream. Call once the HTTP server has stopped
  // (no stream is opened afterwards), while the services it reads are alive.
  // Idempotent.
  void Stop();

  // Answers `call` with a sheet's stream: its entries from seq `from` on, then live.
  void OpenSheet(Call& call, const std::string& sheet_id, int64_t from);
  // Answers `call` with the pipeline journal after number `after`, then live.
  // `foreign_id`: the reader's position was an id of another journal (an earlier
  // server start): a `gap` says so before everything kept is replayed. Listeners
  // write straight to the connection (never blocking); heartbeats come from the pump.
  void OpenAdmin(Call& call, int64_t after, const std::optional<std::string>& foreign_id);

 private:
  struct Stream;
  struct Turn;

  void Changed(Stream& stream, const SheetChange& change);
  void MarkDirty(const std::shared_ptr<Stream>& stream) REQUIRES(mu_);
  void Pump();
  bool Serve(Stream& stream, Turn& turn);
  template <typename Write>
  bool SendState(Stream& stream, Write& write);
  template <typename Write>
  bool SendEntryEvent(Stream& stream, const char* event, int64_t seq, Write& write);
  void Overflow(Stream& stream);
  static void OverflowAt(Stream& stream, int64_t resume_from);

  EventLog& log_;
  SheetChangeHub& changes_;
  PipelineEvents& journal_;
  Clock& clock_;
  const EntryPresenter& entries_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  int next_id_ GUARDED_BY(mu_) = 1;
  std::map<int, std::shared_ptr<Stream>> streams_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Stream>> dirty_ GUARDED_BY(mu_);
  std::map<int, std::shared_ptr<http::StreamWriter>> admin_writers_ GUARDED_BY(mu_);
  std::thread pump_;
};

}  // namespace sheetlog::api
