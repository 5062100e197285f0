#include "src/api/router.h"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>
#include <strings.h>

#include <charconv>
#include <cmath>
#include <set>

#include "emulator/env/clock.h"
#include "src/api/json_input.h"

namespace sheetlog::api {

std::string Call::Path(size_t n) const {
  std::string capture = req.matches[n];
  Check(CheckUtf8(capture, "path segment '" + EscapeInvalidUtf8(capture) + "'"));
  return capture;
}

std::optional<std::string> Call::Query(const std::string& name) const {
  if (!req.has_param(name.c_str())) return std::nullopt;
  std::string value = req.get_param_value(name.c_str());
  Check(CheckUtf8(value, "query parameter '" + name + "'"));
  return value;
}

json Call::Body() const {
  if (req.body.empty()) return json::object();
  return Check(ParseJsonStrict(req.body));
}

void Call::Reply(int status, const json& body) {
  res.status = status;
  res.set_content(DumpJsonSafely(body), "application/json");
}

std::shared_ptr<DeferredReply> Call::Defer() {
  if (router_ == nullptr) throw std::logic_error("Call::Defer outside a router");
  if (!deferred_) deferred_.reset(new DeferredReply(*this, res.Defer()));
  return deferred_;
}

DeferredReply::DeferredReply(Call& call, std::shared_ptr<http::ResponseSender> sender)
    : router_(call.router_),
      route_index_(call.route_index_),
      started_micros_(call.started_micros_),
      meter_(call.meter),
      sender_(std::move(sender)) {
  request_.method = call.req.method;
  request_.path = call.req.path;
  request_.matches = call.req.matches;
  MutexLock lock(&router_->deferred_mu_);
  ++router_->deferred_alive_;
}

DeferredReply::~DeferredReply() {
  Fail(ApiError(500, "InternalError", "the request ended without a reply"));
  const Router* router = router_;
  MutexLock lock(&router->deferred_mu_);
  if (--router->deferred_alive_ == 0) router->deferred_done_.NotifyAll();
}

void DeferredReply::Reply(int status, const json& body) {
  {
    MutexLock lock(&mu_);
    if (sent_) return;
    sent_ = true;
  }
  response_.status = status;
  response_.set_content(DumpJsonSafely(body), "application/json");
  Send();
}

void DeferredReply::Fail(const ApiError& error) {
  {
    MutexLock lock(&mu_);
    if (sent_) return;
    sent_ = true;
  }
  WriteError(response_, error);
  Send();
}

void DeferredReply::Complete(const std::function<void()>& reply) {
  try {
    reply();
  } catch (...) {
    Fail(CaughtError(request_));
  }
}

void DeferredReply::Send() {
  Call call(request_, response_);
  call.meter = meter_;
  router_->Finish(router_->routes_.at(static_cast<size_t>(route_index_)), call,
                  started_micros_);
  sender_->Send(std::move(response_));
}

void Router::WaitForDeferredReplies() const {
  MutexLock lock(&deferred_mu_);
  while (deferred_alive_ != 0) deferred_done_.Wait(deferred_mu_);
}

FieldReader::FieldReader(const json& value, std::string what)
    : value_(value), what_(std::move(what)) {
  if (!value_.is_object()) throw ApiError::Validation(what_ + " must be a JSON object");
}

bool FieldReader::Has(const std::string& field) const { return value_.contains(field); }

std::optional<int64_t> FieldReader::Int(const std::string& field) {
  read_.insert(field);
  auto it = value_.find(field);
  if (it == value_.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_unsigned()) {
    throw ApiError::Validation("field '" + field + "' in " + what_ + " is too large");
  }
  if (it->is_number_float()) {
    double d = it->get<double>();
    // 5.0 is accepted as 5 (JSON has one number type); 5.5 is not an integer.
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9007199254740992.0) {
      return static_cast<int64_t>(d);
    }
  }
  throw ApiError::Validation("field '" + field + "' in " + what_ + " must be an integer");
}

std::optional<std::string> FieldReader::String(const std::string& field) {
  read_.insert(field);
  auto it = value_.find(field);
  if (it == value_.end()) return std::nullopt;
  if (!it->is_string()) {
    throw ApiError::Validation("field '" + field + "' in " + what_ + " must be a string");
  }
  return it->get<std::string>();
}

