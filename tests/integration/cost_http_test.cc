// GET /v1/sheets/{id}/cost: a scripted workload, and the bill worked
// out by hand in the test from what each response reported (X-Request-Units) and the
// stored objects, at seed 001's prices with two of them overridden by --prices.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class CostHttpTest : public ApiTest {
 protected:
  void SetUp() override {
    StartServer(ServerOptions(
        dir_.path(), {"--clock", "manual", "--prices", "dynamodb_wru=2.5,sqs=0.5"}));
  }

  // Sends a request and adds the units its response reports to the running totals.
  JsonResponse Charged(const std::string& method, const std::string& path,
                       const json& body = nullptr) {
    JsonResponse r =
        Request(*client_, method, path, body.is_null() ? std::string() : body.dump());
    const std::string header = r.headers.count("X-Request-Units")
                                   ? r.headers.find("X-Request-Units")->second
                                   : "";
    double wru = 0, rru = 0;
    EXPECT_EQ(std::sscanf(header.c_str(), "wru=%lf, rru=%lf", &wru, &rru), 2)
        << method << " " << path << ": '" << header << "'";
    wru_ += wru;
    rru_ += rru;
    ++requests_;
    return r;
  }

  double wru_ = 0;
  double rru_ = 0;
  int64_t requests_ = 0;
};

TEST_F(CostHttpTest, MatchesAHandComputation) {
  JsonResponse created = Charged("POST", "/v1/sheets", {{"snapshot_every", 0}});
  ASSERT_EQ(created.status, 201) << created.raw;
  const std::string id = created.body["id"];
  for (int i = 1; i <= 3; ++i) {
    ASSERT_EQ(Charged("POST", "/v1/sheets/" + id + "/entries",
                      {{"type", "SetCell"}, {"body", {{"ref", "A1"}, {"value", i}}}})
                  .status,
              201);
  }
  ASSERT_EQ(Charged("GET", "/v1/sheets/" + id + "/entries?from=0").status, 200);
  // The empty sheet's snapshot (seq 0): one root object, no chunks. Waited for through
  // routes that are not the sheet's (so not charged to it): once its root exists and
  // nothing is pending, it is complete.
  std::string root;
  ASSERT_TRUE(Eventually([&] {
    JsonResponse listed = Get(*client_, "/v1/blobs?prefix=snapshots/" + id + "/");
    JsonResponse pending = Get(*client_, "/v1/admin/pending-snapshots");
    if (listed.status != 200 || listed.body["keys"].size() != 1 ||
        !pending.body["pending_snapshots"].empty()) {
      return false;
    }
    root = listed.body["keys"][0].is_string()
               ? listed.body["keys"][0].get<std::string>()
               : listed.body["keys"][0]["key"].get<std::string>();
    return true;
  }));
  httplib::Result manifest = client_->Get("/v1/blobs/" + root);
  ASSERT_TRUE(manifest && manifest->status == 200);
  const double manifest_bytes = static_cast<double>(manifest->body.size());

  JsonResponse cost = Get(*client_, "/v1/sheets/" + id + "/cost");
  ASSERT_EQ(cost.status, 200) << cost.raw;
  const json& b = cost.body;
  // Every request on the sheet's routes was counted (the cost request itself is not).
  EXPECT_EQ(b["requests"], requests_) << cost.raw;
  // DynamoDB request units: exactly what the responses reported, summed.
  EXPECT_DOUBLE_EQ(b["dynamodb"]["write_units"].get<double>(), wru_) << cost.raw;
  EXPECT_DOUBLE_EQ(b["dynamodb"]["read_units"].get<double>(), rru_) << cost.raw;
  const double wru = wru_;
  const double rru = rru_;
  // Writes at the overridden $2.50 per million units, reads at seed 001's $0.25.
  EXPECT_DOUBLE_EQ(b["usd"]["dynamodb_writes"].get<double>(), wru * 2.5 / 1e6);
  EXPECT_DOUBLE_EQ(b["usd"]["dynamodb_reads"].get<double>(), rru * 0.25 / 1e6);
  // S3: one object (the root manifest), written once: 1 PUT at $5 per million.
  EXPECT_EQ(b["s3"]["objects"], 1);
  EXPECT_EQ(b["s3"]["put_requests"], 1);
  EXPECT_DOUBLE_EQ(b["usd"]["s3_requests"].get<double>(), 1 * 5.0 / 1e6);
  // SQS: one completed snapshot = send + receive + delete, at the overridden $0.50.
  EXPECT_EQ(b["sqs"]["requests"], 3);
  EXPECT_DOUBLE_EQ(b["usd"]["sqs"].get<double>(), 3 * 0.5 / 1e6);
  EXPECT_DOUBLE_EQ(b["usd"]["requests_total"].get<double>(),
                   wru * 2.5 / 1e6 + rru * 0.25 / 1e6 + 5.0 / 1e6 + 1.5 / 1e6);
  // Storage per month: the manifest's bytes at $0.023 per GB (10^9 bytes), and the
  // items' DynamoDB sizes at $0.25 per GB.
  EXPECT_EQ(b["s3"]["storage_bytes"].get<double>(), manifest_bytes);
  EXPECT_DOUBLE_EQ(b["usd"]["s3_storage_per_month"].get<double>(),
                   manifest_bytes * 0.023 / 1e9);
  const double item_bytes = b["dynamodb"]["storage_bytes"];
  // Six items (the sheet, its segment, the Snapshot entry and three SetCells), each
  // holding at least its key attributes and at most 1 KB.
  EXPECT_GT(item_bytes, 6 * 10) << cost.raw;
  EXPECT_LT(item_bytes, 6 * 1024) << cost.raw;
  EXPECT_DOUBLE_EQ(b["usd"]["dynamodb_storage_per_month"].get<double>(),
                   item_bytes * 0.25 / 1e9);
  EXPECT_EQ(b["prices"]["dynamodb_wru_per_million"], 2.5);
  EXPECT_EQ(b["prices"]["s3_put_per_million"], 5.0);

  EXPECT_EQ(Get(*client_, "/v1/sheets/nope/cost").status, 404);
  EXPECT_EQ(Get(*client_, "/v1/sheets/00000000-0000-4000-8000-000000000000/cost").status,
            404);
}

