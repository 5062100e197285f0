// GET /v1/sheets/{id}/events (issue 16, seed 004's event-carried state transfer): a
// sheet's committed entries as Server-Sent Events, from a seq on, then live. And
// GET /v1/admin/events: the pipeline's journal (src/effects/pipeline_events.h) — "job"
// (a stream batch failed or skipped, a queue message failed), "snapshot" (every
// snapshot worker outcome with its job), "queues" (depths and dead letters when they
// change, checked every 5 s of the clock) — from `from` / after `after` /
// Last-Event-ID, then live. Admin ids are "<epoch>-<n>", the epoch random per server
// start: an id of another start gets a `gap` (reason "restart") and everything kept.
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
// A reconnect's Last-Event-ID + 1, else `from` (default: the next seq, live only) says
// where to start — the header wins because a browser's EventSource reconnects with its
// original URL; entries are read from the log in seq order, so a resume neither skips
// nor repeats one. The id-less events cannot be resumed by id, so every stream, once
// caught up with the entries that existed when it opened, sends the current state
// they convey (SendState). The change feed only wakes a stream (SheetChangeHub): an
// entry is sent after it committed and is read back. Each stream buffers at most
// 256 KiB unsent; a consumer that falls behind is closed with `overflow` naming where
// to resume (`resume_from`, in both streams: the `from` to reconnect with, i.e. the
// first thing not delivered), so memory never grows with a slow client. Streams never
// hold a request thread: writes are queued on the connection (http::StreamWriter) by
// one pump thread.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "emulator/env/mutex.h"
#include "src/api/routes.h"
#include "src/app/app.h"
#include "src/effects/pipeline_events.h"
#include "src/effects/sheet_changes.h"

namespace sheetlog::api {

namespace {

constexpr size_t kStreamBufferBytes = 256 * 1024;
constexpr int64_t kHeartbeatMicros = 15LL * 1000000;
constexpr int kEntriesPerTurn = 500;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

class SheetEventStreams {
 public:
  explicit SheetEventStreams(App& app) : app_(app) {
    pump_ = std::thread([this] { Pump(); });
  }

  ~SheetEventStreams() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
      cv_.NotifyAll();
    }
    pump_.join();
    std::map<int, std::shared_ptr<Stream>> streams;
    {
      MutexLock lock(&mu_);
      streams.swap(streams_);
    }
    for (auto& [id, stream] : streams) {
      app_.changes()->Unsubscribe(stream->subscription);
      stream->writer->Close();
    }
    std::map<int, std::shared_ptr<http::StreamWriter>> admin;
    {
      MutexLock lock(&mu_);
      admin.swap(admin_writers_);
    }
    for (auto& [subscription, writer] : admin) {
      app_.pipeline_events()->Unsubscribe(subscription);
      writer->Close();
    }
  }

  // GET /v1/admin/events: the pipeline journal after number `after`, then live.
  // `foreign_id`: the reader's position was an id of another journal (an earlier
  // server start): a `gap` says so before everything kept is replayed. Listeners
  // write straight to the connection (never blocking); heartbeats come from the pump.
  void OpenAdmin(Call& call, int64_t after,
                 const std::optional<std::string>& foreign_id) {
    call.res.set_header("Cache-Control", "no-cache");
    call.res.set_header("X-Accel-Buffering", "no");
    std::shared_ptr<http::StreamWriter> writer =
        call.res.StartStream("text/event-stream", kStreamBufferBytes);
    writer->Write("retry: 2000\n\n");
    PipelineEvents* journal = app_.pipeline_events();
    auto send = [writer](const PipelineEvent& event) {
      const std::string frame = "id: " + event.id + "\nevent: " + event.type +
                                "\ndata: " + Dump(event.data) + "\n\n";
      if (writer->Write(frame) == http::StreamWriter::WriteResult::kFull) {
        // resume_from = the first event not delivered: reconnect with ?from=<it>
        // (the same meaning as the sheet stream's resume_from, a seq to read next).
        writer->Close("event: overflow\ndata: " + Dump(json{{"resume_from", event.id}}) +
                      "\n\n");
      }
    };
    // The backlog and the live events come from one atomic subscription, so each
    // event is sent once and in id order. The gap (no id, so it moves no
    // Last-Event-ID) precedes them.
    auto on_backlog = [&](bool complete, const std::string& first_kept) {
      const json first = first_kept.empty() ? json(nullptr) : json(first_kept);
      if (foreign_id) {
        writer->Write("event: gap\ndata: " +
                      Dump(json{{"after", *foreign_id},
                                {"first_kept", first},
                                {"epoch", journal->epoch()},
                                {"reason", "restart"}}) +
                      "\n\n");
      } else if (!complete) {
        // Events after `after` were dropped from the journal: say so, then go on.
        writer->Write("event: gap\ndata: " +
                      Dump(json{{"after", journal->IdOf(after)},
                                {"first_kept", first},
                                {"epoch", journal->epoch()},
                                {"reason", "dropped"}}) +
                      "\n\n");
      }
    };
    const int subscription = journal->SubscribeAfter(after, on_backlog, send);
    {
      MutexLock lock(&mu_);
      admin_writers_[subscription] = writer;
    }
    writer->OnClose([this, journal, subscription] {
      journal->Unsubscribe(subscription);
      MutexLock lock(&mu_);
      admin_writers_.erase(subscription);
    });
  }

