#include "src/api/http/response_framing.h"

#include <strings.h>

#include <algorithm>

#include "src/api/http/content_pump.h"
#include "src/api/http/http_parser.h"
#include "src/api/http/response_channel.h"

namespace sheetlog::api::http {
namespace {

// Headers only the server writes (the framing and the connection's fate).
bool IsFramingHeader(const std::string& name) {
  return strcasecmp(name.c_str(), "Content-Length") == 0 ||
         strcasecmp(name.c_str(), "Transfer-Encoding") == 0 ||
         strcasecmp(name.c_str(), "Connection") == 0 ||
         strcasecmp(name.c_str(), "Keep-Alive") == 0;
}

// How the body is delimited on the wire.
enum class Delimiter {
  kNone,    // no content: HEAD, 1xx, 204, 304
  kLength,  // Content-Length
  kChunked,
  kClose,  // the bytes as they are, ended by closing the connection (HTTP/1.0)
};

// Releases what a response holds for its body (it will not be sent).
void DropBody(Response& response) {
  if (response.stream) response.stream->Break();  // its on-close callback runs
  response.stream.reset();
  response.sized_provider = nullptr;
  response.chunked_provider = nullptr;
  response.body.clear();
}

Response InternalError(const std::string& message) {
  Response error;
  error.status = 500;
  error.set_content(message, "text/plain; charset=utf-8");
  return error;
}

}  // namespace

bool HeaderFieldWritable(const std::string& name, const std::string& value) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenChar)) return false;
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos;
}

PreparedResponse PrepareResponse(const RequestFacts& facts, Response& response,
                                 bool server_close, size_t response_buffer_bytes) {
  for (const auto& [name, value] : response.headers) {
    if (!IsFramingHeader(name) && !HeaderFieldWritable(name, value)) {
      // A handler that echoes client bytes into a header must not split the response.
      DropBody(response);
      response =
          InternalError("the response had a header that cannot be sent (" +
                        std::string(HeaderFieldWritable(name, "") ? "value" : "name") +
                        " with a control character)\n");
      break;
    }
  }

  const bool unknown_length = response.body_kind == Response::BodyKind::kChunked ||
                              response.body_kind == Response::BodyKind::kStream;
  const bool no_content_status = response.status == 204 || response.status == 304 ||
                                 (response.status >= 100 && response.status < 200);
  Delimiter delimiter;
  if (no_content_status) {
    delimiter = Delimiter::kNone;
  } else if (!unknown_length) {
    delimiter = Delimiter::kLength;
  } else if (facts.minor_version >= 1) {
    delimiter = Delimiter::kChunked;
  } else {
    delimiter = Delimiter::kClose;
  }
  const bool send_content = !facts.head && delimiter != Delimiter::kNone;

  PreparedResponse prepared;
  // An event stream is long-lived by design: its connection is not reused after it.
  prepared.close_after =
      server_close || !facts.keep_alive ||
      (send_content && (delimiter == Delimiter::kClose ||
                        response.body_kind == Response::BodyKind::kStream));

  std::string& head = prepared.head;
  head.reserve(256);
  head += "HTTP/1.1 ";
  head += std::to_string(response.status);
  head += ' ';
  head += StatusReason(response.status);
  head += "\r\n";
  for (const auto& [name, value] : response.headers) {
    if (IsFramingHeader(name)) continue;
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  // The framing headers a GET would get, for HEAD too (RFC 9110 9.3.2, 8.6).
  if (delimiter == Delimiter::kLength) {
    const size_t length = response.body_kind == Response::BodyKind::kSized
                              ? response.content_length
                              : response.body.size();
    head += "Content-Length: ";
    head += std::to_string(length);
    head += "\r\n";
  } else if (delimiter == Delimiter::kChunked && !facts.head) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  if (prepared.close_after) {
    head += "Connection: close\r\n";
  } else if (facts.minor_version == 0) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";

  if (!send_content) {
    DropBody(response);
    return prepared;
  }
  prepared.chunked = delimiter == Delimiter::kChunked;
  switch (response.body_kind) {
    case Response::BodyKind::kString:
      prepared.body = std::move(response.body);
      break;
    case Response::BodyKind::kStream:
      prepared.channel = std::move(response.stream);
      prepared.stream = true;
      break;
    case Response::BodyKind::kSized:
    case Response::BodyKind::kChunked:
      prepared.channel = std::make_shared<ResponseChannel>(response_buffer_bytes);
      prepared.pump = std::make_shared<ContentPump>(response, prepared.channel);
      break;
  }
  return prepared;
}

}  // namespace sheetlog::api::http
