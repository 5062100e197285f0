// GET /v1/sheets/{id}/events (issue 16, seed 004's event-carried state transfer): a
// sheet's committed entries as Server-Sent Events, from a seq on, then live. And
// GET /v1/admin/events: the pipeline's journal (src/effects/pipeline_events.h) — "job"
// (a stream batch failed or skipped, a queue message failed), "snapshot" (every
// snapshot worker outcome with its job), "queues" (depths and dead letters when they
// change, checked every 5 s of the clock) — after `after` / Last-Event-ID, then live.
//
//   id: <seq>            event: entry      data: the entry as GET .../entries shows it
//                        event: metadata   data: the entry, after a PATCH of its metadata
//                        event: snapshot   data: the entry, once its snapshot completed
//                        event: truncated  data: {"first_seq"}
//                        event: gone       data: {"first_seq"} — `from` was truncated
//                        event: deleted    data: {} — the sheet was deleted
//                        event: overflow   data: {"resume_from"} — too slow; reconnect
//   : heartbeat          every 15 s of the clock, so proxies keep idle streams open
//
// `from` (default: the next seq, live only) or a reconnect's Last-Event-ID + 1 says
// where to start; entries are read from the log in seq order, so a resume neither skips
// nor repeats one. The change feed only wakes a stream (SheetChangeHub): an entry is
// sent after it committed and is read back. Each stream buffers at most 256 KiB
// unsent; a consumer that falls behind is closed with `overflow` naming the seq to
// resume from, so memory never grows with a slow client. Streams never hold a request
// thread: writes are queued on the connection (http::StreamWriter) by one pump thread.
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

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
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    pump_.join();
    std::map<int, std::shared_ptr<Stream>> streams;
    {
      std::lock_guard<std::mutex> lock(mu_);
      streams.swap(streams_);
    }
    for (auto& [id, stream] : streams) {
      app_.changes()->Unsubscribe(stream->subscription);
      stream->writer->Close();
    }
    std::map<int, std::shared_ptr<http::StreamWriter>> admin;
    {
      std::lock_guard<std::mutex> lock(mu_);
      admin.swap(admin_writers_);
    }
    for (auto& [subscription, writer] : admin) {
      app_.pipeline_events()->Unsubscribe(subscription);
      writer->Close();
    }
  }

  // GET /v1/admin/events: the pipeline journal after `after`, then live. Listeners
  // write straight to the connection (never blocking); heartbeats come from the pump.
  void OpenAdmin(Call& call, int64_t after) {
    call.res.set_header("Cache-Control", "no-cache");
    call.res.set_header("X-Accel-Buffering", "no");
    std::shared_ptr<http::StreamWriter> writer =
        call.res.StartStream("text/event-stream", kStreamBufferBytes);
    writer->Write("retry: 2000\n\n");
    PipelineEvents* journal = app_.pipeline_events();
    auto send = [writer](const PipelineEvent& event) {
      const std::string frame = "id: " + std::to_string(event.id) +
                                "\nevent: " + event.type + "\ndata: " + Dump(event.data) +
                                "\n\n";
      if (writer->Write(frame) == http::StreamWriter::WriteResult::kFull) {
        writer->Close("event: overflow\ndata: " +
                      Dump(json{{"resume_from", event.id - 1}}) + "\n\n");
      }
    };
    // Subscribe first, then replay: an event published in between may come twice,
    // and the ids tell (a reader keeps the highest id it saw).
    const int subscription = journal->Subscribe(send);
    bool complete = true;
    const std::vector<PipelineEvent> backlog = journal->Since(after, &complete);
    if (!complete && !backlog.empty()) {
      // Events after `after` were dropped from the journal: say so, then go on.
      writer->Write("event: gap\ndata: " +
                    Dump(json{{"after", after}, {"first_kept", backlog.front().id}}) +
                    "\n\n");
    }
    for (const PipelineEvent& event : backlog) send(event);
    {
      std::lock_guard<std::mutex> lock(mu_);
      admin_writers_[subscription] = writer;
    }
    writer->OnClose([this, journal, subscription] {
      journal->Unsubscribe(subscription);
      std::lock_guard<std::mutex> lock(mu_);
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
      std::lock_guard<std::mutex> lock(mu_);
      stream->id = next_id_++;
      streams_[stream->id] = stream;
      MarkDirty(stream);
    }
    stream->writer->OnClose([this, weak] {
      std::shared_ptr<Stream> s = weak.lock();
      if (!s) return;
      app_.changes()->Unsubscribe(s->subscription);
      std::lock_guard<std::mutex> lock(mu_);
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
  };

  // Runs on the hub's thread: note what to send and wake the pump.
  void Changed(Stream& stream, const SheetChange& change) {
    std::lock_guard<std::mutex> lock(mu_);
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

  void MarkDirty(const std::shared_ptr<Stream>& stream) {  // REQUIRES: mu_ held
    if (stream->dirty) return;
    stream->dirty = true;
    dirty_.push_back(stream);
    cv_.notify_all();
  }

  void Pump() {
    Clock* clock = app_.clock();
    int64_t next_heartbeat = clock->NowMicros() + kHeartbeatMicros;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      if (dirty_.empty() && clock->NowMicros() < next_heartbeat) {
        clock->WaitUntil(cv_, lock, next_heartbeat);
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
      lock.unlock();
      const bool more = Serve(*stream, turn);
      lock.lock();
      stream->next_seq = turn.next_seq;
      if (more && streams_.count(stream->id)) MarkDirty(stream);
    }
  }

  struct Turn {
    int64_t next_seq = 0;
    std::set<int64_t> metadata_changed, snapshot_completed;
    bool truncated = false;
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
    return static_cast<int>(page->entries.size()) == kEntriesPerTurn;
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
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                                             // GUARDED_BY(mu_)
  int next_id_ = 1;                                                   // GUARDED_BY(mu_)
  std::map<int, std::shared_ptr<Stream>> streams_;                    // GUARDED_BY(mu_)
  std::deque<std::shared_ptr<Stream>> dirty_;                         // GUARDED_BY(mu_)
  std::map<int, std::shared_ptr<http::StreamWriter>> admin_writers_;  // GUARDED_BY(mu_)
  std::thread pump_;
};

}  // namespace

std::shared_ptr<void> RegisterEventRoutes(Router& router, App& app) {
  auto streams = std::make_shared<SheetEventStreams>(app);
  SheetEventStreams* events = streams.get();
  router.Get(
      R"(/v1/sheets/([^/]+)/events)",
      [&app, events](Call& call) {
        const std::string id = SheetId(call);
        const int64_t next_seq = Check(app.log()->NextSeq(id, &call.meter));
        int64_t from = next_seq;
        const std::string last_event_id = call.req.get_header_value("Last-Event-ID");
        if (std::optional<std::string> text = call.Query("from")) {
          from = ParseSeq("from", *text);
        } else if (!last_event_id.empty()) {
          from = ParseSeq("Last-Event-ID", last_event_id) + 1;
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
        int64_t after = app.pipeline_events()->last_id();
        const std::string last_event_id = call.req.get_header_value("Last-Event-ID");
        if (std::optional<std::string> text = call.Query("after")) {
          after = ParseSeq("after", *text);
        } else if (!last_event_id.empty()) {
          after = ParseSeq("Last-Event-ID", last_event_id);
        }
        events->OpenAdmin(call, after);
      },
      RouteOptions{true, false});
  return streams;
}

}  // namespace sheetlog::api
