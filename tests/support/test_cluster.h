// Several real `sheetlog serve` processes sharing one table store and one blob store:
// the nodes of a cluster (docs/cluster.md). Each node has a data
// directory of its own (its log and port file; it holds no data); the tables are in one
// new database on the shared test PostgreSQL server (`--store`) and the blobs in one
// new bucket on the shared test S3 server (`--blobs s3://...`), so a node killed and
// started again rejoins the same cluster.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "emulator/blob/s3_client.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {

// Why no cluster can run here ("" when one can): the shared test PostgreSQL or S3
// server is not running (ctest's postgres and s3rver fixtures start them). For
// GTEST_SKIP, so that the test binary run without them skips such cases, not fails.
std::string TestClusterUnavailableReason();

// A node serving from `data_dir` with its tables in `store` (a libpq conninfo) and its
// blobs in `blobs` (the test server's credentials in its environment), plus `extra`
// flags. Several nodes given the same `store` and `blobs` are one cluster.
ServerOptions ClusterNodeOptions(const std::string& data_dir, const std::string& store,
                                 const S3Location& blobs,
                                 std::vector<std::string> extra = {});

class TestCluster {
 public:
  // Makes the database and the bucket (a failure is recorded) and `nodes` nodes, each
  // with `extra` flags; starts none of them.
  explicit TestCluster(int nodes, std::vector<std::string> extra = {});
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  // Starts every node at once (so they migrate the new database together) and waits
  // until each is ready; the failure names the node and its log.
  ::testing::AssertionResult StartAll();
  // Starts node `i` again after Kill, on its data directory, store and bucket (on a
  // new port: its clients must reconnect).
  ::testing::AssertionResult Restart(int i);
  // SIGKILL and wait: a crash of node `i`.
  void Kill(int i) { nodes_[i]->Kill(); }

  int size() const { return static_cast<int>(nodes_.size()); }
  ServerProcess& node(int i) { return *nodes_[i]; }
  const std::string& store() const { return database_.conninfo(); }
  const S3Location& blobs() const { return bucket_; }

 private:
  TempDir dir_;
  PostgresTestDatabase database_;  // dropped after the nodes are gone
  S3Location bucket_;
  std::vector<std::unique_ptr<ServerProcess>> nodes_;
};

}  // namespace sheetlog::testing
