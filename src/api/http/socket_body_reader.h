// Internal to src/api/http: reads a streamed request body (an upload) straight from the
// socket on the worker thread that serves it, held to the same stall and minimum-rate
// rules as a body the event loop buffers (HttpServerOptions::body_timeout_ms,
// body_min_rate). The event loop lends the socket to the worker for this and takes it
// back with the response. Not thread-safe: one worker uses it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "src/api/http/http_message.h"
#include "src/api/http/http_parser.h"
#include "src/api/http/transport.h"

namespace sheetlog::api::http {

// The minimum-rate rule: a body (or response) whose transfer began at `started_ms` and
// of which `transferred` bytes have moved must be complete by the returned time;
// INT64_MAX without a rule (`min_rate` <= 0).
int64_t RateDeadlineMs(int64_t started_ms, int64_t transferred, int64_t timeout_ms,
                       int64_t min_rate);

// How long a body may take, by which clock.
struct BodyPace {
  int64_t timeout_ms = 0;
  int64_t min_rate = 0;
  std::function<int64_t()> clock;
  // A manual clock does not wake poll(): wait in slices and read the clock again.
  bool poll_in_slices = false;
};

class SocketBodyReader {
 public:
  // `buffered`: body bytes the loop had already read with the head. `transport` reads
  // `fd` (in the clear or through TLS); the reader waits on `fd` for readiness.
  SocketBodyReader(Transport* transport, int fd, std::string buffered,
                   BodyDecoder decoder, int64_t max_bytes, BodyPace pace);

  // Delivers the decoded body to `receiver` piece by piece. True once all of it was
  // delivered; false if it ended early (the client stopped sending, a timeout, a
  // framing error, over max_bytes, or the receiver returned false).
  bool Read(const ContentReceiver& receiver);

  bool complete() const { return complete_; }
  // Bytes read past the body (the next pipelined request).
  std::string TakeLeftover() { return std::move(buffer_); }

 private:
  Transport* transport_;
  int fd_;
  std::string buffer_;
  BodyDecoder decoder_;
  int64_t max_bytes_;
  BodyPace pace_;
  int64_t started_ms_;
  int64_t last_progress_ms_;
  int64_t received_;  // bytes from the socket, framing included (the rate rule's)
  int64_t delivered_ = 0;
  bool complete_ = false;
};

}  // namespace sheetlog::api::http
