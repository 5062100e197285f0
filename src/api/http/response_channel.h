// Internal to src/api/http: the bytes of one response body travelling from the thread
// that produces them (a worker running a content provider, or any thread writing an
// event stream) to the server's event loop, which sends them. Bounded: at most
// `buffer_limit` bytes wait in the channel (the loop holds at most as many more in the
// connection's output buffer).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "src/api/http/http_message.h"

namespace sheetlog::api::http {

class ResponseChannel : public StreamWriter {
 public:
  // `chunked`: frame each write as an HTTP/1.1 chunk and end with the last chunk.
  ResponseChannel(size_t buffer_limit, bool chunked);

  // --- producer side ---
  // StreamWriter: never blocks; kFull if the bytes do not fit.
  WriteResult Write(std::string_view data) override;
  // Blocks while the buffer is full; false once the channel is broken.
  bool WriteBlocking(std::string_view data);
  // Ends the body (the loop completes the response once everything is sent).
  void Finish();
  void Close(std::string_view last = {}) override;
  bool closed() const override;
  // True once Break() ran (the connection is gone, or a producer gave up): unlike
  // closed(), not true for a body that merely finished.
  bool broken() const;
  void OnClose(std::function<void()> callback) override;

  // --- event-loop side ---
  // Starts delivery: `wake` is called (from the producing thread, never under the lock
  // of the caller) whenever bytes or the end arrive while the loop has nothing to send.
  void Attach(std::function<void()> wake);
  // Appends the queued bytes to *out. Returns true when the body is complete: finished
  // and nothing left to take.
  bool Take(std::string* out);
  // The connection is gone or the response is over: producers are released (writes
  // fail from now on) and the on-close callback runs, once.
  void Break();

 private:
  void AppendLocked(std::string_view data);
  // Calls wake_ if the loop may be waiting for bytes; REQUIRES lock not held.
  void Wake(bool was_empty);

  mutable std::mutex mu_;
  std::condition_variable room_;
  const size_t limit_;
  const bool chunked_;
  std::string pending_;
  bool finished_ = false;
  bool broken_ = false;
  bool close_callback_ran_ = false;
  std::function<void()> wake_;
  std::function<void()> on_close_;
};

}  // namespace sheetlog::api::http
