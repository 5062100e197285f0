// GET /v1/sheets/{id}/cost: what the same workload would cost on AWS, priced with
// seed 001's on-demand prices, so a developer sees it without an account.
//
// What is counted, and how exactly:
//   - DynamoDB request units: exact, by DynamoDB's rules (emulator/table), for every
//     HTTP request on the sheet's routes since the server started (SheetUsage). Units
//     spent by the background workers on the sheet's behalf (change feed, snapshot
//     worker) are not included.
//   - DynamoDB storage: exact, the sizes of the sheet's items (entries, segments,
//     metadata) by DynamoDB's rules, now.
//   - S3 storage: the bytes of the sheet's objects under every one of its prefixes
//     (snapshots, uploads such as imported files, external bodies, archives:
//     SheetBlobPrefixes), now; S3 PUT requests: one per stored object (a lower bound:
//     each was written at least once).
//   - SQS requests: three per completed snapshot (send, receive, delete; a lower bound).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "src/log/event_log.h"

namespace sheetlog {

// US dollars per million requests / units, and per GB-month (GB = 10^9 bytes).
// Defaults: seed 001's on-demand prices; SQS standard queue requests at $0.40.
struct Prices {
  double dynamodb_wru = 1.25;
  double dynamodb_rru = 0.25;
  double dynamodb_gb_month = 0.25;
  double s3_put = 5;
  double s3_get = 0.4;
  double s3_gb_month = 0.023;
  double sqs = 0.40;

  // Overrides from "name=value,name=value" (names as the fields above). InvalidArgument
  // for an unknown name or a value that is not a non-negative number.
  Status Override(const std::string& spec);
};

// Request units and requests per sheet, counted by the HTTP layer since start (kept in
// memory: a restart starts again from zero). Thread-safe.
class SheetUsage {
 public:
  struct Usage {
    int64_t requests = 0;
    double read_units = 0;
    double write_units = 0;
  };
  void Record(const std::string& sheet_id, double read_units, double write_units);
  Usage Of(const std::string& sheet_id) const;
  void Forget(const std::string& sheet_id);
  void Clear();

 private:
  mutable Mutex mu_;
  std::map<std::string, Usage> usage_ GUARDED_BY(mu_);
};

struct SheetCost {
  SheetUsage::Usage usage;
  int64_t dynamodb_storage_bytes = 0;
  int64_t s3_objects = 0;
  int64_t s3_storage_bytes = 0;
  int64_t s3_put_requests = 0;
  int64_t sqs_requests = 0;
  // Dollars.
  double dynamodb_writes = 0;
  double dynamodb_reads = 0;
  double s3_requests = 0;
  double sqs = 0;
  double requests_total = 0;  // the four above
  double dynamodb_storage_month = 0;
  double s3_storage_month = 0;
  double storage_month = 0;  // the two above
};

// NotFound for no such sheet.
Result<SheetCost> ComputeSheetCost(const std::string& sheet_id, EventLog* log,
                                   BlobStore* blobs, const SheetUsage::Usage& usage,
                                   const Prices& prices);

}  // namespace sheetlog
