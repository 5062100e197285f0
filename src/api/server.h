// The HTTP API of design/api.md. The only code in sheetlog that knows HTTP: it parses
// and validates requests, calls the core (src/log, src/snapshot, ...) and the emulated
// services, and turns results and errors into responses.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "emulator/status.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace sheetlog {
class App;
}

namespace sheetlog::api {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8787;  // 0 = any free port (see ApiServer::port())
  // Bearer token required on /v1/*; empty = no auth (loopback only).
  std::string token;
  // Largest JSON request body. Default: 1 MiB (api.md --max-request).
  int64_t max_request_bytes = 1 << 20;
  // Largest blob / upload body streamed to the blob store. Default: 5 GiB.
  int64_t max_blob_bytes = 5LL << 30;
  // Worker threads serving connections (each keep-alive connection holds one).
  int threads = 64;
};

class Router;

class ApiServer {
 public:
  ApiServer(App* app, ServerOptions options);
  ~ApiServer();

  // Binds the listening socket. Fails if the address is taken, or if the host is not
  // loopback and no token is set (api.md: refuse to serve unauthenticated off-host).
  Status Bind();
  // Serves until Stop(); returns when the listener has closed and in-flight requests
  // have finished. REQUIRES: Bind() succeeded.
  void Serve();
  // Stops accepting connections; in-flight requests finish. Thread-safe, idempotent.
  void Stop();

  // The bound port (useful with port 0).
  int port() const { return bound_port_; }

 private:
  void RegisterRoutes();

  App* app_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  // Route handlers refer to the router (auth, metrics): it lives as long as the server.
  std::unique_ptr<Router> router_;
  int bound_port_ = 0;
};

// True if `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHost(const std::string& host);

}  // namespace sheetlog::api