  void Open(Call& call, const std::string& sheet_id, int64_t from) {
    auto stream = std::make_shared<Stream>();
    stream->sheet = sheet_id;
    stream->next_seq = from;
    call.res.set_header("Cache-Control", "no-cache");
    call.res.set_header("X-Accel-Buffering", "no");
    stream->writer = call.res.StartStream("text/event-stream", kStreamBufferBytes);
    stream->writer->Write("retry: 2000\n\n");
    std::weak_ptr<Stream> weak = stream;
    stream->subscription =
        app_.changes()->Subscribe(sheet_id, [this, weak](const SheetChange& change) {
          if (std::shared_ptr<Stream> s = weak.lock()) Changed(*s, change);
        });
    {
      MutexLock lock(&mu_);
      stream->id = next_id_++;
      streams_[stream->id] = stream;
      MarkDirty(stream);
    }
    stream->writer->OnClose([this, weak] {
      std::shared_ptr<Stream> s = weak.lock();
      if (!s) return;
      app_.changes()->Unsubscribe(s->subscription);
      MutexLock lock(&mu_);
      streams_.erase(s->id);
    });
  }

 private:
  struct Stream {
    int id = 0;
    std::string sheet;
    std::shared_ptr<http::StreamWriter> writer;
    int subscription = 0;
    // GUARDED_BY(SheetEventStreams::mu_):
    int64_t next_seq = 0;  // the next entry to send
    bool dirty = false;
    std::set<int64_t> metadata_changed, snapshot_completed;
    bool truncated = false;
    // The current state (latest snapshot, first_seq) is still to be sent once the
    // stream has caught up with the log (see Serve).
    bool send_state = true;
  };

  // Runs on the hub's thread: note what to send and wake the pump.
  void Changed(Stream& stream, const SheetChange& change) {
    MutexLock lock(&mu_);
    switch (change.kind) {
      case SheetChange::Kind::kModified:
        if (change.seq >= 0 && change.seq < stream.next_seq) {
          if (change.metadata_changed) stream.metadata_changed.insert(change.seq);
          if (change.snapshot_completed) stream.snapshot_completed.insert(change.seq);
        }
        break;
      case SheetChange::Kind::kRemoved:
        stream.truncated = true;
        break;
      case SheetChange::Kind::kAppended:
      case SheetChange::Kind::kResync:
        break;
    }
    auto it = streams_.find(stream.id);
    if (it != streams_.end()) MarkDirty(it->second);
  }

  void MarkDirty(const std::shared_ptr<Stream>& stream) REQUIRES(mu_) {
    if (stream->dirty) return;
    stream->dirty = true;
    dirty_.push_back(stream);
    cv_.NotifyAll();
  }

  void Pump() {
    Clock* clock = app_.clock();
    int64_t next_heartbeat = clock->NowMicros() + kHeartbeatMicros;
    MutexLock lock(&mu_);
    while (!stopping_) {
      if (dirty_.empty() && clock->NowMicros() < next_heartbeat) {
        clock->WaitUntil(cv_, mu_, next_heartbeat);
        continue;
      }
      if (clock->NowMicros() >= next_heartbeat) {
        next_heartbeat = clock->NowMicros() + kHeartbeatMicros;
        for (auto& [id, stream] : streams_) {
          if (stream->writer->Write(": heartbeat\n\n") ==
              http::StreamWriter::WriteResult::kFull) {
            Overflow(*stream);
          }
        }
        for (auto& [id, writer] : admin_writers_) writer->Write(": heartbeat\n\n");
      }
      if (dirty_.empty()) continue;
      std::shared_ptr<Stream> stream = dirty_.front();
      dirty_.pop_front();
      stream->dirty = false;
      Turn turn;
      turn.next_seq = stream->next_seq;
      turn.metadata_changed.swap(stream->metadata_changed);
      turn.snapshot_completed.swap(stream->snapshot_completed);
      turn.truncated = std::exchange(stream->truncated, false);
      turn.send_state = stream->send_state;
      lock.Unlock();
      const bool more = Serve(*stream, turn);
      lock.Lock();
      stream->next_seq = turn.next_seq;
      stream->send_state = turn.send_state;
      if (more && streams_.count(stream->id)) MarkDirty(stream);
    }
  }

