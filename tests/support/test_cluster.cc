#include "tests/support/test_cluster.h"

#include <thread>

#include "tests/support/s3_test_server.h"

namespace sheetlog::testing {

std::string TestClusterUnavailableReason() {
  std::string missing;
  if (!PostgresTestServerRunning()) missing = "the test PostgreSQL server";
  if (!S3TestServerRunning()) {
    missing += (missing.empty() ? "" : " and ") + std::string("the test S3 server");
  }
  if (missing.empty()) return "";
  return missing +
         " not running: run this case through ctest (its postgres and s3rver fixtures "
         "start them), or start them with `scripts/postgres start DIR` and "
         "`scripts/s3rver "
         "start DIR2` and set SHEETLOG_TEST_POSTGRES_DIR=DIR SHEETLOG_TEST_S3_DIR=DIR2";
}

ServerOptions ClusterNodeOptions(const std::string& data_dir, const std::string& store,
                                 const S3Location& blobs,
                                 std::vector<std::string> extra) {
  ServerOptions options(data_dir, std::move(extra));
  options.extra.insert(options.extra.end(),
                       {"--store", store, "--blobs", S3BlobsFlag(blobs)});
  options.env.emplace_back("AWS_ACCESS_KEY_ID", blobs.credentials.access_key_id);
  options.env.emplace_back("AWS_SECRET_ACCESS_KEY", blobs.credentials.secret_access_key);
  return options;
}

TestCluster::TestCluster(int nodes, std::vector<std::string> extra)
    : database_("cluster"), bucket_(NewS3TestBucket("cluster")) {
  for (int i = 0; i < nodes; ++i) {
    nodes_.push_back(std::make_unique<ServerProcess>(ClusterNodeOptions(
        dir_.File("node" + std::to_string(i)), store(), bucket_, extra)));
  }
}

::testing::AssertionResult TestCluster::StartAll() {
  std::vector<char> started(nodes_.size(), false);
  std::vector<std::thread> starters;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    starters.emplace_back([&, i] { started[i] = nodes_[i]->Start(); });
  }
  for (std::thread& t : starters) t.join();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!started[i]) {
      return ::testing::AssertionFailure()
             << "node " << i << " did not start: " << nodes_[i]->error();
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult TestCluster::Restart(int i) {
  if (nodes_[i]->Start()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "node " << i << " did not start again: " << nodes_[i]->error();
}

}  // namespace sheetlog::testing
