#include "src/api/router.h"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>

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

void WriteError(httplib::Response& res, const ApiError& error) {
  res.status = error.http_status();
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

Router::Router(httplib::Server* http, std::string token, MetricsRegistry* metrics)
    : http_(http), token_(std::move(token)) {
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

bool Router::Authorized(const httplib::Request& req) const {
  if (token_.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (header.size() != prefix.size() + token_.size() ||
      header.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return CRYPTO_memcmp(header.data() + prefix.size(), token_.data(), token_.size()) == 0;
}

httplib::Server::Handler Router::Wrap(const std::string& method,
                                      const std::string& pattern, Handler handler,
                                      RouteOptions options) const {
  return [this, method, pattern, handler = std::move(handler), options](
             const httplib::Request& req, httplib::Response& res) {
    // Latency is real time on purpose: it measures the server, whatever the sheet clock.
    const int64_t started = SystemClock::Default()->NowMicros();
    Call call(req, res);
    try {
      if (options.auth && !Authorized(req)) {
        throw ApiError::Unauthorized(
            req.has_header("Authorization")
                ? "wrong bearer token"
                : "missing 'Authorization: Bearer <token>' header");
      }
      handler(call);
    } catch (const ApiError& e) {
      WriteError(res, e);
    } catch (const std::exception& e) {
      spdlog::error("{} {} failed: {}", req.method, req.path, e.what());
      WriteError(res, ApiError(500, "InternalError",
                               std::string("unexpected failure: ") + e.what()));
    }
    if (options.storage) {
      res.set_header("X-Request-Units",
                     "wru=" + FormatUnits(call.meter.write_units) +
                         ", rru=" + FormatUnits(call.meter.read_units));
    }
    if (requests_ != nullptr) {
      requests_->Add({pattern, method, std::to_string(res.status)});
      latency_->Observe({pattern, method},
                        (SystemClock::Default()->NowMicros() - started) / 1e6);
      for (const auto& [table, units] : call.meter.by_table) {
        if (units.first > 0) units_->Add({table, "rru"}, units.first);
        if (units.second > 0) units_->Add({table, "wru"}, units.second);
      }
    }
    if (observer_) observer_(pattern, call);
  };
}

void Router::Get(const std::string& p, Handler h, RouteOptions o) {
  http_->Get(p, Wrap("GET", p, std::move(h), o));
}
void Router::Post(const std::string& p, Handler h, RouteOptions o) {
  http_->Post(p, Wrap("POST", p, std::move(h), o));
}
void Router::Put(const std::string& p, Handler h, RouteOptions o) {
  http_->Put(p, Wrap("PUT", p, std::move(h), o));
}
void Router::PutStreaming(const std::string& p, StreamingHandler h, RouteOptions o) {
  http_->Put(p, [this, p, h = std::move(h), o](const httplib::Request& req,
                                               httplib::Response& res,
                                               const httplib::ContentReader& reader) {
    bool consumed = false;
    httplib::ContentReader tracking(
        [&](httplib::ContentReceiver receiver) {
          consumed = true;
          return reader(std::move(receiver));
        },
        [&](httplib::MultipartContentHeader header, httplib::ContentReceiver receiver) {
          consumed = true;
          return reader(std::move(header), std::move(receiver));
        });
    Wrap(
        "PUT", p, [&](Call& call) { h(call, tracking); }, o)(req, res);
    // A handler that refused the request before reading its body (bad signature,
    // missing token) leaves the body on the connection, where the server would parse
    // it as the start of the client's next keep-alive request. Read it and drop it.
    if (!consumed) reader([](const char*, size_t) { return true; });
  });
}

void Router::Delete(const std::string& p, Handler h, RouteOptions o) {
  http_->Delete(p, Wrap("DELETE", p, std::move(h), o));
}

void Router::Patch(const std::string& p, Handler h, RouteOptions o) {
  http_->Patch(p, Wrap("PATCH", p, std::move(h), o));
}
}  // namespace sheetlog::api
