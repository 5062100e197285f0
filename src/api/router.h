// Internal to src/api: the per-request context handed to route handlers, strict JSON
// readers, and the route table. Route groups (one api.md section each, e.g.
// sheet_routes.h) are classes constructed with the services they use; their handlers
// are named methods, added from a table of {method, pattern, member} (AddRoutes).
// Handlers throw ApiError; the router turns what a handler (or a deferred reply's
// completion) throws into the api.md error response in one place (CaughtError), and
// storage routes carry X-Request-Units.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/metrics/metrics.h"
#include "emulator/table/request_units.h"
#include "src/api/api_error.h"
#include "src/api/http/http_server.h"
#include "src/api/route_pattern.h"

namespace sheetlog::api {

using json = nlohmann::json;

class Router;
class DeferredReply;

// One request being served.
class Call {
 public:
  Call(const http::Request& req, http::Response& res) : req(req), res(res) {}

  const http::Request& req;
  http::Response& res;
  UnitMeter meter;  // request units consumed by this request

  // The n-th capture of the route's pattern (1-based). ValidationError if it is not
  // valid UTF-8 (e.g. /v1/sheets/%FF%FE).
  std::string Path(size_t n) const;
  // A query parameter; ValidationError if its value is not valid UTF-8.
  std::optional<std::string> Query(const std::string& name) const;
  // The body parsed as JSON by ParseJsonStrict (json_input.h): ValidationError for
  // malformed JSON, invalid UTF-8, nesting deeper than kMaxJsonDepth, or a number
  // beyond a double. An empty body is {}.
  json Body() const;

  void Reply(int status, const json& body);
  void NoContent() { res.status = 204; }

  // For a handler that answers after it returns (e.g. once a write it queued has
  // committed): the reply is sent, and the request counted, through the returned
  // object; `res` and `meter` are no longer used. Only for buffered-body routes.
  std::shared_ptr<DeferredReply> Defer();

 private:
  friend class Router;
  friend class DeferredReply;
  const Router* router_ = nullptr;
  int route_index_ = -1;  // the Router's route being served
  int64_t started_micros_ = 0;
  std::shared_ptr<DeferredReply> deferred_;
};

// A reply sent after the handler returned (Call::Defer), from any thread.
//
// Contract: Reply or Fail once (later calls are ignored); Complete runs a function that
// replies and turns what it throws into the error reply, as a handler's throw would.
// Dropped without a reply, it sends a 500. The request's units and metrics are
// recorded when the reply is sent. The router outlives every DeferredReply
// (Router::WaitForDeferredReplies).
// Thread-safe: Reply/Fail may race (from the committing thread and a timeout); the
// first wins.
class DeferredReply {
 public:
  ~DeferredReply();
  DeferredReply(const DeferredReply&) = delete;
  DeferredReply& operator=(const DeferredReply&) = delete;

  // The request's units: pass to the work whose completion this reply waits for.
  UnitMeter* meter() { return &meter_; }
  void Reply(int status, const json& body);
  void Fail(const ApiError& error);
  void Complete(const std::function<void()>& reply);

 private:
  friend class Call;
  DeferredReply(Call& call, std::shared_ptr<http::ResponseSender> sender);
  void Send();

  const Router* router_;
  int route_index_;
  int64_t started_micros_;
  http::Request request_;  // what the observer reads: method, path, matches
  http::Response response_;
  UnitMeter meter_;
  std::shared_ptr<http::ResponseSender> sender_;
  Mutex mu_;
  bool sent_ GUARDED_BY(mu_) = false;
};

// Reads fields of a JSON object strictly: wrong types are ValidationError naming the
// field, and Finish() rejects any field that was not read.
class FieldReader {
 public:
  // REQUIRES nothing: a non-object `value` is a ValidationError naming `what`.
  FieldReader(const json& value, std::string what);

  bool Has(const std::string& field) const;
  std::optional<int64_t> Int(const std::string& field);
  int64_t Int(const std::string& field, int64_t fallback) {
    return Int(field).value_or(fallback);
  }
  std::optional<std::string> String(const std::string& field);
  std::optional<bool> Bool(const std::string& field);
  // Any JSON value, including null. nullopt if absent.
  std::optional<json> Any(const std::string& field);
  // Throws ValidationError("unknown field 'x' in <what>") for fields never read.
  void Finish() const;

 private:
  const json& value_;
  std::string what_;
  std::set<std::string> read_;
};

struct RouteOptions {
  bool auth = true;     // needs the bearer token (when the server has one)
  bool storage = true;  // reports X-Request-Units
};

using Handler = std::function<void(Call&)>;
// A handler that reads the request body itself, in pieces (blob uploads).
using StreamingHandler = std::function<void(Call&, const http::ContentReader&)>;

// Body limits the router admits requests with.
struct BodyLimits {
  int64_t json_bytes = 1 << 20;      // buffered bodies (--max-request), after inflation
  int64_t stream_bytes = 5LL << 30;  // streamed bodies (blob uploads), as sent
};

// Routes are registered by one thread before serving; afterwards Admit, Handle and the
// deferred replies run on any thread (thread-safe).
class Router {
 public:
  // `metrics` (may be null) receives request counts and latencies by route pattern.
  Router(std::string token, MetricsRegistry* metrics, BodyLimits limits = {});

