// Status and Result<T>: how every layer of sheetlog reports failure. Errors are values;
// exceptions never cross a layer boundary.
//
// Codes are chosen by who retries what (after absl::StatusCode):
//   kConditionFailed  a conditional write lost (DynamoDB ConditionalCheckFailed);
//                     re-read and try again, or treat as "someone else did it".
//   kUnavailable      transient (busy, shutting down, retries exhausted); retry the call.
//   kAborted          the transaction was aborted by concurrency, and only that: a
//                     serialization failure or deadlock (PostgreSQL 40001, 40P01), or
//                     the item changed under a read-modify-write more often than it
//                     retries by itself (Table's judging rounds, the execution
//                     history's next sequence). Nothing was written: run the whole
//                     operation again from the start. The transaction runner does
//                     (PostgresDatabase::Write, a bounded number of times with jittered
//                     backoff; Transactions::Write says what a work must allow for);
//                     one that still reaches HTTP is a 503 Unavailable with
//                     Retry-After, never a 500. Not for control flow: a refusal that
//                     ends a transaction on purpose uses the code of its reason.
//   kFailedPrecondition  state must change first (e.g. no completed snapshot yet).
//   kInsufficientStorage the disk (or a quota) is full: nothing was written; retry once
//                     space is freed (HTTP 507).
//   kNotFound, kInvalidArgument, kOutOfRange, kGone, kPermissionDenied,
//   kUnauthenticated, kResourceExhausted (too large), kAlreadyExists, kInternal.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sheetlog {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kOutOfRange,
  kNotFound,
  kAlreadyExists,
  kConditionFailed,
  kFailedPrecondition,
  kGone,
  kResourceExhausted,
  kUnauthenticated,
  kPermissionDenied,
  kUnavailable,
  kInsufficientStorage,
  kAborted,
  kInternal,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // What the caller may be told: the HTTP layer answers with it (api/api_error.h).
  const std::string& message() const { return message_; }
  // For the operator only, never a client: where a backing store is and what its
  // driver said (a PostgreSQL host, socket and user, an object store's endpoint). The
  // HTTP layer logs it with the answer it gives; ToString carries it. Empty: none.
  const std::string& detail() const { return detail_; }
  // This status with `detail` (see detail()).
  Status WithDetail(std::string detail) const {
    Status with = *this;
    with.detail_ = std::move(detail);
    return with;
  }
  // "<CodeName>: <message>" (then " [<detail>]" if any), or "OK".
  std::string ToString() const;

  // Prepends context to the message: "while X: <original>"; the detail stays.
  Status Annotate(std::string_view context) const;

  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsConditionFailed() const { return code_ == StatusCode::kConditionFailed; }
  bool IsAborted() const { return code_ == StatusCode::kAborted; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string detail_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status OutOfRange(std::string m) {
  return {StatusCode::kOutOfRange, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status ConditionFailed(std::string m) {
  return {StatusCode::kConditionFailed, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Gone(std::string m) { return {StatusCode::kGone, std::move(m)}; }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status Unauthenticated(std::string m) {
  return {StatusCode::kUnauthenticated, std::move(m)};
}
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status Unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status InsufficientStorage(std::string m) {
  return {StatusCode::kInsufficientStorage, std::move(m)};
}
inline Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result needs a value or an error");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(v_); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sheetlog

#define SL_CONCAT_INNER(a, b) a##b
#define SL_CONCAT(a, b) SL_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    ::sheetlog::Status sl_status_ = (expr);  \
    if (!sl_status_.ok()) return sl_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F())`: declares x from a Result, or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(SL_CONCAT(sl_result_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
