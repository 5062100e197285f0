// The HTTP API of design/api.md. The only code in sheetlog that knows HTTP: it parses
// and validates requests, calls the core (src/log, src/snapshot, ...) and the emulated
// services, and turns results and errors into responses. Requests arrive through
// sheetlog's own event-driven HTTP/1.1 server (src/api/http/http_server.h, which states
// every bound a client meets); this class admits them (host and origin checks, route,
// token, body limit) and runs their routes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "src/api/http/http_server.h"

namespace sheetlog {
class App;
}

namespace sheetlog::api {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8787;  // 0 = any free port (see ApiServer::port())
  // Bearer token required on /v1/*; empty = no auth (loopback only). A token that is
  // blank (only whitespace) is refused by Bind.
  std::string token;
  // Largest JSON request body, after gzip inflation, however it is framed. Default:
  // 1 MiB (api.md --max-request).
  int64_t max_request_bytes = 1 << 20;
  // Largest blob / upload body streamed to the blob store. Default: 5 GiB.
  int64_t max_blob_bytes = 5LL << 30;
  // Worker threads running handlers (connections do not hold one). Default: 64.
  int threads = 64;
  // Host names (or name:port) accepted in the Host header besides this server's IP
  // addresses and localhost (--allowed-host; see request_policy.h).
  std::vector<std::string> allowed_hosts;
  // TLS (--tls-cert/--tls-key): both set = every connection speaks TLS 1.2+ with this
  // PEM certificate chain and key (http/tls.h); both empty = plain HTTP. Read when the
  // server is made and again by ReloadTls.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Connection bounds and timeouts (see http_server.h for each default).
  http::HttpServerOptions http;
};

class Router;
class RequestPolicy;
class RouteGroup;
class EntryPresenter;
class EventStreams;

class ApiServer : private http::HttpHandler {
 public:
  ApiServer(App* app, ServerOptions options);
  ~ApiServer() override;

  // Binds the listening socket. Fails if the address is taken, if the host is not
  // loopback and no token is set (api.md: refuse to serve unauthenticated off-host), if
  // the token is blank, or if only one of the TLS files is given or they do not load
  // (the message names the file).
  Status Bind();
  // Serves until Stop(); returns when the listener has closed and in-flight requests
  // have finished (or were cut off after the shutdown grace). REQUIRES: Bind() succeeded.
  void Serve();
  // Stops accepting connections; in-flight requests get the shutdown grace (2 s by
  // default) to finish. Thread-safe, idempotent, returns at once.
  void Stop();

  // Reads ServerOptions' certificate and key files again (SIGHUP) for the connections
  // accepted from now on; on an error the current ones stay in use. FailedPrecondition
  // if the server was made without TLS. Thread-safe.
  Status ReloadTls();
  // True if the server speaks TLS.
  bool tls() const { return !options_.tls_cert_file.empty(); }

  // The bound port (useful with port 0).
  int port() const { return bound_port_; }

 private:
  // Builds the route groups, each with the services of app_ it uses, and adds their
  // tables to the router.
  void RegisterRoutes();
  // http::HttpHandler
  http::Admission Admit(http::Request& request) override;
  void Handle(http::Request& request, http::Response& response, int route,
              const http::ContentReader* body) override;
  http::Response ErrorResponse(int status, const std::string& message) override;
  http::Response TooLargeResponse(int64_t limit) override;

  App* app_;
  ServerOptions options_;
  // What the route groups use beside app_'s services, and the groups themselves:
  // declared before the server and the router, so they outlive every handler call.
  std::unique_ptr<EntryPresenter> entries_;
  std::unique_ptr<EventStreams> events_;  // started by Serve, stopped when it returns
  std::vector<std::unique_ptr<RouteGroup>> route_groups_;
  // Shared with the metrics collector, which may outlive this object.
  std::shared_ptr<http::HttpServer> http_;
  // Route handlers refer to the router (auth, metrics): it lives as long as the server.
  std::unique_ptr<Router> router_;
  std::unique_ptr<RequestPolicy> policy_;
  int bound_port_ = 0;
  // Why the TLS files given could not be loaded (Bind returns it); OK otherwise.
  Status tls_error_;
};

// True if `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHost(const std::string& host);

}  // namespace sheetlog::api
