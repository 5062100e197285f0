#include "tests/support/raw_http.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace sheetlog::testing {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string Trim(const std::string& text) {
  size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  size_t last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

}  // namespace

std::string RawResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

RawConnection::RawConnection(int port, int read_timeout_s) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd_);
    fd_ = -1;
    return;
  }
  timeval timeout{read_timeout_s, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) close(fd_);
}

bool RawConnection::Send(const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

void RawConnection::ShutdownWrite() { shutdown(fd_, SHUT_WR); }

void RawConnection::Reset() {
  linger hard{1, 0};
  setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
  close(fd_);
  fd_ = -1;
}

bool RawConnection::ClosedByServer() {
  char byte;
  return buffer_.empty() && recv(fd_, &byte, 1, 0) == 0;
}

std::string RawConnection::ReadToEnd() {
  std::string all;
  all.swap(buffer_);
  while (ReadMore()) {
    all += buffer_;
    buffer_.clear();
  }
  return all;
}

bool RawConnection::ReadMore() {
  char buf[65536];
  ssize_t n = recv(fd_, buf, sizeof(buf), 0);
  if (n <= 0) return false;
  buffer_.append(buf, static_cast<size_t>(n));
  return true;
}

RawResponse RawConnection::ReadResponse(bool head_request) {
  RawResponse response;
  size_t head_end;
  while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!ReadMore()) {
      response.head.swap(buffer_);  // what came before the end, for messages
      return response;
    }
  }
  response.head = buffer_.substr(0, head_end + 2);
  buffer_.erase(0, head_end + 4);
  response.status = StatusOf(response.head);
  size_t line_start = response.head.find("\r\n") + 2;
  while (line_start < response.head.size()) {
    size_t line_end = response.head.find("\r\n", line_start);
    std::string line = response.head.substr(line_start, line_end - line_start);
    line_start = line_end + 2;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    response.headers.emplace(Lower(line.substr(0, colon)), Trim(line.substr(colon + 1)));
  }
  // RFC 9112 6.3: no content after HEAD, 1xx, 204 and 304.
  if (head_request || response.status < 200 || response.status == 204 ||
      response.status == 304) {
    response.complete = true;
    return response;
  }
  if (Lower(response.header("transfer-encoding")) == "chunked") {
    while (true) {
      size_t line_end;
      while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
        if (!ReadMore()) return response;
      }
      const size_t size = std::stoul(buffer_.substr(0, line_end), nullptr, 16);
      while (buffer_.size() < line_end + 2 + size + 2) {
        if (!ReadMore()) return response;
      }
      if (size == 0) {
        // No trailers from this server: the last chunk is "0\r\n\r\n".
        buffer_.erase(0, line_end + 4);
        response.complete = true;
        return response;
      }
      response.body += buffer_.substr(line_end + 2, size);
      buffer_.erase(0, line_end + 2 + size + 2);
    }
  }
  if (response.has("content-length")) {
    const size_t length = std::stoul(response.header("content-length"));
    while (buffer_.size() < length) {
      if (!ReadMore()) return response;
    }
    response.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    response.complete = true;
    return response;
  }
  // Delimited by the end of the connection.
  response.body = ReadToEnd();
  response.complete = true;
  return response;
}

std::string RawConnection::ReadResponseText(bool head_request) {
  RawResponse response = ReadResponse(head_request);
  if (response.status == 0) return response.head;
  return response.head + "\r\n" + response.body;
}

int StatusOf(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

}  // namespace sheetlog::testing
