// sheetlog's HTTP/1.1 server: one event-loop thread (epoll) accepts connections, reads
// and parses requests incrementally and writes responses; a bounded pool of worker
// threads runs the handlers. A connection costs a few hundred bytes while it waits, not
// a thread, so idle, slow and hostile clients do not take the server from anyone else:
// everything a client can make the server hold is bounded by an option
// (HttpServerOptions, each with its default), a request refused from its head is
// answered without reading its body, and no worker ever waits for a client to read.
// Every response is framed in one place (response_framing.h), a connection is freed
// only between turns of the event loop (nothing uses a closed one), and requests on one
// connection are answered in order, one at a time. Timeouts use the machine's monotonic
// clock, not the sheet clock, or HttpServerOptions::clock_ms.
// What each bound does to a client, and why the design rules out whole classes of
// defects: docs/architecture.md "The HTTP front end (src/api/http/)".
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "emulator/status.h"
#include "src/api/http/http_message.h"
#include "src/api/http/tls.h"

namespace sheetlog::api::http {

// The Retry-After (seconds) of every 503: the server's own (an overload, a streamed
// body's wait for a turn) and the routes' (router.cc, WriteError).
inline constexpr const char* kRetryAfterSeconds = "1";

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8787;  // 0 = any free port
  // Worker threads running handlers. Default: 64.
  int worker_threads = 64;
  // Requests received and waiting for a worker; beyond it 503. Default: 1024.
  size_t max_queued_requests = 1024;
  // Open connections. Default: 16384, and never more than the process's file limit
  // (RLIMIT_NOFILE, raised to its hard limit by Bind) minus 512 for the database and
  // blob files.
  size_t max_connections = 16384;
  size_t max_head_bytes = 16 << 10;   // request line + header fields. Default 16 KiB.
  size_t max_headers = 100;           // header fields. Default 100.
  int64_t header_timeout_ms = 10000;  // first byte of a head to its end. Default 10 s.
  int64_t idle_timeout_ms = 60000;    // keep-alive with no request. Default 60 s.
  int64_t body_timeout_ms = 30000;    // no body byte for this long. Default 30 s.
  // The slowest a body may arrive on average: it must be complete within
  // body_timeout_ms of the start of its reading plus one second for every
  // body_min_rate bytes received (bytes as sent, framing included). A client that
  // trickles a byte just inside body_timeout is cut off after body_timeout instead of
  // holding its connection (and, streamed, a worker) for ever; a 5 GiB upload at
  // 1 MiB/s is unaffected. 0 = no rate rule. Default: 1024 bytes/s.
  int64_t body_min_rate = 1024;
  // Streamed bodies read at once (each holds a worker while it is read); 0 = half the
  // worker threads (at least 1). Default: 0.
  int max_streamed_bodies = 0;
  int64_t write_timeout_ms = 30000;  // no response byte accepted. Default 30 s.
  // The slowest a client may read a response (not an event stream) on average: it must
  // have taken it within write_timeout_ms of its start plus one second for every
  // response_min_rate bytes sent, judged while bytes wait for it. 0 = no rate rule.
  // Default: 1024 bytes/s.
  int64_t response_min_rate = 1024;
  // Stop(): how long in-flight requests may take before their connections are closed.
  int64_t shutdown_grace_ms = 2000;
  // Monotonic milliseconds for every timeout of the server. Empty: the machine's
  // steady clock. Tests pass a manual clock; the server then re-reads it at least
  // every 50 ms of real time (the event loop, and a worker waiting for body bytes).
  std::function<int64_t()> clock_ms;
  // Unsent response bytes a content provider may queue per connection before it is
  // parked (a stream's bound is its own, StartStream). Default 1 MiB.
  size_t response_buffer_bytes = 1 << 20;
  // Request body bytes being buffered by all connections together (each is also held to
  // its route's limit); a body that would pass it is a 503 (retry) and the connection
  // closes. Default: 256 MiB.
  int64_t max_buffered_body_bytes = 256 << 20;
  // Set: every connection speaks TLS (tls.h) with this context, replaceable while
  // serving (HttpServer::ReplaceTls). Empty: plain HTTP. The handshake counts against
  // header_timeout_ms from the accept: a connection still in its handshake then is
  // closed without an answer (no 408 could get through), and one is closed to make
  // room for a new connection only when no connection is idle.
  std::shared_ptr<TlsContext> tls;
};

// What the application decides about a request from its head alone, on the event
// thread (quick, no I/O).
struct Admission {
  // Set: answer this without reading the body; the connection then closes if the
  // request had a body (it is left unread) or did not want keep-alive.
  std::unique_ptr<Response> refusal;
  // The handler reads the body itself, as a stream (ContentReader), up to
  // max_body_bytes as framed on the wire (no inflation); else the server buffers it,
  // decoded and inflated, up to max_body_bytes.
  bool streamed_body = false;
  int64_t max_body_bytes = 0;
  // Passed back to Handle (e.g. the index of the matched route).
  int route = -1;
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Called on the event thread once a request head is parsed; may fill
  // request.matches. Must not block.
  virtual Admission Admit(Request& request) = 0;
  // Serves an admitted request on a worker thread. `body` is set for streamed bodies
  // (Admission::streamed_body) and must not be used after Handle returns.
  virtual void Handle(Request& request, Response& response, int route,
                      const ContentReader* body) = 0;
  // The response for an error the server detects itself (malformed request, timeout,
  // overload): `status` and a message saying what to do.
  virtual Response ErrorResponse(int status, const std::string& message) = 0;
  // The 413 for a body over `limit` bytes (as admitted).
  virtual Response TooLargeResponse(int64_t limit) = 0;
};

class HttpServer {
 public:
  // `handler` must outlive the server.
  HttpServer(HttpServerOptions options, HttpHandler* handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens. Unavailable if the address cannot be bound.
  Status Bind();
  // Runs the event loop on the calling thread until Stop(), then returns once every
  // connection is closed and the workers are joined. REQUIRES: Bind() succeeded.
  void Serve();
  // Stops accepting, closes idle connections, lets in-flight requests finish for
  // shutdown_grace_ms, then closes the rest (their providers and streams are released).
  // Thread-safe, idempotent, returns at once (Serve returns when done).
  void Stop();
  // Connections accepted from now on use `tls` (a reloaded certificate); open ones keep
  // theirs. FailedPrecondition if the server was made without TLS. Thread-safe.
  Status ReplaceTls(std::shared_ptr<TlsContext> tls);

  int port() const { return bound_port_; }
  // Connections open now (for tests and metrics).
  size_t connection_count() const { return connection_count_.load(); }
  // The effective connection bound (max_connections after the file limit).
  size_t max_connections() const { return max_connections_; }

 private:
  class Impl;
  const bool impl_tls_enabled_;
  std::unique_ptr<Impl> impl_;
  int bound_port_ = 0;
  size_t max_connections_ = 0;
  std::atomic<size_t> connection_count_{0};
};

}  // namespace sheetlog::api::http
