// Internal to src/api: the per-request context handed to route handlers, strict JSON
// readers, and the route table. Handlers throw ApiError; Router::Add wraps each one so
// that errors (and any stray exception) become api.md error responses and storage
// routes carry X-Request-Units.
#pragma once

#include <functional>
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

  void Get(const std::string& pattern, Handler h, RouteOptions o = {});
  void Post(const std::string& pattern, Handler h, RouteOptions o = {});
  void Put(const std::string& pattern, Handler h, RouteOptions o = {});
  void Delete(const std::string& pattern, Handler h, RouteOptions o = {});
  void Patch(const std::string& pattern, Handler h, RouteOptions o = {});
  void PutStreaming(const std::string& pattern, StreamingHandler h, RouteOptions o = {});

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
  void Add(const std::string& method, const std::string& pattern, Handler handler,
           StreamingHandler streaming, RouteOptions options);
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

// Writes `error` as the response.
void WriteError(http::Response& res, const ApiError& error);

// Parses a decimal integer query parameter strictly (digits, optional leading '-').
std::optional<int64_t> ParseInt(const std::string& text);

}  // namespace sheetlog::api