  struct Turn {
    int64_t next_seq = 0;
    std::set<int64_t> metadata_changed, snapshot_completed;
    bool truncated = false;
    bool send_state = false;
  };

  // Writes what the stream has not seen yet (at most kEntriesPerTurn entries); true if
  // more is waiting. Runs on the pump thread without mu_.
  bool Serve(Stream& stream, Turn& turn) {
    if (stream.writer->closed()) return false;
    auto write = [&](const std::string& frame) {
      switch (stream.writer->Write(frame)) {
        case http::StreamWriter::WriteResult::kQueued:
          return true;
        case http::StreamWriter::WriteResult::kFull:
          OverflowAt(stream, turn.next_seq);
          return false;
        case http::StreamWriter::WriteResult::kClosed:
          return false;
      }
      return false;
    };
    for (int64_t seq : turn.metadata_changed) {
      if (!SendEntryEvent(stream, "metadata", seq, write)) return false;
    }
    for (int64_t seq : turn.snapshot_completed) {
      if (!SendEntryEvent(stream, "snapshot", seq, write)) return false;
    }
    if (turn.truncated) {
      Result<SheetInfo> sheet = app_.log()->GetSheet(stream.sheet, nullptr);
      if (sheet.status().IsNotFound()) {
        stream.writer->Close("event: deleted\ndata: {}\n\n");
        return false;
      }
      if (sheet.ok() && !write("event: truncated\ndata: " +
                               Dump(json{{"first_seq", sheet->first_seq}}) + "\n\n")) {
        return false;
      }
    }
    Result<ReadRange> page = app_.log()->Read(stream.sheet, turn.next_seq, INT64_MAX,
                                              kEntriesPerTurn, nullptr);
    if (!page.ok()) {
      const Status& status = page.status();
      if (status.code() == StatusCode::kGone) {
        Result<SheetInfo> sheet = app_.log()->GetSheet(stream.sheet, nullptr);
        stream.writer->Close("event: gone\ndata: " +
                             Dump(json{{"first_seq", sheet.ok() ? sheet->first_seq : -1},
                                       {"from", turn.next_seq}}) +
                             "\n\n");
      } else if (status.IsNotFound()) {
        stream.writer->Close("event: deleted\ndata: {}\n\n");
      } else if (status.code() != StatusCode::kOutOfRange &&
                 status.code() != StatusCode::kInvalidArgument) {
        spdlog::warn("events: reading sheet {} failed: {}", stream.sheet,
                     status.ToString());
      }
      return false;
    }
    for (const EntryRecord& entry : page->entries) {
      if (!write("id: " + std::to_string(entry.seq) +
                 "\nevent: entry\ndata: " + Dump(EntryJson(app_, entry)) + "\n\n")) {
        return false;
      }
      turn.next_seq = entry.seq + 1;
    }
    const bool more = static_cast<int>(page->entries.size()) == kEntriesPerTurn;
    if (!more && turn.send_state) {
      if (!SendState(stream, write)) return false;
      turn.send_state = false;
    }
    return more;
  }

