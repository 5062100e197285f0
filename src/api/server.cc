#include "src/api/server.h"

#include <arpa/inet.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "src/api/admin_control_routes.h"
#include "src/api/blob_routes.h"
#include "src/api/console_routes.h"
#include "src/api/entry_json.h"
#include "src/api/event_streams.h"
#include "src/api/inspect_routes.h"
#include "src/api/live_update_routes.h"
#include "src/api/maintenance_routes.h"
#include "src/api/ops_routes.h"
#include "src/api/pipeline_routes.h"
#include "src/api/request_policy.h"
#include "src/api/sheet_routes.h"
#include "src/api/spreadsheet_routes.h"
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
    : app_(app), options_(std::move(options)) {
  http::HttpServerOptions http_options = options_.http;
  http_options.host = options_.host;
  http_options.port = options_.port;
  http_options.worker_threads = options_.threads;
  if (options_.tls_cert_file.empty() != options_.tls_key_file.empty()) {
    tls_error_ = InvalidArgument(
        "give both --tls-cert and --tls-key (a certificate chain and its private key), "
        "or neither");
  } else if (!options_.tls_cert_file.empty()) {
    Result<std::shared_ptr<http::TlsContext>> tls =
        http::TlsContext::Load(options_.tls_cert_file, options_.tls_key_file);
    if (tls.ok()) {
      http_options.tls = *tls;
    } else {
      tls_error_ = tls.status();
    }
  }
  http::HttpHandler* handler = this;  // the base is private: convert here
  http_ = std::make_shared<http::HttpServer>(http_options, handler);
  std::weak_ptr<http::HttpServer> weak = http_;
  app_->metrics()->AddCollector([weak](MetricsRegistry& metrics) {
    std::shared_ptr<http::HttpServer> http = weak.lock();
    if (!http) return;
    metrics.Gauge("sheetlog_http_connections", "Open HTTP connections.")
        .Set({}, static_cast<double>(http->connection_count()));
    metrics
        .Gauge("sheetlog_http_max_connections",
               "The bound on open HTTP connections (--max-connections).")
        .Set({}, static_cast<double>(http->max_connections()));
  });
  policy_ = std::make_unique<RequestPolicy>(options_.host, options_.allowed_hosts);
  RegisterRoutes();
}

ApiServer::~ApiServer() { Stop(); }

void ApiServer::RegisterRoutes() {
  router_ = std::make_unique<Router>(
      options_.token, app_->metrics(),
      BodyLimits{options_.max_request_bytes, options_.max_blob_bytes});
  router_->set_call_observer(
      [usage = app_->usage()](const std::string& pattern, const Call& call) {
        RecordSheetUsage(usage, pattern, call);
      });
  App& app = *app_;
  entries_ = std::make_unique<EntryPresenter>(app.blobs(), app.uploads(), app.clock());
  events_ = std::make_unique<EventStreams>(
      app.log(), app.changes(), app.pipeline_events(), app.clock(), entries_.get());
  const TestControls controls{app.options().enable_faults, app.options().allow_reset};
  route_groups_.push_back(std::make_unique<OpsRoutes>(
      app.metrics(), [&app] { return app.ready(); }, app.schema_version(),
      [&app] { return app.Health(); }));
  route_groups_.push_back(std::make_unique<SheetRoutes>(
      app.log(), app.uploads(), app.blobs(), app.head_views(), entries_.get(),
      [&app] { app.PurgeDeletedSheets(); }));
  route_groups_.push_back(
      std::make_unique<AdminControlRoutes>(app.clock(), app.manual_clock(), app.faults(),
                                           controls, [&app] { return app.Reset(); }));
  route_groups_.push_back(std::make_unique<BlobRoutes>(
      router_.get(), app.blobs(), app.uploads(), app.sweeper(), app.purger()));
  route_groups_.push_back(std::make_unique<SpreadsheetRoutes>(
      app.log(), app.blobs(), app.head_views(), entries_.get()));
  route_groups_.push_back(std::make_unique<PipelineRoutes>(
      app.queues(), app.runtime(), app.feed(), app.log(), app.blobs(), app.uploads(),
      app.clock(), [&app] { return app.StreamConsumers(); }, kSnapshotQueue));
  route_groups_.push_back(std::make_unique<MaintenanceRoutes>(
      app.log(), app.blobs(), app.clock(), app.usage(), app.options().prices,
      [&app](const std::optional<std::string>& sheet, int64_t stall_after_micros) {
        return app.PipelineViolations(sheet, stall_after_micros);
      },
      [&app](const std::string& to) { return app.Backup(to); },
      [&app] { return app.PendingExplainer(); }));
  route_groups_.push_back(std::make_unique<InspectRoutes>(app.queues(), app.runtime(),
                                                          app.tables(), controls));
  route_groups_.push_back(std::make_unique<LiveUpdateRoutes>(
      app.log(), app.pipeline_events(), events_.get()));
  route_groups_.push_back(std::make_unique<ConsoleRoutes>());
  for (const std::unique_ptr<RouteGroup>& group : route_groups_) group->AddTo(*router_);
}

