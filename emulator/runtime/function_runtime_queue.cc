// FunctionRuntime's queue mappings (Lambda + SQS): the consumer threads, and one
// invocation over received messages through the execution history, with each message's
// fate afterwards (deleted, left for redelivery, or the handler's). The delivery rules
// are in function_runtime.h.
#include <spdlog/spdlog.h>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/env/mutex.h"
#include "emulator/env/uuid.h"
#include "emulator/runtime/function_runtime.h"
#include "emulator/runtime/function_runtime_internal.h"

namespace sheetlog {

using runtime_internal::InvokeWithinBudget;
using runtime_internal::IsBusy;
using runtime_internal::RunningCount;
using runtime_internal::TakesOverAbandoned;

void FunctionRuntime::ConsumerLoop(QueueState* mapping) {
  const QueueMapping& m = mapping->config;
  // How long one wait lasts before the consumer re-checks (clock time).
  constexpr int64_t kIdleWaitMicros = 20LL * 1000000;
  while (true) {
    {
      MutexLock lock(&mu_);
      if (stopping_) break;
    }
    Result<bool> ready =
        m.queues->WaitForMessages(m.queue, clock_->NowMicros() + kIdleWaitMicros);
    {
      MutexLock lock(&mu_);
      if (stopping_) break;
    }
    if (!ready.ok()) {
      spdlog::warn("runtime: {}: waiting for queue {} failed: {}", m.name, m.queue,
                   ready.status().ToString());
      if (!PauseUntil(clock_->NowMicros() + m.error_backoff_micros)) break;
      continue;
    }
    if (!*ready) continue;
    Status received = ReceiveAndProcess(*mapping);
    if (!received.ok()) {
      spdlog::warn("runtime: {}: receiving from queue {} failed: {}", m.name, m.queue,
                   received.ToString());
      if (!PauseUntil(clock_->NowMicros() + m.error_backoff_micros)) break;
    }
  }
  MutexLock lock(&mu_);
  --consumers_running_;
  stop_cv_.NotifyAll();
}

Status FunctionRuntime::ReceiveAndProcess(QueueState& mapping) {
  const QueueMapping& m = mapping.config;
  RunningCount running(mapping.running);
  // Received in this process's lease's name: released at once if it dies holding them.
  ASSIGN_OR_RETURN(std::vector<ReceivedMessage> messages,
                   m.queues->Receive(m.queue, m.batch_size, m.visibility_timeout_s,
                                     membership_.owner()));
  if (messages.empty()) return Status::OK();
  ProcessMessages(mapping, messages);
  if (faults_ != nullptr &&
      faults_->ShouldDuplicate(FaultPoint::kRuntimeQueueDuplicate)) {
    ProcessMessages(mapping, messages);  // at-least-once delivery
  }
  return Status::OK();
}

void FunctionRuntime::ProcessMessages(QueueState& mapping,
                                      const std::vector<ReceivedMessage>& messages) {
  const QueueMapping& m = mapping.config;
  const std::string invocation_id = NewRandomUuid();
  LiveInvocation live(&live_, invocation_id);
  const int64_t deadline = clock_->NowMicros() + m.time_budget_micros;
  auto key_of = [&](const ReceivedMessage& msg) {
    return m.history_key ? m.history_key(msg) : m.name + ":" + msg.id;
  };
  auto fail = [&](const ReceivedMessage& msg, const Status& why) {
    mapping.failures.fetch_add(1);
    Status recorded =
        m.queues->RecordFailure(m.queue, msg.receipt_handle, why.ToString());
    if (!recorded.ok() && !recorded.IsConditionFailed() && !recorded.IsNotFound()) {
      spdlog::warn("runtime: {}: recording failure of {} failed: {}", m.name, msg.id,
                   recorded.ToString());
    }
    Notify({RuntimeEvent::Kind::kMessageFailed, m.name, -1, 0, 0, 1, msg.id, why});
  };

  std::vector<ReceivedMessage> to_run;
  std::vector<std::string> keys;
  std::vector<Claim> claims;  // parallel to to_run when keeping history
  if (m.keep_history) {
    std::vector<BeginRequest> requests;
    for (const ReceivedMessage& msg : messages) {
      requests.push_back({key_of(msg), m.name, invocation_id, msg.id});
    }
    Result<std::vector<Claim>> begun =
        history_.BeginBatch(requests, m.time_budget_micros);
    if (!begun.ok()) {
      for (const ReceivedMessage& msg : messages) fail(msg, begun.status());
      return;
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      const Claim& c = (*begun)[i];
      const ReceivedMessage& msg = messages[i];
      if (c.outcome == BeginOutcome::kAlreadySucceeded) {
        mapping.duplicates.fetch_add(1);
        Status deleted = m.queues->Delete(m.queue, msg.receipt_handle);
        Notify({RuntimeEvent::Kind::kMessageDuplicate, m.name, -1, 0, 0, 1, msg.id,
                deleted});
      } else if (IsBusy(c)) {
        Notify({RuntimeEvent::Kind::kMessageBusy, m.name, -1, 0, 0, 1, msg.id,
                Unavailable(std::string("concurrent duplicate: ") +
                            std::string(BeginOutcomeText(c.outcome)))});
      } else {
        if (TakesOverAbandoned(c)) mapping.abandoned.fetch_add(1);
        to_run.push_back(msg);
        keys.push_back(c.request.partition_key);
        claims.push_back(c);
      }
    }
    if (to_run.empty()) return;
  } else {
    to_run = messages;
  }

  InvocationContext ctx(clock_, m.name, invocation_id, deadline, keys);
  mapping.invocations.fetch_add(1);
  Status status = InvokeWithinBudget(m.handler, to_run, ctx, clock_, faults_, deadline,
                                     m.time_budget_micros);
  if (faults_ != nullptr &&
      !faults_->Hit(FaultPoint::kRuntimeAfterHandlerBeforeHistory).ok()) {
    return;  // as if the process died here: the messages reappear after their timeout
  }

  enum class Fate { kDelete, kFail, kHandled };
  std::vector<Fate> fates(to_run.size());
  std::vector<Status> errors(to_run.size());
  for (size_t i = 0; i < to_run.size(); ++i) {
    const std::string& id = to_run[i].id;
    if (ctx.IsMessageHandled(id)) {
      fates[i] = Fate::kHandled;
    } else if (!status.ok()) {
      fates[i] = Fate::kFail;
      errors[i] = status;
    } else if (std::optional<std::string> failure = ctx.ItemFailure(id)) {
      fates[i] = Fate::kFail;
      errors[i] = Internal(*failure);
    } else {
      fates[i] = Fate::kDelete;
    }
  }
  if (m.keep_history) {
    std::vector<ExecutionHistory::Outcome> outcomes;
    for (size_t i = 0; i < to_run.size(); ++i) {
      switch (fates[i]) {
        case Fate::kDelete:
          outcomes.push_back({&claims[i], ExecStatus::kSucceeded, ""});
          break;
        case Fate::kFail:
          outcomes.push_back({&claims[i], ExecStatus::kFailed, errors[i].ToString()});
          break;
        case Fate::kHandled:
          outcomes.push_back(
              {&claims[i], ExecStatus::kDeferred, "handled by the handler"});
          break;
      }
    }
    Status finished = history_.FinishBatch(outcomes);
    if (!finished.ok()) {
      // Not recorded as done: do not delete; redelivery runs the work again.
      for (size_t i = 0; i < to_run.size(); ++i) {
        if (fates[i] != Fate::kHandled) fail(to_run[i], finished);
      }
      return;
    }
  }
  for (size_t i = 0; i < to_run.size(); ++i) {
    const ReceivedMessage& msg = to_run[i];
    switch (fates[i]) {
      case Fate::kHandled:
        Notify({RuntimeEvent::Kind::kMessageHandled, m.name, -1, 0, 0, 1, msg.id,
                Status::OK()});
        break;
      case Fate::kFail:
        fail(msg, errors[i]);
        break;
      case Fate::kDelete: {
        Status deleted =
            faults_ != nullptr
                ? faults_->Hit(FaultPoint::kRuntimeQueueAfterHistoryBeforeDelete)
                : Status::OK();
        if (deleted.ok()) deleted = m.queues->Delete(m.queue, msg.receipt_handle);
        if (!deleted.ok()) {
          // Stale handle (someone received it again) or an error: the history says
          // succeeded, so the next delivery deletes it as a duplicate.
          spdlog::info("runtime: {}: deleting {} failed: {}", m.name, msg.id,
                       deleted.ToString());
        }
        Notify({RuntimeEvent::Kind::kMessageSucceeded, m.name, -1, 0, 0, 1, msg.id,
                deleted});
        break;
      }
    }
  }
}

}  // namespace sheetlog
