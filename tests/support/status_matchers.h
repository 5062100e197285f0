// Assertions on Status and Result<T> that print the error when they fail:
//
//   ASSERT_OK(log.AddEntry(request, nullptr));       // Status or Result<T>
//   EXPECT_OK(table.Put(conn, item, {}, nullptr)) << "while putting " << key;
//   EXPECT_THAT(log.Read(...), StatusIs(StatusCode::kGone));
//   EXPECT_THAT(status, StatusIs(StatusCode::kInvalidArgument, HasSubstr("expect_seq")));
//
// (ASSERT_TRUE(x.ok()) says only "false" when it fails.)
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "emulator/status.h"

// Not sheetlog::testing: tests inside namespace sheetlog name gtest as `testing::`.
namespace sheetlog {
namespace status_matchers_internal {

inline Status StatusOf(const Status& status) { return status; }
template <typename T>
Status StatusOf(const Result<T>& result) {
  return result.status();
}

// For ASSERT_PRED_FORMAT1: success if `value` is OK, else the expression and its error.
template <typename T>
::testing::AssertionResult IsOkFormat(const char* expression, const T& value) {
  const Status status = StatusOf(value);
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expression << " is " << status.ToString();
}

}  // namespace status_matchers_internal

MATCHER_P(StatusIs, code,
          std::string(negation ? "isn't" : "is") + " a status with code " +
              std::string(StatusCodeName(code))) {
  const Status status = status_matchers_internal::StatusOf(arg);
  *result_listener << "which is " << status.ToString();
  return status.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           std::string(negation ? "isn't" : "is") + " a status with code " +
               std::string(StatusCodeName(code)) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher, negation)) {
  const Status status = status_matchers_internal::StatusOf(arg);
  *result_listener << "which is " << status.ToString();
  return status.code() == code && ::testing::ExplainMatchResult(
                                      message_matcher, status.message(), result_listener);
}

}  // namespace sheetlog

#define ASSERT_OK(expression) \
  ASSERT_PRED_FORMAT1(::sheetlog::status_matchers_internal::IsOkFormat, expression)
#define EXPECT_OK(expression) \
  EXPECT_PRED_FORMAT1(::sheetlog::status_matchers_internal::IsOkFormat, expression)
