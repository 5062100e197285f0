// Internal to src/api/http: runs a response's content provider (Response::
// set_content_provider / set_chunked_content_provider) on worker threads without ever
// blocking one on the client. A slice calls the provider until the body is complete or
// the channel holds its buffer's worth of unsent bytes; then the pump parks in the
// channel and the worker is free. The event loop's Take, once it has sent those bytes,
// submits the next slice. A client that reads slowly, or not at all, so holds its
// connection and one buffer, never a worker.
//
// A provider's single call may write any amount (the sink never blocks); the built-in
// providers write at most one read chunk per call, which bounds a connection's memory at
// about twice the buffer.
#pragma once

#include <functional>
#include <memory>

#include "src/api/http/http_message.h"

namespace sheetlog::api::http {

class ResponseChannel;

// Thread-safe in the way it is used: one slice runs at a time (the next is submitted
// only once the previous parked or ended), on any worker.
class ContentPump : public std::enable_shared_from_this<ContentPump> {
 public:
  // Runs a task on a worker thread. Must accept it (a parked pump is one per
  // connection, so this is bounded by the connections).
  using Submit = std::function<void(std::function<void()>)>;

  // Takes the provider out of `response` (kSized or kChunked).
  ContentPump(Response& response, std::shared_ptr<ResponseChannel> channel);

  // Produces until the body is complete (the channel is finished), the channel is full
  // (parks; `submit` runs the next slice when it has room) or the body cannot be
  // completed (the provider failed or threw, or the connection is gone: the channel is
  // broken and the loop closes the connection). Call on a worker thread; one slice at a
  // time.
  void RunSlice(const Submit& submit);

 private:
  // One provider call; false when the body cannot be completed.
  bool ProduceOnce();

  const bool sized_;
  const size_t length_;  // sized_
  ContentProvider sized_provider_;
  ChunkedContentProvider chunked_provider_;
  std::shared_ptr<ResponseChannel> channel_;
  size_t written_ = 0;
  bool done_ = false;  // the chunked provider called sink.done()
};

}  // namespace sheetlog::api::http