  // The resume rule for the events that carry no id (metadata, snapshot, truncated):
  // a reader cannot resume them by Last-Event-ID, so every stream, once it has sent
  // the entries that existed when it opened, sends the current state they convey:
  // `snapshot` with the newest completed Snapshot entry (if any; it may precede
  // first_seq: it is the base that readers start from) and
  // `truncated` with first_seq (if anything was truncated). Metadata needs nothing:
  // every entry sent was read with its current metadata; a change to an entry before
  // the resume point made while disconnected is not replayed (re-read the entry).
  // These state events may repeat what a reader knew; they are idempotent.
  template <typename Write>
  bool SendState(Stream& stream, Write& write) {
    Result<SheetInfo> sheet = app_.log()->GetSheet(stream.sheet, nullptr);
    if (!sheet.ok()) return true;  // deleted meanwhile: the next read says so
    Result<std::optional<EntryRecord>> snapshot =
        app_.log()->LastCompletedSnapshot(stream.sheet, nullptr);
    if (snapshot.ok() && *snapshot &&
        !write("event: snapshot\ndata: " + Dump(EntryJson(app_, **snapshot)) + "\n\n")) {
      return false;
    }
    if (sheet->first_seq > 0 &&
        !write("event: truncated\ndata: " + Dump(json{{"first_seq", sheet->first_seq}}) +
               "\n\n")) {
      return false;
    }
    return true;
  }

  template <typename Write>
  bool SendEntryEvent(Stream& stream, const char* event, int64_t seq, Write& write) {
    Result<EntryRecord> entry = app_.log()->GetEntry(stream.sheet, seq, nullptr);
    if (!entry.ok()) return true;  // truncated meanwhile: the truncated event says so
    return write(std::string("event: ") + event +
                 "\ndata: " + Dump(EntryJson(app_, *entry)) + "\n\n");
  }

  void Overflow(Stream& stream) { OverflowAt(stream, stream.next_seq); }

  static void OverflowAt(Stream& stream, int64_t resume_from) {
    stream.writer->Close(
        "event: overflow\ndata: " + Dump(json{{"resume_from", resume_from}}) + "\n\n");
  }

  App& app_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  int next_id_ GUARDED_BY(mu_) = 1;
  std::map<int, std::shared_ptr<Stream>> streams_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Stream>> dirty_ GUARDED_BY(mu_);
  std::map<int, std::shared_ptr<http::StreamWriter>> admin_writers_ GUARDED_BY(mu_);
  std::thread pump_;
};

}  // namespace

std::shared_ptr<void> RegisterLiveUpdateRoutes(Router& router, App& app) {
  auto streams = std::make_shared<SheetEventStreams>(app);
  SheetEventStreams* events = streams.get();
  router.Get(
      R"(/v1/sheets/([^/]+)/events)",
      [&app, events](Call& call) {
        const std::string id = SheetId(call);
        const int64_t next_seq = Check(app.log()->NextSeq(id, &call.meter));
        int64_t from = next_seq;
        const std::string last_event_id = call.req.get_header_value("Last-Event-ID");
        // A reconnect's Last-Event-ID wins: a browser's EventSource reconnects with
        // its original URL (`?from=` included) plus the header, and must resume after
        // the last entry it got rather than repeat everything from `from`.
        if (!last_event_id.empty()) {
          from = ParseSeq("Last-Event-ID", last_event_id) + 1;
        } else if (std::optional<std::string> text = call.Query("from")) {
          from = ParseSeq("from", *text);
        }
        if (from > next_seq) {
          throw ApiError::Range("from " + std::to_string(from) +
                                " is past the next seq " + std::to_string(next_seq));
        }
        events->Open(call, id, from);
      },
      RouteOptions{true, false});
  router.Get(
      "/v1/admin/events",
      [&app, events](Call& call) {
        // Where to start: a reconnect's Last-Event-ID (after it) wins over the URL's
        // `from` (that id on) or `after` (after it), as a browser's EventSource
        // reconnects with its original URL plus the header. "0" is the journal's
        // start; an id of another epoch (before a restart) starts there too, after
        // a `gap`. Default: live only.
        PipelineEvents* journal = app.pipeline_events();
        int64_t after = journal->last_number();
        std::optional<std::string> foreign;
        auto resolve = [&](const std::string& text, bool is_from) {
          if (text == "0") {
            after = 0;
          } else if (std::optional<int64_t> number = journal->ParseId(text)) {
            after = is_from ? std::max<int64_t>(*number - 1, 0) : *number;
          } else {
            after = 0;
            foreign = text;
          }
        };
        const std::string last_event_id = call.req.get_header_value("Last-Event-ID");
        if (!last_event_id.empty()) {
          resolve(last_event_id, false);
        } else if (std::optional<std::string> text = call.Query("from")) {
          resolve(*text, true);
        } else if (std::optional<std::string> text = call.Query("after")) {
          resolve(*text, false);
        }
        events->OpenAdmin(call, after, foreign);
      },
      RouteOptions{true, false});
  return streams;
}

}  // namespace sheetlog::api
