// A raw HTTP/1.1 client for tests that must send what no well-behaved client sends
// (malformed framing, pipelining, HEAD, HTTP/1.0, half-closes, resets) and read back
// exactly what the server put on the wire: a response is parsed by its own framing
// (Content-Length, chunked, or the end of the connection; none after HEAD), so a server
// that sends bytes it should not is seen as a desynchronised next response.
#pragma once

#include <map>
#include <string>

namespace sheetlog::testing {

struct RawResponse {
  int status = 0;    // 0: no complete status line arrived
  std::string head;  // the status line and header lines, as sent
  // Header names in lower case; values as sent (repeated headers: several entries).
  std::multimap<std::string, std::string> headers;
  std::string body;       // decoded from chunked
  bool complete = false;  // the body ended as its framing said
  bool has(const std::string& lower_name) const { return headers.count(lower_name) > 0; }
  std::string header(const std::string& lower_name) const;
};

// A blocking TCP connection to 127.0.0.1:port. Every read is bounded (SO_RCVTIMEO,
// `read_timeout_s`) so a server that never answers fails a test instead of hanging it.
class RawConnection {
 public:
  explicit RawConnection(int port, int read_timeout_s = 60);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  bool Send(const std::string& data);
  void ShutdownWrite();
  // Closes with a TCP reset (SO_LINGER 0).
  void Reset();

  // True if the server closed the connection (EOF) with nothing more sent; false for
  // bytes, an error, or the bounded read timing out.
  bool ClosedByServer();
  // Everything until the server closes (or the bounded read times out).
  std::string ReadToEnd();
  // The next response, framed as the server framed it. `head_request`: the response to
  // a HEAD, which has no content whatever its headers say. Interim (1xx) responses are
  // returned like any other.
  RawResponse ReadResponse(bool head_request = false);
  // The same response as text (head, blank line, decoded body), for messages and for
  // StatusOf.
  std::string ReadResponseText(bool head_request = false);
  // The bytes received and not yet consumed by ReadResponse.
  const std::string& buffered() const { return buffer_; }
  // Reads what has arrived (at least a byte, waiting for it) into buffered(); false on
  // EOF, an error or the bounded read timing out.
  bool ReadMore();

 private:
  int fd_ = -1;
  std::string buffer_;
};

// The status of a raw response's text ("HTTP/1.1 404 ..." -> 404), 0 if none.
int StatusOf(const std::string& response);

}  // namespace sheetlog::testing
