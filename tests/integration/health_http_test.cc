// GET /v1/health over real HTTP against the real binary, on both stores (the
// integration suite runs again as Postgres.<suite> on PostgreSQL + S3): each dependency
// named with its kind, state and probe latency; this node's view of the cluster (its
// id, the nodes alive with their leases, the shard and job claims); a store made
// unavailable (fault points health.table_store and health.blob_store) reported as such
// while /readyz stays 200; and a store that does not answer reported within the probe
// timeout instead of hanging the request.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class HealthHttpTest : public ApiTest {
 protected:
  // The real clock unless `flags` says otherwise: the delay fault then lets real time
  // pass, and on PostgreSQL leases are on the database's clock as in production.
  void Start(std::vector<std::string> flags = {}) {
    flags.push_back("--enable-faults");
    StartServer(ServerOptions(dir_.path(), flags));
  }

  json Health() {
    JsonResponse r = Get(*client_, "/v1/health");
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }

  // The dependency named `name` of a report; a failure (and null) if there is none.
  static json DependencyNamed(const json& report, const std::string& name) {
    for (const json& dependency : report.value("dependencies", json::array())) {
      if (dependency.value("name", "") == name) return dependency;
    }
    ADD_FAILURE() << "no dependency " << name << " in " << report.dump();
    return nullptr;
  }

  static bool HasClaim(const json& claims, const std::string& field,
                       const std::string& value, const std::string& holder) {
    for (const json& claim : claims) {
      if (claim.value(field, "") == value && claim.value("holder", "") == holder &&
          claim.value("holder_live", false)) {
        return true;
      }
    }
    return false;
  }

  void ExpectReadyz200() {
    JsonResponse ready = Get(*client_, "/readyz");
    EXPECT_EQ(ready.status, 200) << "readiness does not follow the stores: " << ready.raw;
  }
};

TEST_F(HealthHttpTest, NamesEachDependencyAndThisNodesViewOfTheCluster) {
  Start();
  // A sheet, so that the change feed has a shard for this node to claim.
  ASSERT_FALSE(CreateSheet(*client_).empty());

  json report;
  ASSERT_TRUE(Eventually(
      [&] {
        report = Health();
        json cluster = report.value("cluster", json::object());
        // null until the runtime has its lease (it has it before /readyz is 200).
        const std::string self =
            cluster["node_id"].is_string() ? cluster["node_id"].get<std::string>() : "";
        // The runtime claims the feed's shards at start and when one appears; the
        // self-healing claims its job at start.
        return !self.empty() &&
               HasClaim(cluster["shard_claims"], "mapping", "entry-effects", self) &&
               HasClaim(cluster["job_claims"], "job", "heal", self);
      },
      [&] { return report.dump(2); }));

  EXPECT_EQ(report["status"], "ok") << report.dump(2);
  EXPECT_EQ(report["probe_timeout_ms"], 2000);
  const json table_store = DependencyNamed(report, "table_store");
  EXPECT_EQ(table_store["kind"], StoreOnPostgres() ? "postgres" : "sqlite");
  EXPECT_EQ(table_store["state"], "ok");
  EXPECT_FALSE(table_store.contains("error"));
  EXPECT_TRUE(table_store["latency_micros"].is_number_integer());
  EXPECT_GE(table_store["latency_micros"].get<int64_t>(), 0);
  EXPECT_LT(table_store["latency_micros"].get<int64_t>(), 2000000);
  EXPECT_FALSE(table_store.value("location", "").empty());
  const json blob_store = DependencyNamed(report, "blob_store");
  EXPECT_EQ(blob_store["kind"], BlobsOnS3() ? "s3" : "directory");
  EXPECT_EQ(blob_store["state"], "ok");
  EXPECT_GE(blob_store["latency_micros"].get<int64_t>(), 0);
  EXPECT_LT(blob_store["latency_micros"].get<int64_t>(), 2000000);

  const json& cluster = report["cluster"];
  EXPECT_EQ(cluster["state"], "ok");
  EXPECT_EQ(cluster["lease_clock"], "database");
  EXPECT_FALSE(cluster.value("node", "").empty()) << "host and data directory";
  if (StoreOnPostgres()) {
    // Measured against PostgreSQL's clock, on this same machine.
    ASSERT_TRUE(cluster["clock_skew_seconds"].is_number()) << cluster.dump(2);
    EXPECT_LT(std::abs(cluster["clock_skew_seconds"].get<double>()), 1.0);
  } else {
    EXPECT_TRUE(cluster["clock_skew_seconds"].is_null())
        << "on SQLite the node's clock is the database's";
  }
  // One node, this one, with its lease: renewed every 10 s to 30 s ahead.
  ASSERT_EQ(cluster["nodes"].size(), 1u) << cluster.dump(2);
  const json& node = cluster["nodes"][0];
  EXPECT_EQ(node["id"], cluster["node_id"]);
  EXPECT_EQ(node["self"], true);
  EXPECT_EQ(node["node"], cluster["node"]);
  EXPECT_GT(node["lease_expires_in_seconds"].get<double>(), 0.0);
  EXPECT_LE(node["lease_expires_in_seconds"].get<double>(), 30.0);
  EXPECT_NEAR(node["lease_expires_in_seconds"].get<double>(),
              (node["lease_expires_at_micros"].get<int64_t>() -
               cluster["lease_clock_now_micros"].get<int64_t>()) /
                  1e6,
              1e-3);
  for (const json& claim : cluster["shard_claims"]) {
    EXPECT_EQ(claim["claim"], "stream/" + claim["mapping"].get<std::string>() + "/" +
                                  std::to_string(claim["shard"].get<int64_t>()));
  }
  for (const json& claim : cluster["job_claims"]) {
    EXPECT_EQ(claim["claim"], "job/" + claim["job"].get<std::string>());
  }
  ExpectReadyz200();

  JsonResponse metrics = Get(*client_, "/metrics");
  EXPECT_NE(metrics.raw.find("\nsheetlog_clock_skew_seconds "), std::string::npos)
      << "the skew is also a metric";
}

