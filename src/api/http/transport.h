// Internal to src/api/http: how a connection's bytes cross its socket, in the clear or
// through TLS (OpenSSL), behind one non-blocking interface for the event loop and the
// worker that reads a streamed body. Not thread-safe: one thread at a time uses a
// transport (the loop, or the worker a socket is lent to).
#pragma once

#include <cstddef>
#include <memory>

#include "src/api/http/tls.h"

namespace sheetlog::api::http {

class Transport {
 public:
  enum class Io {
    kDone,        // *moved > 0 bytes were read or written
    kWouldBlock,  // try again when the socket is ready (wants_write(): for writing)
    kEof,         // the peer will send nothing more (read only)
    kError,       // the connection is broken (reset, TLS failure)
  };
  virtual ~Transport() = default;

  virtual Io Read(char* buffer, size_t size, size_t* moved) = 0;
  virtual Io Write(const char* buffer, size_t size, size_t* moved) = 0;
  // After kWouldBlock: true if the operation waits for the socket to be writable (a
  // TLS read that must send a handshake message first), false if readable (a TLS
  // write that must receive one first; any plain read).
  virtual bool wants_write() const { return false; }
  virtual bool wants_read() const { return false; }
  // False while a TLS handshake is under way (or failed): nothing but handshake
  // messages can cross the connection yet, so no HTTP response can reach the client.
  // Always true for a plain socket.
  virtual bool handshake_complete() const { return true; }
  // Input already taken off the socket but not yet returned by Read (TLS records):
  // epoll will not report it, so the reader must ask.
  virtual bool HasBufferedInput() const { return false; }
  // Ends the sending direction: TLS close_notify, then the socket's FIN.
  virtual void ShutdownWrite() = 0;
};

// The socket itself (recv/send, MSG_NOSIGNAL).
std::unique_ptr<Transport> MakePlainTransport(int fd);
// TLS as a server, handshaking on first use. `context` is kept alive by the transport.
std::unique_ptr<Transport> MakeTlsTransport(int fd, std::shared_ptr<TlsContext> context);

}  // namespace sheetlog::api::http
