// POST /v1/admin/reset (api.md "Operations", only with --allow-reset): drops every
// sheet and every blob, and the server then works as on a fresh install.
#include <gtest/gtest.h>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

TEST(ResetHttpTest, DropsEverythingAndTheServerWorksAfterwards) {
  TempDir dir;
  ServerProcess server(
      ServerOptions(dir.path(), {"--allow-reset", "--inline-limit", "100"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  auto make_sheet = [&] {
    const std::string id = CreateSheet(client, /*snapshot_every=*/1);
    SetCell(client, id, "A1", std::string(200, 'x'));  // an external body
    return id;
  };
  const std::string first = make_sheet();
  const std::string second = make_sheet();
  // Both pipelines done: a snapshot job still in flight could write its pending
  // snapshot again after the reset (reset is for an idle server).
  ASSERT_TRUE(WaitForSnapshots(server, client, first, {.at_least = 2}));
  ASSERT_TRUE(WaitForSnapshots(server, client, second, {.at_least = 2}));

  EXPECT_EQ(Post(client, "/v1/admin/reset", {{"everything", true}}).status, 400);
  EXPECT_EQ(Get(client, "/v1/sheets").body["sheets"].size(), 2u)
      << "a bad request drops nothing";
  JsonResponse reset = Post(client, "/v1/admin/reset", json::object());
  ASSERT_EQ(reset.status, 200) << reset.raw;
  EXPECT_EQ(reset.body["sheets"], 2);
  EXPECT_GE(reset.body["blobs"].get<int64_t>(), 2) << "external bodies and snapshots";
  EXPECT_TRUE(Get(client, "/v1/sheets").body["sheets"].empty());
  EXPECT_EQ(Get(client, "/v1/sheets/" + first).status, 404);
  EXPECT_TRUE(Get(client, "/v1/blobs").body["keys"].empty());
  EXPECT_TRUE(
      Get(client, "/v1/admin/pending-snapshots").body["pending_snapshots"].empty());

  const std::string fresh = make_sheet();
  ASSERT_TRUE(WaitForSnapshots(server, client, fresh, {.at_least = 2}));
  JsonResponse verified = Post(client, "/v1/admin/verify", json::object());
  EXPECT_EQ(verified.body["ok"], true) << verified.raw;
  EXPECT_EQ(verified.body["sheets"], 1);
}

}  // namespace
}  // namespace sheetlog::testing
