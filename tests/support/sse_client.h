// A raw-socket client for Server-Sent Events (GET /v1/sheets/{id}/events,
// GET /v1/admin/events): the test reads exactly what the server wrote, framing and all
// (the response head, chunked framing, then "field: value" lines ending in a blank
// line), over plain HTTP on loopback.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace sheetlog::testing {

struct SseEvent {
  std::string id;
  std::string event;
  std::string data;
};

class SseClient {
 public:
  // Connects to 127.0.0.1:port and sends `GET path`; `extra_headers` are whole header
  // lines ("Last-Event-ID: 7\r\n"). A small receive window, so a client that stops
  // reading is felt by the server after a few MB rather than after the kernel's largest
  // buffers.
  SseClient(int port, const std::string& path, const std::string& extra_headers = "");
  ~SseClient();
  SseClient(const SseClient&) = delete;
  SseClient& operator=(const SseClient&) = delete;

  bool connected() const { return connected_; }
  int status() const { return status_; }  // 0 until the response head arrived
  bool closed() const { return eof_; }

  // Reads until `done(events)` holds, the server closes, or `seconds` of real time.
  bool ReadUntil(const std::function<bool(const std::vector<SseEvent>&)>& done,
                 int seconds = 20);
  // Waits at most `at_most` for bytes from the server and reads what came (parsing any
  // whole events). True if anything arrived or the server closed.
  bool ReadSome(std::chrono::milliseconds at_most);

  const std::vector<SseEvent>& events() const { return events_; }
  // Comment lines (": heartbeat"), in order.
  const std::vector<std::string>& comments() const { return comments_; }
  // The events named `event`, in order.
  std::vector<SseEvent> Of(const std::string& event) const;

 private:
  void Parse();

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  int status_ = 0;
  std::string raw_, body_;
  std::vector<SseEvent> events_;
  std::vector<std::string> comments_;
};

}  // namespace sheetlog::testing
