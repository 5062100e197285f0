#include "src/api/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "src/api/routes.h"
#include "src/app/app.h"

namespace sheetlog::api {

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr addr{};
  if (inet_pton(AF_INET, host.c_str(), &addr) == 1) {
    return (ntohl(addr.s_addr) >> 24) == 127;
  }
  return false;
}

ApiServer::ApiServer(App* app, ServerOptions options)
    : app_(app),
      options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()) {
  int threads = options_.threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_tcp_nodelay(true);  // replies are small: do not wait for delayed ACKs
  http_->set_keep_alive_max_count(100000);
  http_->set_keep_alive_timeout(
      2);  // bounds how long a stop waits on idle keep-alive connections
  http_->set_read_timeout(30);
  http_->set_write_timeout(30);
  // Bodies of JSON routes are checked against max_request_bytes before they are read
  // (pre-routing, from Content-Length); blob routes stream up to max_blob_bytes.
  http_->set_payload_max_length(static_cast<size_t>(options_.max_blob_bytes));
  const int64_t max_request = options_.max_request_bytes;
  http_->set_pre_routing_handler(
      [max_request](const httplib::Request& req, httplib::Response& res) {
        bool streams = req.path.rfind("/v1/blobs/", 0) == 0 ||
                       req.path.rfind("/v1/uploads/", 0) == 0;
        if (!streams && req.has_header("Content-Length")) {
          auto length = ParseInt(req.get_header_value("Content-Length"));
          if (length && *length > max_request) {
            WriteError(res, ApiError::PayloadTooLarge(max_request));
            // The body is refused unread: this connection cannot carry another request.
            res.set_header("Connection", "close");
            return httplib::Server::HandlerResponse::Handled;
          }
        }
        return httplib::Server::HandlerResponse::Unhandled;
      });
  http_->set_logger([](const httplib::Request& req, const httplib::Response& res) {
    spdlog::debug("{} {} -> {} ({} bytes in, {} out)", req.method, req.path, res.status,
                  req.body.size(), res.body.size());
  });
  http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    // Unmatched routes and httplib-level failures get api.md's error shape too.
    if (!res.body.empty()) return;
    if (res.status == 404) {
      WriteError(res, ApiError::NotFound("no route for " + req.method + " " + req.path));
    } else if (res.status == 413) {
      WriteError(res, ApiError(413, "PayloadTooLarge", "request body is too large"));
    } else if (res.status == 400) {
      WriteError(res, ApiError::Validation("malformed HTTP request"));
    }
  });
  RegisterRoutes();
}

ApiServer::~ApiServer() { Stop(); }

void ApiServer::RegisterRoutes() {
  router_ = std::make_unique<Router>(http_.get(), options_.token, app_->metrics());
  router_->set_call_observer([app = app_](const std::string& pattern, const Call& call) {
    RecordSheetUsage(*app, pattern, call);
  });
  RegisterOpsRoutes(*router_, *app_);
  RegisterSheetRoutes(*router_, *app_);
  RegisterAdminControlRoutes(*router_, *app_);
  RegisterBlobRoutes(*router_, *app_);
  RegisterSpreadsheetRoutes(*router_, *app_);
  RegisterAdminStateRoutes(*router_, *app_);
  RegisterMaintenanceRoutes(*router_, *app_);
  RegisterConsoleRoutes(*router_);
}

Status ApiServer::Bind() {
  if (!IsLoopbackHost(options_.host) && options_.token.empty()) {
    return FailedPrecondition("refusing to listen on non-loopback address " +
                              options_.host +
                              " without a token (--token or SHEETLOG_TOKEN)");
  }
  if (options_.port == 0) {
    bound_port_ = http_->bind_to_any_port(options_.host);
    if (bound_port_ <= 0) return Unavailable("cannot bind " + options_.host);
  } else {
    if (!http_->bind_to_port(options_.host, options_.port)) {
      return Unavailable("cannot bind " + options_.host + ":" +
                         std::to_string(options_.port) + " (address in use?)");
    }
    bound_port_ = options_.port;
  }
  return Status::OK();
}

void ApiServer::Serve() { http_->listen_after_bind(); }

void ApiServer::Stop() {
  if (http_) http_->stop();
}

}  // namespace sheetlog::api
