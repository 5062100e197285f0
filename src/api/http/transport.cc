#include "src/api/http/transport.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace sheetlog::api::http {
namespace {

class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}

  Io Read(char* buffer, size_t size, size_t* moved) override {
    while (true) {
      ssize_t n = recv(fd_, buffer, size, 0);
      if (n > 0) {
        *moved = static_cast<size_t>(n);
        return Io::kDone;
      }
      if (n == 0) return Io::kEof;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWouldBlock : Io::kError;
    }
  }

  Io Write(const char* buffer, size_t size, size_t* moved) override {
    while (true) {
      ssize_t n = send(fd_, buffer, size, MSG_NOSIGNAL);
      if (n >= 0) {
        *moved = static_cast<size_t>(n);
        return n > 0 || size == 0 ? Io::kDone : Io::kWouldBlock;
      }
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWouldBlock : Io::kError;
    }
  }

  void ShutdownWrite() override { shutdown(fd_, SHUT_WR); }

 private:
  int fd_;
};

class TlsTransport final : public Transport {
 public:
  TlsTransport(int fd, std::shared_ptr<TlsContext> context)
      : fd_(fd), context_(std::move(context)), ssl_(SSL_new(context_->native())) {
    if (ssl_ != nullptr) {
      SSL_set_fd(ssl_, fd);
      SSL_set_accept_state(ssl_);
    }
  }
  ~TlsTransport() override { SSL_free(ssl_); }

  Io Read(char* buffer, size_t size, size_t* moved) override {
    if (ssl_ == nullptr) return Io::kError;
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(ssl_, buffer, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) {
      *moved = static_cast<size_t>(n);
      return Io::kDone;
    }
    return Failed(n);
  }

  Io Write(const char* buffer, size_t size, size_t* moved) override {
    if (ssl_ == nullptr) return Io::kError;
    ERR_clear_error();
    errno = 0;
    int n = SSL_write(ssl_, buffer, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) {
      *moved = static_cast<size_t>(n);
      return Io::kDone;
    }
    Io result = Failed(n);
    return result == Io::kEof ? Io::kError : result;
  }

  bool wants_write() const override { return want_ == SSL_ERROR_WANT_WRITE; }
  bool wants_read() const override { return want_ == SSL_ERROR_WANT_READ; }
  bool handshake_complete() const override {
    return ssl_ != nullptr && SSL_is_init_finished(ssl_);
  }
  bool HasBufferedInput() const override {
    return ssl_ != nullptr && SSL_pending(ssl_) > 0;
  }

  void ShutdownWrite() override {
    // close_notify if the handshake got that far; a failure changes nothing (the FIN
    // follows either way).
    if (ssl_ != nullptr && SSL_is_init_finished(ssl_)) {
      ERR_clear_error();
      SSL_shutdown(ssl_);
    }
    shutdown(fd_, SHUT_WR);
  }

 private:
  Io Failed(int result) {
    want_ = SSL_get_error(ssl_, result);
    switch (want_) {
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE:
        return Io::kWouldBlock;
      case SSL_ERROR_ZERO_RETURN:
        return Io::kEof;  // close_notify
      case SSL_ERROR_SYSCALL:
        // The peer closed without close_notify (a truncation attack is the client's
        // own loss: it only ends its own request) or the socket failed.
        return ERR_peek_error() == 0 && errno == 0 ? Io::kEof : Io::kError;
      default:
        return Io::kError;  // a protocol failure, e.g. plain HTTP on the TLS port
    }
  }

  int fd_;
  std::shared_ptr<TlsContext> context_;
  SSL* ssl_;
  int want_ = SSL_ERROR_NONE;
};

}  // namespace

std::unique_ptr<Transport> MakePlainTransport(int fd) {
  return std::make_unique<PlainTransport>(fd);
}

std::unique_ptr<Transport> MakeTlsTransport(int fd, std::shared_ptr<TlsContext> context) {
  return std::make_unique<TlsTransport>(fd, std::move(context));
}

}  // namespace sheetlog::api::http
