#include "src/ops/cost.h"

#include <cstdlib>
#include <sstream>

#include "src/log/sheet_blobs.h"

namespace sheetlog {

namespace {

constexpr double kMillion = 1e6;
constexpr double kGigabyte = 1e9;

Status AddBlobPrefix(BlobStore* blobs, const std::string& prefix, SheetCost* cost) {
  BlobListOptions options;
  options.prefix = prefix;
  while (true) {
    ASSIGN_OR_RETURN(BlobListResult page, blobs->List(options));
    for (const BlobInfo& info : page.keys) {
      ++cost->s3_objects;
      cost->s3_storage_bytes += std::max<int64_t>(info.size, 0);
    }
    if (!page.continuation) return Status::OK();
    options.continuation = *page.continuation;
  }
}

}  // namespace

Status Prices::Override(const std::string& spec) {
  std::map<std::string, double*> fields = {{"dynamodb_wru", &dynamodb_wru},
                                           {"dynamodb_rru", &dynamodb_rru},
                                           {"dynamodb_gb_month", &dynamodb_gb_month},
                                           {"s3_put", &s3_put},
                                           {"s3_get", &s3_get},
                                           {"s3_gb_month", &s3_gb_month},
                                           {"sqs", &sqs}};
  std::stringstream items(spec);
  for (std::string item; std::getline(items, item, ',');) {
    const size_t eq = item.find('=');
    auto field = fields.find(item.substr(0, eq));
    if (eq == std::string::npos || field == fields.end()) {
      return InvalidArgument("price '" + item + "' is not name=value with a name of " +
                             "dynamodb_wru, dynamodb_rru, dynamodb_gb_month, s3_put, " +
                             "s3_get, s3_gb_month, sqs");
    }
    const std::string text = item.substr(eq + 1);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(value >= 0)) {
      return InvalidArgument("price " + field->first +
                             " must be a non-negative number, got '" + text + "'");
    }
    *field->second = value;
  }
  return Status::OK();
}

void SheetUsage::Record(const std::string& sheet_id, double read_units,
                        double write_units) {
  MutexLock lock(&mu_);
  Usage& usage = usage_[sheet_id];
  ++usage.requests;
  usage.read_units += read_units;
  usage.write_units += write_units;
}

SheetUsage::Usage SheetUsage::Of(const std::string& sheet_id) const {
  MutexLock lock(&mu_);
  auto it = usage_.find(sheet_id);
  return it == usage_.end() ? Usage{} : it->second;
}

void SheetUsage::Clear() {
  MutexLock lock(&mu_);
  usage_.clear();
}

void SheetUsage::Forget(const std::string& sheet_id) {
  MutexLock lock(&mu_);
  usage_.erase(sheet_id);
}

Result<SheetCost> ComputeSheetCost(const std::string& sheet_id, EventLog* log,
                                   BlobStore* blobs, const SheetUsage::Usage& usage,
                                   const Prices& prices) {
  ASSIGN_OR_RETURN(SheetInfo sheet, log->GetSheet(sheet_id, nullptr));
  ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                   log->ListSegments(sheet.id, nullptr));
  SheetCost cost;
  cost.usage = usage;
  ASSIGN_OR_RETURN(EventLog::StorageSize items,
                   log->MeasureStorage(sheet.id, segments, nullptr));
  cost.dynamodb_storage_bytes += items.item_bytes;
  for (const std::string& prefix : SheetBlobPrefixes(sheet.id)) {
    RETURN_IF_ERROR(AddBlobPrefix(blobs, prefix, &cost));
  }
  cost.s3_put_requests = cost.s3_objects;
  cost.sqs_requests = 3 * items.completed_snapshots;

  cost.dynamodb_writes = usage.write_units * prices.dynamodb_wru / kMillion;
  cost.dynamodb_reads = usage.read_units * prices.dynamodb_rru / kMillion;
  cost.s3_requests = static_cast<double>(cost.s3_put_requests) * prices.s3_put / kMillion;
  cost.sqs = static_cast<double>(cost.sqs_requests) * prices.sqs / kMillion;
  cost.requests_total =
      cost.dynamodb_writes + cost.dynamodb_reads + cost.s3_requests + cost.sqs;
  cost.dynamodb_storage_month = static_cast<double>(cost.dynamodb_storage_bytes) *
                                prices.dynamodb_gb_month / kGigabyte;
  cost.s3_storage_month =
      static_cast<double>(cost.s3_storage_bytes) * prices.s3_gb_month / kGigabyte;
  cost.storage_month = cost.dynamodb_storage_month + cost.s3_storage_month;
  return cost;
}

}  // namespace sheetlog