  // Routes are tried in the order added; the first whose method and pattern match
  // serves the request. Usually called through AddRoutes.
  void Add(const std::string& method, const std::string& pattern, Handler handler,
           RouteOptions options = {});
  // A route whose handler reads the body itself. A handler that refuses the request
  // before reading its body (bad signature) leaves it unread; the server then closes
  // the connection rather than read it.
  void AddStreaming(const std::string& method, const std::string& pattern,
                    StreamingHandler handler, RouteOptions options = {});

  // On the server's event thread, from the request head alone: finds the route (fills
  // request.matches), checks the token, and says how the body is read and its limit.
  // No route is a 404 refusal, a missing or wrong token a 401 refusal: either is
  // answered without reading the body.
  http::Admission Admit(http::Request& request) const;
  // On a worker: runs the admitted route's handler with error mapping (ApiError and
  // any exception become api.md error responses), request units and metrics. `body`
  // is the streamed body of a streaming route (null: none was sent).
  void Handle(int route, http::Request& request, http::Response& response,
              const http::ContentReader* body) const;
  // True if the request carries the right bearer token (or none is configured).
  bool Authorized(const http::Request& req) const;
  // The answer to OPTIONS: 204 with Allow (the methods of the routes at the path, or of
  // the whole server for "*"), or 404 if no route has the path.
  http::Response Options(http::Request& request) const;
  // Blocks until every DeferredReply is gone (sent and released). Call after the HTTP
  // server stopped, while what the handlers' completions use is still alive.
  void WaitForDeferredReplies() const;

  // Called after every request with its route pattern, once the response is written
  // (for per-sheet accounting). Set before routes are added.
  using CallObserver = std::function<void(const std::string& pattern, const Call& call)>;
  void set_call_observer(CallObserver observer) { observer_ = std::move(observer); }

 private:
  struct Route {
    std::string method;
    std::string pattern;
    RoutePattern matcher;
    Handler handler;             // buffered body
    StreamingHandler streaming;  // or streamed body
    RouteOptions options;
  };
  void CountRequest(const Route& route, const std::string& method, int status,
                    int64_t started_micros, const UnitMeter* meter) const;
  // After a handler's reply: X-Request-Units, metrics, the call observer.
  void Finish(const Route& route, const Call& call, int64_t started_micros) const;
  friend class DeferredReply;

  std::vector<Route> routes_;
  BodyLimits limits_;
  std::string token_;
  MetricFamily* requests_ = nullptr;
  MetricFamily* latency_ = nullptr;
  MetricFamily* units_ = nullptr;
  CallObserver observer_;
  mutable Mutex deferred_mu_;
  mutable CondVar deferred_done_;
  mutable int deferred_alive_ GUARDED_BY(deferred_mu_) = 0;
};

// One row of a route group's table, as Alternator maps each operation to a method of
// its executor: {"GET", "/v1/sheets", &SheetRoutes::ListSheets} (options default to
// a storage route behind the token).
template <typename Group>
struct RouteSpec {
  using Buffered = void (Group::*)(Call&);
  using Streamed = void (Group::*)(Call&, const http::ContentReader&);

  RouteSpec(const char* method, const char* pattern, Buffered handler,
            RouteOptions options = {})
      : method(method), pattern(pattern), buffered(handler), options(options) {}
  RouteSpec(const char* method, const char* pattern, Streamed handler,
            RouteOptions options = {})
      : method(method), pattern(pattern), streamed(handler), options(options) {}

  const char* method;
  const char* pattern;
  Buffered buffered = nullptr;
  Streamed streamed = nullptr;
  RouteOptions options;
};

// Adds a group's table to `router`, in order. `group` must outlive the router's use of
// it (ApiServer owns both and stops serving before either goes).
template <typename Group>
void AddRoutes(Router& router, Group* group,
               std::initializer_list<RouteSpec<Group>> table) {
  for (const RouteSpec<Group>& spec : table) {
    if (spec.streamed != nullptr) {
      router.AddStreaming(
          spec.method, spec.pattern,
          [group, handler = spec.streamed](Call& call, const http::ContentReader& body) {
            (group->*handler)(call, body);
          },
          spec.options);
    } else {
      router.Add(
          spec.method, spec.pattern,
          [group, handler = spec.buffered](Call& call) { (group->*handler)(call); },
          spec.options);
    }
  }
}

// A group of routes: constructed with exactly the services it uses, it adds its table
// to the router. Handlers run on any worker thread at once, so a group keeps no
// mutable state of its own (each is thread-safe as long as its services are).
class RouteGroup {
 public:
  virtual ~RouteGroup() = default;
  virtual void AddTo(Router& router) = 0;
};

// Route options shared by the groups besides the default (token, X-Request-Units):
// behind the token without units (admin and streaming routes), and open (health,
// metrics, the console's files).
inline constexpr RouteOptions kUnmeteredRoute{/*auth=*/true, /*storage=*/false};
inline constexpr RouteOptions kOpenRoute{/*auth=*/false, /*storage=*/false};

// Writes `error` as the response.
void WriteError(http::Response& res, const ApiError& error);

// The one translation of a thrown error into the reply's error, for use inside a
// catch block: an ApiError as thrown; anything else a 500 InternalError saying what
// failed (logged with the request's method and path, never a stack dump).
ApiError CaughtError(const http::Request& request);

// Parses a decimal integer query parameter strictly (digits, optional leading '-').
std::optional<int64_t> ParseInt(const std::string& text);

}  // namespace sheetlog::api
