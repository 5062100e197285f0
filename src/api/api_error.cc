#include "src/api/api_error.h"

namespace sheetlog::api {

ApiError ApiError::FromStatus(const Status& status, nlohmann::json extra) {
  ApiError error = FromStatusMessage(status, std::move(extra));
  error.detail_ = status.detail();
  return error;
}

ApiError ApiError::FromStatusMessage(const Status& status, nlohmann::json extra) {
  if (extra.is_null()) extra = nlohmann::json::object();
  const std::string& m = status.message();
  switch (status.code()) {
    case StatusCode::kOk:
      return {500, "InternalError",
              "internal error: an OK status was reported as a failure"};
    case StatusCode::kInvalidArgument:
      return {400, "ValidationError", m, extra};
    case StatusCode::kOutOfRange:
      return {400, "RangeError", m, extra};
    case StatusCode::kUnauthenticated:
      return {401, "Unauthorized", m, extra};
    case StatusCode::kPermissionDenied:
      return {403, "Forbidden", m, extra};
    case StatusCode::kNotFound:
      return {404, "NotFound", m, extra};
    case StatusCode::kAlreadyExists:
    case StatusCode::kConditionFailed:
    case StatusCode::kFailedPrecondition:
      return {409, "ConflictError", m, extra};
    case StatusCode::kGone:
      return {410, "Gone", m, extra};
    case StatusCode::kResourceExhausted:
      return {413, "PayloadTooLarge", m, extra};
    case StatusCode::kUnavailable:
    // A transaction aborted by concurrency that its runner's retries did not get
    // through (status.h): nothing was written, the request is safe to retry.
    case StatusCode::kAborted:
      return {503, "Unavailable", m, extra};
    case StatusCode::kInsufficientStorage:
      return {507, "InsufficientStorage", m, extra};
    case StatusCode::kInternal:
      return {500, "InternalError", m, extra};
  }
  return {500, "InternalError", m, extra};
}

nlohmann::json ApiError::ToJson() const {
  nlohmann::json error = extra_.is_object() ? extra_ : nlohmann::json::object();
  error["code"] = code_;
  error["message"] = what();
  return nlohmann::json{{"error", error}};
}

}  // namespace sheetlog::api
