// Beyond api.md: what the other emulators' UIs let a developer look at and poke, each
// handler small and on its own:
//   queue messages   peek without receiving (ElasticMQ UI), send one (a test control:
//                    --enable-faults, as it can feed a worker a malformed job), purge
//                    (destructive: --allow-reset, like reset)
//   invocations      the function runtime's log (LocalStack): every invocation of the
//                    stream and queue mappings with its outcome, duration and error,
//                    from seed 002's execution history
//   tables           browse the tables behind the API (dynamodb-admin), read-only
// All need the admin token when the server has one. Pages are bounded; bad input is a
// 400 that changes nothing.
#pragma once

#include "src/api/admin_control_routes.h"  // TestControls
#include "src/api/router.h"

namespace sheetlog {
class FunctionRuntime;
class QueueService;
class TableBrowser;
}  // namespace sheetlog

namespace sheetlog::api {

class InspectRoutes : public RouteGroup {
 public:
  InspectRoutes(QueueService* queues, FunctionRuntime* runtime, TableBrowser* tables,
                TestControls controls)
      : queues_(*queues), runtime_(*runtime), tables_(*tables), controls_(controls) {}

  void AddTo(Router& router) override;

  void PeekMessages(Call& call);     // GET /v1/admin/queues/{name}/messages
  void SendMessage(Call& call);      // POST /v1/admin/queues/{name}/messages
  void PurgeQueue(Call& call);       // POST /v1/admin/queues/{name}/purge
  void ListInvocations(Call& call);  // GET /v1/admin/invocations
  void ListTables(Call& call);       // GET /v1/admin/tables
  void BrowseItems(Call& call);      // GET /v1/admin/tables/{name}/items

 private:
  QueueService& queues_;
  FunctionRuntime& runtime_;
  TableBrowser& tables_;
  const TestControls controls_;
};

}  // namespace sheetlog::api