std::optional<bool> FieldReader::Bool(const std::string& field) {
  read_.insert(field);
  auto it = value_.find(field);
  if (it == value_.end()) return std::nullopt;
  if (!it->is_boolean()) {
    throw ApiError::Validation("field '" + field + "' in " + what_ +
                               " must be a boolean");
  }
  return it->get<bool>();
}

std::optional<json> FieldReader::Any(const std::string& field) {
  read_.insert(field);
  auto it = value_.find(field);
  if (it == value_.end()) return std::nullopt;
  return *it;
}

void FieldReader::Finish() const {
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (!read_.count(it.key())) {
      throw ApiError::Validation("unknown field '" + it.key() + "' in " + what_);
    }
  }
}

ApiError CaughtError(const http::Request& request) {
  try {
    throw;
  } catch (const ApiError& e) {
    return e;
  } catch (const std::exception& e) {
    spdlog::error("{} {} failed: {}", request.method, request.path, e.what());
    return ApiError(500, "InternalError", std::string("unexpected failure: ") + e.what());
  } catch (...) {
    spdlog::error("{} {} failed: an exception of unknown type", request.method,
                  request.path);
    return ApiError(500, "InternalError", "unexpected failure");
  }
}

void WriteError(http::Response& res, const ApiError& error) {
  res.status = error.http_status();
  // What the answer leaves out (a store's location, its driver's words) goes to the
  // operator's log with it.
  if (!error.detail().empty()) {
    spdlog::warn("answered {} {}: {} [{}]", error.http_status(), error.code(),
                 error.what(), error.detail());
  }
  // api.md: a 503 is safe to retry; say when, as the server's own 503s do
  // (http_server.cc, RespondError).
  if (error.http_status() == 503) res.set_header("Retry-After", http::kRetryAfterSeconds);
  // Safely: the message may quote client bytes that are not UTF-8.
  res.set_content(DumpJsonSafely(error.ToJson()), "application/json");
}

std::optional<int64_t> ParseInt(const std::string& text) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

namespace {
std::string FormatUnits(double units) {
  // Units are multiples of 0.5: print 1, 1.5, 2 ...
  char buf[32];
  if (units == std::floor(units)) {
    std::snprintf(buf, sizeof(buf), "%.0f", units);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f", units);
  }
  return buf;
}
}  // namespace

Router::Router(std::string token, MetricsRegistry* metrics, BodyLimits limits)
    : limits_(limits), token_(std::move(token)) {
  if (metrics != nullptr) {
    requests_ = &metrics->Counter("sheetlog_http_requests_total",
                                  "HTTP requests by route pattern, method and status.",
                                  {"route", "method", "status"});
    latency_ =
        &metrics->Histogram("sheetlog_http_request_duration_seconds",
                            "HTTP request latency by route pattern and method.",
                            {"route", "method"}, MetricsRegistry::LatencyBuckets());
    units_ = &metrics->Counter(
        "sheetlog_request_units_total",
        "DynamoDB request units consumed, by table and kind (rru, wru).",
        {"table", "kind"});
  }
}

bool Router::Authorized(const http::Request& req) const {
  if (token_.empty()) return true;
  // credentials = auth-scheme 1*SP token68 (RFC 9110 11.4); the scheme is
  // case-insensitive ("bearer" is "Bearer").
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() ||
      strncasecmp(header.data(), kScheme.data(), kScheme.size()) != 0 ||
      header[kScheme.size()] != ' ') {
    return false;
  }
  const size_t credentials = header.find_first_not_of(' ', kScheme.size());
  if (credentials == std::string::npos || header.size() - credentials != token_.size()) {
    return false;
  }
  return CRYPTO_memcmp(header.data() + credentials, token_.data(), token_.size()) == 0;
}