Status ApiServer::Bind() {
  if (!tls_error_.ok()) return tls_error_;
  const std::string& token = options_.token;
  if (!token.empty() && std::all_of(token.begin(), token.end(), [](unsigned char c) {
        return std::isspace(c) != 0;
      })) {
    return InvalidArgument(
        "the token is blank: give --token (or SHEETLOG_TOKEN) a secret of visible "
        "characters, or leave it unset on a loopback address");
  }
  if (!IsLoopbackHost(options_.host) && token.empty()) {
    return FailedPrecondition("refusing to listen on non-loopback address " +
                              options_.host +
                              " without a token (--token or SHEETLOG_TOKEN)");
  }
  if (Status bound = http_->Bind(); !bound.ok()) return bound;
  bound_port_ = http_->port();
  policy_->set_port(bound_port_);
  spdlog::info("HTTP: at most {} connections, {} worker threads",
               http_->max_connections(), options_.threads);
  return Status::OK();
}

Status ApiServer::ReloadTls() {
  if (!tls()) return FailedPrecondition("the server was started without TLS");
  Result<std::shared_ptr<http::TlsContext>> loaded =
      http::TlsContext::Load(options_.tls_cert_file, options_.tls_key_file);
  if (!loaded.ok()) return loaded.status();
  return http_->ReplaceTls(*loaded);
}

void ApiServer::Serve() {
  events_->Start();
  http_->Serve();
  // Appends reply from the thread that commits them: let the last ones finish while
  // the App they use is certainly alive.
  router_->WaitForDeferredReplies();
  // The event streams' pump uses the App (its clock, its log): stop it now, while the
  // App is certainly alive, not whenever this object is destroyed.
  events_->Stop();
}

void ApiServer::Stop() {
  if (http_) http_->Stop();
}

http::Admission ApiServer::Admit(http::Request& request) {
  if (std::optional<std::string> refused = policy_->Check(request)) {
    http::Admission admission;
    admission.refusal = std::make_unique<http::Response>();
    WriteError(*admission.refusal, ApiError::Forbidden(*refused));
    return admission;
  }
  return router_->Admit(request);
}

void ApiServer::Handle(http::Request& request, http::Response& response, int route,
                       const http::ContentReader* body) {
  router_->Handle(route, request, response, body);
  if (response.deferred) {
    spdlog::debug("{} {} -> answered later ({} bytes in)", request.method, request.path,
                  request.body.size());
    return;
  }
  spdlog::debug("{} {} -> {} ({} bytes in, {} out)", request.method, request.path,
                response.status, request.body.size(), response.body.size());
}

http::Response ApiServer::ErrorResponse(int status, const std::string& message) {
  const char* code = "InternalError";
  switch (status) {
    case 400:
      code = "ValidationError";
      break;
    case 401:
      code = "Unauthorized";
      break;
    case 403:
      code = "Forbidden";
      break;
    case 404:
      code = "NotFound";
      break;
    case 408:
      code = "RequestTimeout";
      break;
    case 415:
      code = "UnsupportedMediaType";
      break;
    case 431:
      code = "RequestHeaderFieldsTooLarge";
      break;
    case 501:
      code = "NotImplemented";
      break;
    case 503:
      code = "Unavailable";
      break;
    case 505:
      code = "HTTPVersionNotSupported";
      break;
    default:
      break;
  }
  http::Response response;
  WriteError(response, ApiError(status, code, message));
  return response;
}

http::Response ApiServer::TooLargeResponse(int64_t limit) {
  http::Response response;
  WriteError(response, ApiError::PayloadTooLarge(limit));
  return response;
}

}  // namespace sheetlog::api
