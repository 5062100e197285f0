// Internal to src/api/http: the bytes of one response body travelling from the thread
// that produces them (a worker running a content provider, or any thread writing an
// event stream) to the server's event loop, which sends them.
//
// Bounded: at most `buffer_limit` bytes wait in the channel for a stream writer (Write
// refuses beyond it). A content provider (ContentPump) appends without blocking and
// parks when the channel holds its limit; the loop's Take resumes it. No producer ever
// blocks on the client, so a client that does not read holds a connection and its
// buffer, never a thread.
//
// The framing (chunked or not) is applied when the loop takes the bytes, because it is
// decided by the request (HTTP/1.0, HEAD) after the handler has already written.
//
// Thread-safe: every method may be called from any thread.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <string_view>

#include "emulator/env/mutex.h"
#include "src/api/http/http_message.h"

namespace sheetlog::api::http {

class ResponseChannel : public StreamWriter {
 public:
  explicit ResponseChannel(size_t buffer_limit);

  // --- producer side ---
  // StreamWriter: never blocks; kFull if the bytes do not fit.
  WriteResult Write(std::string_view data) override;
  // Queues `data` whatever the buffer holds (a content provider's write: the pump bounds
  // the buffer by parking between provider calls). False once the channel is broken.
  bool Append(std::string_view data);
  // Ends the body (the loop completes the response once everything is sent).
  void Finish();
  void Close(std::string_view last = {}) override;
  bool closed() const override;
  // True once Break() ran (the connection is gone, or a producer gave up): unlike
  // closed(), not true for a body that merely finished.
  bool broken() const;
  void OnClose(std::function<void()> callback) override;
  // For a producer that pulls (ContentPump): if the channel holds its limit or more,
  // keeps `resume` to be called (on the loop's thread, from Take) once it has been
  // drained, and returns true: the producer stops until then. Returns false if there is
  // room (produce on) or the channel is broken (check broken()).
  bool ParkUntilRoom(std::function<void()> resume);
  size_t buffered() const;

  // --- event-loop side ---
  // Starts delivery with the framing the request allows: `chunked` frames each write as
  // an HTTP/1.1 chunk and ends with the last chunk; otherwise the bytes go as they are
  // (a body of known length, or one delimited by closing the connection). `wake` is
  // called (from the producing thread, never under a lock of the caller) whenever bytes
  // or the end arrive while the loop has nothing to send.
  void Attach(bool chunked, std::function<void()> wake);
  // Appends the queued bytes, framed, to *out. Returns true when the body is complete:
  // finished and nothing left to take. Resumes a parked producer.
  bool Take(std::string* out);
  // The connection is gone or the response is over: producers are released (writes
  // fail from now on), a parked producer is dropped and the on-close callback runs,
  // once.
  void Break();

 private:
  // Calls wake_ if the loop may be waiting for bytes; REQUIRES lock not held.
  void Wake(bool was_empty) EXCLUDES(mu_);

  mutable Mutex mu_;
  const size_t limit_;
  bool chunked_ GUARDED_BY(mu_) = false;
  std::deque<std::string> pieces_ GUARDED_BY(mu_);  // unframed, in order
  size_t buffered_ GUARDED_BY(mu_) = 0;             // bytes in pieces_
  bool finished_ GUARDED_BY(mu_) = false;
  bool end_taken_ GUARDED_BY(mu_) = false;  // the last chunk went out (chunked)
  bool broken_ GUARDED_BY(mu_) = false;
  bool close_callback_ran_ GUARDED_BY(mu_) = false;
  std::function<void()> wake_ GUARDED_BY(mu_);
  std::function<void()> on_close_ GUARDED_BY(mu_);
  std::function<void()> resume_ GUARDED_BY(mu_);  // a parked producer
};

}  // namespace sheetlog::api::http
