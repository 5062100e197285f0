#include "src/api/event_streams.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "emulator/env/clock.h"
#include "src/effects/pipeline_events.h"
#include "src/effects/sheet_changes.h"
#include "src/log/event_log.h"

namespace sheetlog::api {

namespace {

constexpr size_t kStreamBufferBytes = 256 * 1024;
constexpr int64_t kHeartbeatMicros = 15LL * 1000000;
constexpr int kEntriesPerTurn = 500;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

struct EventStreams::Stream {
  int id = 0;
  std::string sheet;
  std::shared_ptr<http::StreamWriter> writer;
  int subscription = 0;
  // GUARDED_BY(EventStreams::mu_):
  int64_t next_seq = 0;  // the next entry to send
  bool dirty = false;
  std::set<int64_t> metadata_changed, snapshot_completed;
  bool truncated = false;
  // The current state (latest snapshot, first_seq) is still to be sent once the
  // stream has caught up with the log (see Serve).
  bool send_state = true;
};

struct EventStreams::Turn {
  int64_t next_seq = 0;
  std::set<int64_t> metadata_changed, snapshot_completed;
  bool truncated = false;
  bool send_state = false;
};

EventStreams::EventStreams(EventLog* log, SheetChangeHub* changes,
                           PipelineEvents* journal, Clock* clock,
                           const EntryPresenter* entries)
    : log_(*log),
      changes_(*changes),
      journal_(*journal),
      clock_(*clock),
      entries_(*entries) {}

EventStreams::~EventStreams() { Stop(); }

void EventStreams::Start() {
  pump_ = std::thread([this] { Pump(); });
}

void EventStreams::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.NotifyAll();
  }
  if (pump_.joinable()) pump_.join();
  std::map<int, std::shared_ptr<Stream>> streams;
  {
    MutexLock lock(&mu_);
    streams.swap(streams_);
  }
  for (auto& [id, stream] : streams) {
    changes_.Unsubscribe(stream->subscription);
    stream->writer->Close();
  }
  std::map<int, std::shared_ptr<http::StreamWriter>> admin;
  {
    MutexLock lock(&mu_);
    admin.swap(admin_writers_);
  }
  for (auto& [subscription, writer] : admin) {
    journal_.Unsubscribe(subscription);
    writer->Close();
  }
}

void EventStreams::OpenAdmin(Call& call, int64_t after,
                             const std::optional<std::string>& foreign_id) {
  call.res.set_header("Cache-Control", "no-cache");
  call.res.set_header("X-Accel-Buffering", "no");
  std::shared_ptr<http::StreamWriter> writer =
      call.res.StartStream("text/event-stream", kStreamBufferBytes);
  writer->Write("retry: 2000\n\n");
  PipelineEvents* journal = &journal_;
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

void EventStreams::OpenSheet(Call& call, const std::string& sheet_id, int64_t from) {
  auto stream = std::make_shared<Stream>();
  stream->sheet = sheet_id;
  stream->next_seq = from;
  call.res.set_header("Cache-Control", "no-cache");
  call.res.set_header("X-Accel-Buffering", "no");
  stream->writer = call.res.StartStream("text/event-stream", kStreamBufferBytes);
  stream->writer->Write("retry: 2000\n\n");
  std::weak_ptr<Stream> weak = stream;
  stream->subscription =
      changes_.Subscribe(sheet_id, [this, weak](const SheetChange& change) {
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
    changes_.Unsubscribe(s->subscription);
    MutexLock lock(&mu_);
    streams_.erase(s->id);
  });
}

// Runs on the hub's thread: note what to send and wake the pump.
void EventStreams::Changed(Stream& stream, const SheetChange& change) {
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

void EventStreams::MarkDirty(const std::shared_ptr<Stream>& stream) {
  if (stream->dirty) return;
  stream->dirty = true;
  dirty_.push_back(stream);
  cv_.NotifyAll();
}

void EventStreams::Pump() {
  Clock* clock = &clock_;
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

// Writes what the stream has not seen yet (at most kEntriesPerTurn entries); true if
// more is waiting. Runs on the pump thread without mu_.
bool EventStreams::Serve(Stream& stream, Turn& turn) {
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
    Result<SheetInfo> sheet = log_.GetSheet(stream.sheet, nullptr);
    if (sheet.status().IsNotFound()) {
      stream.writer->Close("event: deleted\ndata: {}\n\n");
      return false;
    }
    if (sheet.ok() && !write("event: truncated\ndata: " +
                             Dump(json{{"first_seq", sheet->first_seq}}) + "\n\n")) {
      return false;
    }
  }
  Result<ReadRange> page =
      log_.Read(stream.sheet, turn.next_seq, INT64_MAX, kEntriesPerTurn, nullptr);
  if (!page.ok()) {
    const Status& status = page.status();
    if (status.code() == StatusCode::kGone) {
      Result<SheetInfo> sheet = log_.GetSheet(stream.sheet, nullptr);
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
               "\nevent: entry\ndata: " + Dump(entries_.Entry(entry)) + "\n\n")) {
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
bool EventStreams::SendState(Stream& stream, Write& write) {
  Result<SheetInfo> sheet = log_.GetSheet(stream.sheet, nullptr);
  if (!sheet.ok()) return true;  // deleted meanwhile: the next read says so
  Result<std::optional<EntryRecord>> snapshot =
      log_.LastCompletedSnapshot(stream.sheet, nullptr);
  if (snapshot.ok() && *snapshot &&
      !write("event: snapshot\ndata: " + Dump(entries_.Entry(**snapshot)) + "\n\n")) {
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
bool EventStreams::SendEntryEvent(Stream& stream, const char* event, int64_t seq,
                                  Write& write) {
  Result<EntryRecord> entry = log_.GetEntry(stream.sheet, seq, nullptr);
  if (!entry.ok()) return true;  // truncated meanwhile: the truncated event says so
  return write(std::string("event: ") + event +
               "\ndata: " + Dump(entries_.Entry(*entry)) + "\n\n");
}

void EventStreams::Overflow(Stream& stream) { OverflowAt(stream, stream.next_seq); }

void EventStreams::OverflowAt(Stream& stream, int64_t resume_from) {
  stream.writer->Close(
      "event: overflow\ndata: " + Dump(json{{"resume_from", resume_from}}) + "\n\n");
}

}  // namespace sheetlog::api
