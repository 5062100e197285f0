// Requests and responses of sheetlog's own HTTP/1.1 server (src/api/http/). The member
// names follow cpp-httplib's (req.get_header_value, res.set_content, sink.write ...) so
// route handlers written against it need no more than a namespace change.
//
// Response bodies come in four kinds:
//  - a string (set_content);
//  - a pull provider of known length (set_content_provider) or chunked
//    (set_chunked_content_provider): called on worker threads, one call at a time, while
//    the connection's buffer has room; between calls the worker is free (a client that
//    reads slowly never holds a thread);
//  - an event stream (StartStream): any thread pushes bytes through a StreamWriter that
//    never blocks and reports a full buffer, for long-lived responses (Server-Sent
//    Events) that must not hold a worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/env/mutex.h"

namespace sheetlog::api::http {

// Orders header names without regard to ASCII case (HTTP field names are
// case-insensitive).
struct CaseInsensitiveLess {
  bool operator()(const std::string& a, const std::string& b) const;
};
using Headers = std::multimap<std::string, std::string, CaseInsensitiveLess>;
// Query parameters, percent-decoded ('+' is a space), in the order sent.
using Params = std::multimap<std::string, std::string>;

struct Request {
  std::string method;  // as sent, e.g. "GET"
  std::string target;  // the request-target as sent: path and query
  std::string path;    // percent-decoded path (may hold any bytes, also invalid UTF-8)
  Params params;
  Headers headers;
  // [0] the whole path, [n] the n-th capture of the route pattern that matched.
  std::vector<std::string> matches;
  // The body: decoded from its framing (Content-Length or chunked) and inflated from
  // Content-Encoding: gzip, never longer than the route's limit. Empty for routes that
  // read their body as a stream.
  std::string body;

  bool has_header(const std::string& name) const;
  // The first value of header `name`, or "" if absent.
  std::string get_header_value(const std::string& name) const;
  bool has_param(const std::string& name) const;
  // The first value of query parameter `name`, or "" if absent.
  std::string get_param_value(const std::string& name) const;
};

// Where a content provider writes its body.
class DataSink {
 public:
  virtual ~DataSink() = default;
  // Queues `size` bytes of the body; never blocks (the server calls the provider again
  // only when the connection has room, so write what one read yields per call).
  // Returns false when the connection is gone (the client left, a write timed out, or
  // the server is stopping): stop producing then.
  virtual bool write(const char* data, size_t size) = 0;
  // Ends a chunked body (set_chunked_content_provider). A provider of known length ends
  // when it has written that many bytes.
  virtual void done() = 0;
};

// Called repeatedly with the number of bytes written so far (and, for a body of known
// length, how many remain) until the body is complete, from any worker thread but one
// call at a time; returning false (or throwing) aborts the response (the connection
// closes, so the client sees a truncated body). Not called at all for HEAD.
using ContentProvider = std::function<bool(size_t offset, size_t length, DataSink& sink)>;
using ChunkedContentProvider = std::function<bool(size_t offset, DataSink& sink)>;

// A streamed request body (routes that read their body themselves): the reader calls
// the receiver with each piece; the receiver returns false to stop. The reader returns
// true once the whole body was delivered, false if it ended early (the client stopped
// sending, a timeout, a framing error, or the receiver stopped).
using ContentReceiver = std::function<bool(const char* data, size_t size)>;
using ContentReader = std::function<bool(ContentReceiver receiver)>;

// The producer side of a long-lived streaming response (Server-Sent Events).
//
// Contract:
//  - Every method is thread-safe and never blocks on the network.
//  - Bytes are queued in order and sent as the connection accepts them (chunked
//    encoding is added by the server). At most `buffer_limit` bytes (StartStream) wait
//    unsent; Write refuses beyond that (kFull) and queues nothing: the consumer is too
//    slow. The usual answer is Close() with a last message (say, where to resume).
//  - The stream ends with Close(), or when the connection closes (client gone, write
//    timeout, server stopping); then Write answers kClosed and the on-close callback
//    runs once (on the server's event thread: it must not block; hand work elsewhere).
//  - Writes made before the handler returns are queued and sent after the head.
class StreamWriter {
 public:
  enum class WriteResult { kQueued, kFull, kClosed };
  virtual ~StreamWriter() = default;
  virtual WriteResult Write(std::string_view data) = 0;
  // Queues `last` (even beyond the buffer limit: keep it small) and ends the response
  // once everything queued is sent; the connection is then closed. Idempotent.
  virtual void Close(std::string_view last = {}) = 0;
  // True once the stream can take no more writes (closed by either side).
  virtual bool closed() const = 0;
  // Registers the callback run once when the stream ends for any reason (runs at once
  // if it already has). Replaces an earlier callback.
  virtual void OnClose(std::function<void()> callback) = 0;
};

class ResponseChannel;
class ResponseSender;

struct Response {
  int status = 200;
  Headers headers;
  std::string body;

