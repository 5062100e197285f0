#include "emulator/runtime/invocation_context.h"

#include <algorithm>

#include "emulator/env/clock.h"

namespace sheetlog {

InvocationContext::InvocationContext(Clock* clock, std::string function_name,
                                     std::string invocation_id, int64_t deadline_micros,
                                     std::vector<std::string> history_keys)
    : clock_(clock),
      function_name_(std::move(function_name)),
      invocation_id_(std::move(invocation_id)),
      deadline_micros_(deadline_micros),
      history_keys_(std::move(history_keys)) {}

int64_t InvocationContext::RemainingMicros() const {
  return std::max<int64_t>(0, deadline_micros_ - clock_->NowMicros());
}

const std::string& InvocationContext::history_key() const {
  static const std::string kNone;
  return history_keys_.empty() ? kNone : history_keys_.front();
}

void InvocationContext::MarkMessageHandled(const std::string& message_id) {
  handled_.insert(message_id);
}

void InvocationContext::ReportItemFailure(const std::string& message_id,
                                          std::string error) {
  failures_[message_id] = std::move(error);
}

bool InvocationContext::IsMessageHandled(const std::string& message_id) const {
  return handled_.count(message_id) > 0;
}

std::optional<std::string> InvocationContext::ItemFailure(
    const std::string& message_id) const {
  auto it = failures_.find(message_id);
  if (it == failures_.end()) return std::nullopt;
  return it->second;
}

}  // namespace sheetlog
