// The one error type of the HTTP layer. Handlers throw ApiError (from a Status with
// Check, or a factory); the router catches it (router.h, CaughtError: the one place,
// for deferred replies too) and writes `{"error": {"code", "message", ...extra}}` with
// the status of api.md's error table. Any other exception becomes a 500 InternalError
// whose message says what failed, never a stack dump. Exceptions stay inside src/api.
// Every 503 (Unavailable, and Aborted: a transaction aborted by concurrency) is
// written with Retry-After, as the HTTP server's own 503s are (WriteError).
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "emulator/status.h"

namespace sheetlog::api {

class ApiError : public std::runtime_error {
 public:
  ApiError(int http_status, std::string code, std::string message,
           nlohmann::json extra = nlohmann::json::object())
      : std::runtime_error(message),
        http_status_(http_status),
        code_(std::move(code)),
        extra_(std::move(extra)) {}

  // Maps a core Status onto api.md's table (see StatusToHttp).
  static ApiError FromStatus(const Status& status,
                             nlohmann::json extra = nlohmann::json::object());

  static ApiError Validation(const std::string& m) { return {400, "ValidationError", m}; }
  static ApiError Range(const std::string& m) { return {400, "RangeError", m}; }
  static ApiError NotFound(const std::string& m) { return {404, "NotFound", m}; }
  static ApiError Conflict(const std::string& m, nlohmann::json extra = {}) {
    return {409, "ConflictError", m, extra.is_null() ? nlohmann::json::object() : extra};
  }
  static ApiError Unauthorized(const std::string& m) { return {401, "Unauthorized", m}; }
  static ApiError Forbidden(const std::string& m) { return {403, "Forbidden", m}; }
  static ApiError PayloadTooLarge(int64_t limit) {
    return {
        413, "PayloadTooLarge",
        "request body is larger than the limit of " + std::to_string(limit) + " bytes",
        nlohmann::json{{"limit", limit}}};
  }

  int http_status() const { return http_status_; }
  const std::string& code() const { return code_; }
  const nlohmann::json& extra() const { return extra_; }
  // The Status's detail (emulator/status.h: for the operator, never in the answer);
  // WriteError logs it.
  const std::string& detail() const { return detail_; }
  // {"error": {"code": ..., "message": ..., <extra fields>}}
  nlohmann::json ToJson() const;

 private:
  // FromStatus without the detail.
  static ApiError FromStatusMessage(const Status& status, nlohmann::json extra);

  int http_status_;
  std::string code_;
  nlohmann::json extra_;
  std::string detail_;
};

// Throws ApiError::FromStatus(status) unless status is OK.
inline void Check(const Status& status) {
  if (!status.ok()) throw ApiError::FromStatus(status);
}
template <typename T>
T Check(Result<T> result) {
  if (!result.ok()) throw ApiError::FromStatus(result.status());
  return std::move(result).value();
}

}  // namespace sheetlog::api