// The manual clock stands for the database's too (tests): leases stay on the node's
// clock, and there is no skew to measure.
TEST_F(HealthHttpTest, OnTheManualClockLeasesAreOnTheNodesClock) {
  Start({"--clock", "manual"});
  json report;
  ASSERT_TRUE(Eventually(
      [&] {
        report = Health();
        return report["cluster"]["nodes"].size() == 1;
      },
      [&] { return report.dump(2); }));
  EXPECT_EQ(report["status"], "ok") << report.dump(2);
  EXPECT_EQ(report["cluster"]["lease_clock"], "node");
  EXPECT_TRUE(report["cluster"]["clock_skew_seconds"].is_null());
  EXPECT_EQ(report["cluster"]["nodes"][0]["self"], true);
}

TEST_F(HealthHttpTest, AStoreThatFailsIsReportedUnavailableWhileReadyzStays200) {
  Start();
  ASSERT_EQ(Health()["status"], "ok");

  ArmFault(*client_, "health.blob_store", "error", -1);
  json report = Health();
  EXPECT_EQ(report["status"], "degraded") << report.dump(2);
  json blob_store = DependencyNamed(report, "blob_store");
  EXPECT_EQ(blob_store["state"], "unavailable") << report.dump(2);
  EXPECT_NE(blob_store.value("error", "").find("fault injected at health.blob_store"),
            std::string::npos)
      << blob_store.dump();
  EXPECT_EQ(DependencyNamed(report, "table_store")["state"], "ok");
  EXPECT_EQ(report["cluster"]["state"], "ok");
  ExpectReadyz200();

  ArmFault(*client_, "health.table_store", "error", -1);
  report = Health();
  EXPECT_EQ(report["status"], "degraded");
  const json table_store = DependencyNamed(report, "table_store");
  EXPECT_EQ(table_store["state"], "unavailable") << report.dump(2);
  EXPECT_NE(table_store.value("error", "").find("fault injected at health.table_store"),
            std::string::npos)
      << table_store.dump();
  // The cluster is read from the same store: unavailable with it, with what the node
  // knows by itself still there.
  const json& cluster = report["cluster"];
  EXPECT_EQ(cluster["state"], "unavailable") << cluster.dump(2);
  EXPECT_FALSE(cluster.value("error", "").empty());
  EXPECT_TRUE(cluster["node_id"].is_string()) << cluster.dump(2);
  EXPECT_TRUE(cluster["nodes"].empty());
  ExpectReadyz200();

  ASSERT_EQ(Request(*client_, "DELETE", "/v1/admin/faults").status, 204);
  report = Health();
  EXPECT_EQ(report["status"], "ok") << report.dump(2);
  EXPECT_EQ(DependencyNamed(report, "blob_store")["state"], "ok");
  EXPECT_EQ(DependencyNamed(report, "table_store")["state"], "ok");
}

// A store that does not answer (the delay fault: its probe blocks 4 s of real time)
// costs the request the probe timeout (2 s), not the store's time: reported
// unavailable, and ok again once the probe has its answer.
TEST_F(HealthHttpTest, AStoreThatDoesNotAnswerIsReportedWithinTheProbeTimeout) {
  Start();
  ASSERT_EQ(Health()["status"], "ok");
  JsonResponse armed = Post(*client_, "/v1/admin/faults",
                            {{"point", "health.table_store"},
                             {"kind", "delay"},
                             {"delay_ms", 4000},
                             {"count", 2}});  // the probe and the cluster's read
  ASSERT_EQ(armed.status, 200) << armed.raw;

  const auto started = std::chrono::steady_clock::now();
  const json report = Health();
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_LT(waited, std::chrono::milliseconds(3500)) << "bounded by the probe timeout";
  EXPECT_EQ(report["status"], "degraded") << report.dump(2);
  const json table_store = DependencyNamed(report, "table_store");
  EXPECT_EQ(table_store["state"], "unavailable") << report.dump(2);
  EXPECT_NE(table_store.value("error", "").find("no answer within 2000 ms"),
            std::string::npos)
      << table_store.dump();
  EXPECT_GE(table_store["latency_micros"].get<int64_t>(), 1900000)
      << "how long it was waited for";
  EXPECT_EQ(report["cluster"]["state"], "unavailable") << report.dump(2);
  EXPECT_EQ(DependencyNamed(report, "blob_store")["state"], "ok");
  ExpectReadyz200();

  json later;
  EXPECT_TRUE(Eventually(
      [&] {
        later = Health();
        return later["status"] == "ok";
      },
      [&] { return later.dump(2); }, 20));
}

}  // namespace
}  // namespace sheetlog::testing
