// Internal to src/api/http: the one place that decides how a response is framed on the
// wire. Every response the server sends — a handler's, a deferred one, a refusal from
// the head, an error or an overload the server answers itself — goes through
// PrepareResponse, so the rules below hold for all of them by construction:
//
//  - HEAD: the head a GET would get (Content-Length when the length is known) and never
//    any content (RFC 9110 9.3.2): a content provider is not run, a stream is ended at
//    once, and the connection stays usable.
//  - 1xx, 204, 304: no content and no Content-Length.
//  - A body of known length (a string, a sized provider): Content-Length.
//  - A body of unknown length (a chunked provider, an event stream): chunked for
//    HTTP/1.1; for HTTP/1.0, which has no chunked coding, the bytes as they are, ended
//    by closing the connection.
//  - The connection closes after the response when the request asked for it (or was
//    HTTP/1.0 without keep-alive), when the server decided so (malformed input, a body
//    left unread, overload, stopping), or when the body is close-delimited. HTTP/1.0
//    responses that keep the connection say `Connection: keep-alive`.
//  - Handlers never frame: their Content-Length, Transfer-Encoding and Connection
//    headers are dropped. A header name that is not a token, or a value holding CR, LF
//    or NUL, is never written: the response becomes a 500 instead.
#pragma once

#include <memory>
#include <string>

#include "src/api/http/http_message.h"

namespace sheetlog::api::http {

class ResponseChannel;
class ContentPump;

// What framing needs to know about the request being answered.
struct RequestFacts {
  bool head = false;       // the method was HEAD
  int minor_version = 1;   // HTTP/1.<minor>
  bool keep_alive = true;  // the request allows another one on the connection
};

// A response ready for the wire.
struct PreparedResponse {
  std::string head;  // status line and header fields, ending with the blank line
  std::string body;  // a string body (empty for the others)
  // A body produced over time: the loop Attach()es it with `chunked`.
  std::shared_ptr<ResponseChannel> channel;
  bool chunked = false;
  // Set for a content provider: run its first slice (on a worker) once the head has
  // been handed to the loop; it resumes itself through the channel after that.
  std::shared_ptr<ContentPump> pump;
  // An event stream (long-lived by design): not held to the minimum response rate.
  bool stream = false;
  bool close_after = false;
};

// Prepares `response` (consumed: its provider or stream moves into the result) as the
// answer to a request with `facts`. `server_close`: the server wants the connection
// closed after it. `response_buffer_bytes` bounds a provider's channel.
PreparedResponse PrepareResponse(const RequestFacts& facts, Response& response,
                                 bool server_close, size_t response_buffer_bytes);

// True if `value` may be written as a header field value (no CR, LF or NUL) and `name`
// as a field name (a token).
bool HeaderFieldWritable(const std::string& name, const std::string& value);

}  // namespace sheetlog::api::http
