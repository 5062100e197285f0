// The real binary with its blobs on an S3 store that goes away mid-run: requests that
// need the store answer 503 with a message naming
// it, within the request bounds of the --blobs URL; what does not need it keeps
// working; nothing half-written appears; and once the store is back the same server
// serves again, without a restart.
#include <gtest/gtest.h>

#include "tests/support/api_client.h"
#include "tests/support/s3_test_server.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

TEST(S3OutageHttpTest, StoreDownOrStalledAnswers503AndRecoversWithoutRestart) {
  PrivateS3Server store;
  S3Location location = store.NewBucket("outage-http");
  TempDir dir;
  ServerOptions options(dir.path(),
                        {"--inline-limit", "100", "--blobs",
                         S3BlobsFlag(location) + "&connect_timeout_ms=1000" +
                             "&request_timeout_ms=2000&stall_timeout_ms=2000"});
  options.env = {{"AWS_ACCESS_KEY_ID", "S3RVER"}, {"AWS_SECRET_ACCESS_KEY", "S3RVER"}};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();

  const std::string sheet = CreateSheet(client);
  ASSERT_FALSE(HasFatalFailure());
  const std::string entries = "/v1/sheets/" + sheet + "/entries";
  const json big = {{"type", "Note"}, {"body", std::string(500, 'x')}};  // external
  JsonResponse before = Post(client, entries, big);
  ASSERT_EQ(before.status, 201) << before.raw;
  const std::string kept_key = before.body["external"];

  store.Stop();
  JsonResponse refused = Post(client, entries, big);
  EXPECT_EQ(refused.status, 503) << refused.raw;
  EXPECT_EQ(refused.body["error"]["code"], "Unavailable");
  EXPECT_NE(refused.raw.find("object store"), std::string::npos) << refused.raw;
  // Which store, not where it is: the endpoint goes to the operator's log only.
  EXPECT_EQ(refused.raw.find(location.endpoint), std::string::npos) << refused.raw;
  EXPECT_NE(server.Log().find("the object store at " + location.endpoint),
            std::string::npos)
      << refused.raw << "\n"
      << server.Log();
  EXPECT_EQ(Get(client, "/v1/blobs/" + kept_key).status, 503);
  // Entries that stay inline never touch the store.
  EXPECT_EQ(Post(client, entries, {{"type", "Note"}, {"body", "small"}}).status, 201);

  store.Restart();
  JsonResponse read =
      Get(client, "/v1/sheets/" + sheet + "/entries?from=start&body=inline");
  ASSERT_EQ(read.status, 200) << read.raw;
  // The append before the outage and the inline one; entry 0 (the sheet's first
  // Snapshot entry) is read too once its snapshot is complete, so it is left out.
  std::vector<json> notes;
  for (const json& entry : read.body["entries"]) {
    if (entry["type"] == "Note") notes.push_back(entry["body"]);
  }
  ASSERT_EQ(notes.size(), 2u) << "the refused append left no entry: " << read.raw;
  EXPECT_EQ(notes[0], std::string(500, 'x'));
  EXPECT_EQ(notes[1], "small");
  JsonResponse listing = Get(client, "/v1/blobs?prefix=entries/" + sheet + "/");
  ASSERT_EQ(listing.status, 200);
  EXPECT_EQ(listing.body["keys"].size(), 1u) << "nothing half-written: " << listing.raw;
  EXPECT_EQ(Post(client, entries, big).status, 201);

  store.Pause();  // answers nothing: the 2 s request bound turns it into a 503
  EXPECT_EQ(Get(client, "/v1/blobs/" + kept_key).status, 503);
  store.Resume();
  EXPECT_EQ(Get(client, "/v1/blobs/" + kept_key).status, 200);
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace sheetlog::testing