// An imported file is stored under the sheet's uploads/ prefix and
// is billed like the sheet's other objects (it was left out: 286 B for a sheet holding
// a 6 MiB import).
TEST_F(CostHttpTest, CountsTheSheetsUploadedFiles) {
  const std::string id = CreateSheet(*client_);
  ASSERT_FALSE(HasFatalFailure());
  std::string csv;
  for (int row = 1; row <= 2000; ++row) csv += std::to_string(row) + ",some text\n";
  JsonResponse upload =
      Post(*client_, "/v1/sheets/" + id + "/uploads",
           {{"type", "Import"}, {"body", {{"format", "csv"}}}, {"size", csv.size()}});
  ASSERT_EQ(upload.status, 201) << upload.raw;
  const std::string url = upload.body["url"];
  ASSERT_EQ(RequestUrl(*client_, "PUT", url, csv).status, 200);
  ASSERT_EQ(Post(*client_,
                 "/v1/sheets/" + id + "/uploads/" +
                     upload.body["upload_id"].get<std::string>() + "/complete",
                 json::object())
                .status,
            201);
  // Entry 0's snapshot completes in the background: waited for, so that the listing
  // and the report see the same objects.
  ASSERT_TRUE(Eventually([&] {
    JsonResponse listed = Get(*client_, "/v1/sheets/" + id + "/snapshots");
    for (const json& s : listed.body["snapshots"]) {
      if (s["state"] != "completed") return false;
    }
    return listed.status == 200;
  }));
  // What the blob store holds for the sheet, under each of its prefixes.
  int64_t objects = 0;
  double bytes = 0;
  for (const char* area : {"snapshots/", "uploads/", "entries/", "archives/"}) {
    JsonResponse listed =
        Get(*client_, std::string("/v1/blobs?prefix=") + area + id + "/");
    ASSERT_EQ(listed.status, 200) << listed.raw;
    for (const json& key : listed.body["keys"]) {
      ++objects;
      bytes += key["size"].get<double>();
    }
  }
  JsonResponse cost = Get(*client_, "/v1/sheets/" + id + "/cost");
  ASSERT_EQ(cost.status, 200) << cost.raw;
  EXPECT_GE(cost.body["s3"]["storage_bytes"].get<double>(),
            static_cast<double>(csv.size()))
      << cost.raw;
  EXPECT_EQ(cost.body["s3"]["storage_bytes"].get<double>(), bytes) << cost.raw;
  EXPECT_EQ(cost.body["s3"]["objects"], objects) << cost.raw;
}

}  // namespace
}  // namespace sheetlog::testing