http::Admission Router::Admit(http::Request& request) const {
  http::Admission admission;
  if (request.method == "OPTIONS") {
    admission.refusal = std::make_unique<http::Response>(Options(request));
    return admission;
  }
  // HEAD is GET without the body (the server drops it).
  const std::string& method =
      request.method == "HEAD" ? std::string("GET") : request.method;
  for (size_t i = 0; i < routes_.size(); ++i) {
    const Route& route = routes_[i];
    if (route.method != method || !route.matcher.Match(request.path, &request.matches)) {
      continue;
    }
    if (route.options.auth && !Authorized(request)) {
      admission.refusal = std::make_unique<http::Response>();
      WriteError(
          *admission.refusal,
          ApiError::Unauthorized(request.has_header("Authorization")
                                     ? "wrong bearer token"
                                     : "missing 'Authorization: Bearer <token>' header"));
      CountRequest(route, method, 401, -1, nullptr);
      return admission;
    }
    admission.route = static_cast<int>(i);
    admission.streamed_body = static_cast<bool>(route.streaming);
    admission.max_body_bytes =
        admission.streamed_body ? limits_.stream_bytes : limits_.json_bytes;
    return admission;
  }
  request.matches.clear();
  admission.refusal = std::make_unique<http::Response>();
  WriteError(*admission.refusal,
             ApiError::NotFound("no route for " + request.method + " " + request.path));
  return admission;
}

http::Response Router::Options(http::Request& request) const {
  // The methods of the routes at this path ("*": the server's), answered without the
  // token: which methods exist is no secret. No CORS headers: another origin's page
  // gets no permission from this answer.
  std::set<std::string> methods;
  for (const Route& route : routes_) {
    if (request.path == "*" || route.matcher.Match(request.path, &request.matches)) {
      methods.insert(route.method);
    }
  }
  request.matches.clear();
  http::Response response;
  if (methods.empty()) {
    WriteError(response, ApiError::NotFound("no route for " + request.path));
    return response;
  }
  if (methods.count("GET")) methods.insert("HEAD");
  methods.insert("OPTIONS");
  std::string allow;
  for (const std::string& method : methods) {
    if (!allow.empty()) allow += ", ";
    allow += method;
  }
  response.status = 204;
  response.set_header("Allow", allow);
  return response;
}

void Router::CountRequest(const Route& route, const std::string& method, int status,
                          int64_t started_micros, const UnitMeter* meter) const {
  if (requests_ == nullptr) return;
  requests_->Add({route.pattern, method, std::to_string(status)});
  if (started_micros >= 0) {
    latency_->Observe({route.pattern, method},
                      (SystemClock::Default()->NowMicros() - started_micros) / 1e6);
  }
  if (meter != nullptr) {
    for (const auto& [table, units] : meter->by_table) {
      if (units.first > 0) units_->Add({table, "rru"}, units.first);
      if (units.second > 0) units_->Add({table, "wru"}, units.second);
    }
  }
}

void Router::Handle(int index, http::Request& req, http::Response& res,
                    const http::ContentReader* body) const {
  const Route& route = routes_.at(static_cast<size_t>(index));
  // Latency is real time on purpose: it measures the server, whatever the sheet clock.
  const int64_t started = SystemClock::Default()->NowMicros();
  Call call(req, res);
  call.router_ = this;
  call.route_index_ = index;
  call.started_micros_ = started;
  try {
    if (route.streaming) {
      static const http::ContentReader kNoBody = [](http::ContentReceiver) {
        return true;
      };
      route.streaming(call, body != nullptr ? *body : kNoBody);
    } else {
      route.handler(call);
    }
  } catch (...) {
    const ApiError error = CaughtError(req);
    if (call.deferred_) {
      call.deferred_->Fail(error);
      return;
    }
    WriteError(res, error);
  }
  // A deferred reply is counted when it is sent.
  if (call.deferred_) return;
  Finish(route, call, started);
}

void Router::Finish(const Route& route, const Call& call, int64_t started) const {
  http::Response& res = call.res;
  if (route.options.storage) {
    res.set_header("X-Request-Units", "wru=" + FormatUnits(call.meter.write_units) +
                                          ", rru=" + FormatUnits(call.meter.read_units));
  }
  CountRequest(route, route.method, res.status, started, &call.meter);
  if (observer_) observer_(route.pattern, call);
}

void Router::Add(const std::string& method, const std::string& pattern, Handler handler,
                 RouteOptions options) {
  routes_.push_back(Route{method, pattern, RoutePattern(pattern), std::move(handler),
                          nullptr, options});
}

void Router::AddStreaming(const std::string& method, const std::string& pattern,
                          StreamingHandler handler, RouteOptions options) {
  routes_.push_back(Route{method, pattern, RoutePattern(pattern), nullptr,
                          std::move(handler), options});
}

}  // namespace sheetlog::api