  // Replaces any earlier value of header `name`.
  void set_header(const std::string& name, const std::string& value);
  bool has_header(const std::string& name) const;
  std::string get_header_value(const std::string& name) const;
  void set_content(std::string content, const std::string& content_type);
  // A body of exactly `length` bytes pulled from `provider` on worker threads.
  void set_content_provider(size_t length, const std::string& content_type,
                            ContentProvider provider);
  // A chunked body pulled from `provider` until it calls sink.done().
  void set_chunked_content_provider(const std::string& content_type,
                                    ChunkedContentProvider provider);
  // Makes the response a stream (chunked, or close-delimited for HTTP/1.0; ends with
  // StreamWriter::Close or when the connection closes; the connection is not reused;
  // for HEAD it ends at once). At most `buffer_limit` bytes wait
  // unsent. The returned writer outlives the handler: keep it and write from any thread.
  std::shared_ptr<StreamWriter> StartStream(const std::string& content_type,
                                            size_t buffer_limit = 1 << 20);
  // Makes the response deferred: the handler returns without it and completes it
  // later, from any thread, with the returned sender (e.g. once a write it queued has
  // committed). Whatever this Response holds when the handler returns is dropped.
  std::shared_ptr<ResponseSender> Defer();

  // For the server: how the body is produced.
  enum class BodyKind { kString, kSized, kChunked, kStream };
  BodyKind body_kind = BodyKind::kString;
  size_t content_length = 0;  // kSized
  ContentProvider sized_provider;
  ChunkedContentProvider chunked_provider;
  std::shared_ptr<ResponseChannel> stream;   // kStream
  std::shared_ptr<ResponseSender> deferred;  // set by Defer()
};

// The sending side of a deferred response (Response::Defer).
//
// Contract:
//  - Send() delivers the response, with a string body (set_content; a provider or a
//    stream is answered 500), from any thread, and never blocks on the network. Only
//    the first Send counts.
//  - Sending before the handler has returned is allowed: the response is delivered
//    once it has.
//  - A sender dropped without Send() answers 500 (text/plain): a request is never left
//    without a response. Layers above send their own error before that happens.
//  - After the server stopped, a response is dropped.
//  - Thread-safe.
class ResponseSender {
 public:
  ResponseSender() = default;
  ResponseSender(const ResponseSender&) = delete;
  ResponseSender& operator=(const ResponseSender&) = delete;
  ~ResponseSender();

  void Send(Response response);

  // For the server, once the handler returned: `deliver` gets the response (nullopt:
  // dropped unsent), at once if Send already ran.
  using Deliver = std::function<void(std::optional<Response>)>;
  void Attach(Deliver deliver);

 private:
  Mutex mu_;
  std::optional<Response> early_ GUARDED_BY(mu_);  // sent before Attach
  Deliver deliver_ GUARDED_BY(mu_);
  bool sent_ GUARDED_BY(mu_) = false;
};

// The reason phrase of an HTTP status ("Not Found"); "Unknown" for others.
const char* StatusReason(int status);

}  // namespace sheetlog::api::http
