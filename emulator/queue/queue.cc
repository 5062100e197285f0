#include "emulator/queue/queue.h"

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"

namespace sheetlog {

QueueService::QueueService(Database* db, Clock* clock, FaultInjector* faults)
    : db_(db), clock_(clock), faults_(faults) {}

QueueService::~QueueService() { Shutdown(); }

Status QueueService::CreateQueue(const QueueOptions&) {
  return Internal("unimplemented");
}
Result<QueueOptions> QueueService::GetQueue(const std::string&) {
  return Internal("unimplemented");
}
Result<std::vector<QueueOptions>> QueueService::ListQueues() {
  return Internal("unimplemented");
}
Result<std::string> QueueService::Send(const std::string&, const std::string&,
                                       std::optional<int64_t>) {
  return Internal("unimplemented");
}
Result<std::vector<std::string>> QueueService::SendBatch(const std::string&,
                                                         const std::vector<std::string>&,
                                                         std::optional<int64_t>) {
  return Internal("unimplemented");
}
Result<std::vector<ReceivedMessage>> QueueService::Receive(const std::string&, int,
                                                           std::optional<int64_t>) {
  return Internal("unimplemented");
}
Status QueueService::ChangeVisibility(const std::string&, const std::string&, int64_t) {
  return Internal("unimplemented");
}
Status QueueService::Delete(const std::string&, const std::string&) {
  return Internal("unimplemented");
}
Status QueueService::RecordFailure(const std::string&, const std::string&,
                                   const std::string&) {
  return Internal("unimplemented");
}
Result<std::vector<DeadLetterMessage>> QueueService::ListDeadLetters(const std::string&,
                                                                     int,
                                                                     const std::string&) {
  return Internal("unimplemented");
}
Result<int64_t> QueueService::Redrive(const std::string&, std::optional<std::string>) {
  return Internal("unimplemented");
}
Result<int64_t> QueueService::PurgeExpired() { return Internal("unimplemented"); }
Result<int64_t> QueueService::PurgeExpiredIfDue() { return Internal("unimplemented"); }
Result<QueueStats> QueueService::Stats(const std::string&) {
  return Internal("unimplemented");
}
Result<bool> QueueService::WaitForMessages(const std::string&, int64_t) {
  return Internal("unimplemented");
}
void QueueService::Notify() {
  std::lock_guard<std::mutex> lock(mu_);
  ++change_seq_;
  cv_.notify_all();
}
void QueueService::WakeWaiters() { Notify(); }
void QueueService::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

}  // namespace sheetlog
