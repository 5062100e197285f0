#include "tests/support/sse_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sheetlog::testing {

SseClient::SseClient(int port, const std::string& path,
                     const std::string& extra_headers) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  const int window = 16 * 1024;
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &window, sizeof(window));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  const std::string request = "GET " + path +
                              " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\n" + extra_headers + "\r\n";
  if (connected_) connected_ = ::send(fd_, request.data(), request.size(), 0) > 0;
}

SseClient::~SseClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool SseClient::ReadUntil(const std::function<bool(const std::vector<SseEvent>&)>& done,
                          int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done(events_)) {
    if (eof_ || std::chrono::steady_clock::now() > deadline) return done(events_);
    ReadSome(std::chrono::milliseconds(100));
  }
  return true;
}

bool SseClient::ReadSome(std::chrono::milliseconds at_most) {
  if (eof_ || fd_ < 0) return true;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(at_most.count())) <= 0) return false;
  char buf[65536];
  const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
  if (n <= 0) {
    eof_ = true;
    return true;
  }
  raw_.append(buf, static_cast<size_t>(n));
  Parse();
  return true;
}

std::vector<SseEvent> SseClient::Of(const std::string& event) const {
  std::vector<SseEvent> out;
  for (const SseEvent& e : events_) {
    if (e.event == event) out.push_back(e);
  }
  return out;
}

void SseClient::Parse() {
  if (status_ == 0) {
    const size_t end = raw_.find("\r\n\r\n");
    if (end == std::string::npos) return;
    status_ = std::stoi(raw_.substr(9, 3));
    raw_.erase(0, end + 4);
  }
  while (true) {
    const size_t line = raw_.find("\r\n");
    if (line == std::string::npos) break;
    const size_t size = std::stoul(raw_.substr(0, line), nullptr, 16);
    if (raw_.size() < line + 2 + size + 2) break;
    body_ += raw_.substr(line + 2, size);
    raw_.erase(0, line + 2 + size + 2);
    if (size == 0) eof_ = true;
  }
  size_t end;
  while ((end = body_.find("\n\n")) != std::string::npos) {
    const std::string block = body_.substr(0, end);
    body_.erase(0, end + 2);
    SseEvent event;
    size_t start = 0;
    while (start < block.size()) {
      size_t stop = block.find('\n', start);
      if (stop == std::string::npos) stop = block.size();
      const std::string field = block.substr(start, stop - start);
      start = stop + 1;
      if (field.rfind(':', 0) == 0) comments_.push_back(field);
      if (field.rfind("id: ", 0) == 0) event.id = field.substr(4);
      if (field.rfind("event: ", 0) == 0) event.event = field.substr(7);
      if (field.rfind("data: ", 0) == 0) event.data = field.substr(6);
    }
    if (!event.event.empty()) events_.push_back(std::move(event));
  }
}

}  // namespace sheetlog::testing
