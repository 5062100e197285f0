// What a handler learns about its invocation, and how it tells the runtime about
// messages it dealt with itself (Lambda's context object plus SQS partial batch
// responses).
//
// Time budget: like Lambda's timeout (default 900 s), by the runtime's Clock. The
// runtime cannot stop a handler that overruns; it treats the invocation as failed
// (Lambda would have killed it), so handlers doing long work check RemainingMicros()
// after each checkpoint and hand over before it runs out (seed 000).
//
// One context per invocation, used by the handler's thread; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sheetlog {

class Clock;

class InvocationContext {
 public:
  InvocationContext(Clock* clock, std::string function_name, std::string invocation_id,
                    int64_t deadline_micros, std::vector<std::string> history_keys);

  // The event source mapping's name.
  const std::string& function_name() const { return function_name_; }
  // A fresh UUID per invocation (a retry is a new invocation).
  const std::string& invocation_id() const { return invocation_id_; }
  int64_t deadline_micros() const { return deadline_micros_; }
  // Time left before the deadline by the Clock; 0 once it has passed.
  int64_t RemainingMicros() const;

  // Execution-history partition keys of the records/messages in this invocation, in
  // batch order (empty when the mapping keeps no history).
  const std::vector<std::string>& history_keys() const { return history_keys_; }
  // The first key, or "" (convenient for batches of one).
  const std::string& history_key() const;

  // Queue mappings only. The handler itself took care of this message: it deleted it,
  // or changed its visibility to be redelivered later (seed 000's deferral). The runtime
  // then neither deletes it nor records a failure; the history records `deferred`
  // (a redelivery runs the work again).
  void MarkMessageHandled(const std::string& message_id);
  // Queue mappings only: this message failed although the handler returned OK (a
  // partial batch failure). It stays in the queue and reappears after its visibility
  // timeout.
  void ReportItemFailure(const std::string& message_id, std::string error);

  bool IsMessageHandled(const std::string& message_id) const;
  // The reported failure of `message_id`, if any.
  std::optional<std::string> ItemFailure(const std::string& message_id) const;

 private:
  Clock* clock_;
  std::string function_name_;
  std::string invocation_id_;
  int64_t deadline_micros_;
  std::vector<std::string> history_keys_;
  std::set<std::string> handled_;
  std::map<std::string, std::string> failures_;
};

}  // namespace sheetlog
