// What only the S3 blob store does (the shared behaviour is in blob_store_test,
// blob_list_test and blob_lifecycle_test, instantiated for both stores): presigned URLs
// minted by the store, the table store's record of tags that the sweep reads, the
// bucket checked at open, and an unreachable or stalled store answered with
// Unavailable within the request bounds, with recovery and no restart.
#include <gtest/gtest.h>
#include <httplib.h>

#include "emulator/blob/s3_blob_store.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/s3_test_server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

constexpr int64_t kS3Day = 24LL * 3600 * 1000000;
const BlobTags kS3AutoDelete = {{"auto-delete", "true"}};

httplib::Result FetchPresignedUrl(const std::string& method, const std::string& url,
                                  const std::string& body = "") {
  size_t path_at = url.find('/', url.find("://") + 3);
  httplib::Client http(url.substr(0, path_at));
  if (method == "PUT") return http.Put(url.substr(path_at), body, "text/plain");
  return http.Get(url.substr(path_at));
}

class S3BlobStoreTest : public testing::BlobStoreKindTest {
 protected:
  void SetUp() override {
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
  }
  std::unique_ptr<BlobStore> store_;
};

// Seed 000's upload on S3: the client PUTs straight to the store, which the server never
// sees; the tags were recorded when the URL was minted, so a never-completed upload is
// swept all the same, and a URL never used leaves no row behind.
TEST_P(S3BlobStoreTest, PresignedUploadsGoToTheStoreAndAreSweptFromTheTableStore) {
  const int64_t expires = clock_.NowSeconds() + 3600;
  Result<std::optional<std::string>> put_url =
      store_->PresignUrl("PUT", "uploads/s1/u1", expires, kS3AutoDelete);
  ASSERT_OK(put_url);
  ASSERT_TRUE(put_url->has_value()) << "the S3 store mints its own URLs";
  EXPECT_TRUE((*put_url)->starts_with(location().endpoint + "/" + location().bucket +
                                      "/uploads/s1/u1?"))
      << **put_url;
  httplib::Result put = FetchPresignedUrl("PUT", **put_url, "the payload");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200) << put->body;
  EXPECT_EQ(store_->Get("uploads/s1/u1").value(), "the payload");
  EXPECT_EQ(store_->GetTags("uploads/s1/u1").value(), kS3AutoDelete);

  Result<std::optional<std::string>> get_url =
      store_->PresignUrl("GET", "uploads/s1/u1", expires, {});
  ASSERT_OK(get_url);
  httplib::Result get = FetchPresignedUrl("GET", **get_url);
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->body, "the payload");
  // The server's own presigned route has nothing to check on S3.
  EXPECT_EQ(store_->server_presigner(), nullptr);

  ASSERT_OK(store_->PresignUrl("PUT", "uploads/s1/unused", expires, kS3AutoDelete));
  clock_.Advance(4 * kS3Day);
  Result<SweepReport> report = store_->Sweep(LifecycleRule{}, {});
  ASSERT_OK(report);
  EXPECT_EQ(report->deleted_keys, (std::vector<std::string>{"uploads/s1/u1"}));
  EXPECT_EQ(report->debris_removed, 1);  // the unused URL's row
  EXPECT_TRUE(store_->Head("uploads/s1/u1").status().IsNotFound());
  EXPECT_EQ(store_->Sweep(LifecycleRule{}, {}).value().examined, 0);  // no row left
}

// Tags live in the table store (the sweep's source) and are copied to the store's own
// tagging where it keeps them.
TEST_P(S3BlobStoreTest, TagChangesReachTheStoresOwnTagging) {
  ASSERT_OK(store_->Put("k", "v", {"", kS3AutoDelete}));
  ASSERT_OK(store_->PutTags("k", {{"sheet", "s1"}}));
  auto* s3 = static_cast<S3BlobStore*>(store_.get());
  EXPECT_EQ(s3->client().GetObjectTagging("k").value(),
            (std::map<std::string, std::string>{{"sheet", "s1"}}));
  // An overwrite without tags drops the old ones: they must not outlive their object.
  ASSERT_OK(store_->Put("k", "w"));
  EXPECT_TRUE(store_->GetTags("k").value().empty());
}

TEST_P(S3BlobStoreTest, OpenChecksTheBucketAndTheCredentials) {
  auto tables = testing::OpenTestDatabase(dir_.File("open.db"), &clock_);
  S3BlobStoreOptions options;
  options.location = location();
  options.location.bucket = "no-such-bucket-here";
  EXPECT_EQ(S3BlobStore::Open(options, tables.get(), &clock_).status().code(),
            StatusCode::kFailedPrecondition);
  options.location = location();
  options.location.credentials.secret_access_key = "wrong";
  EXPECT_EQ(S3BlobStore::Open(options, tables.get(), &clock_).status().code(),
            StatusCode::kPermissionDenied);
}

// A backup's capture (BlobStore::Capture) is refused, saying what to use instead, before
// anything of it runs: the backup's database snapshot is never taken.
TEST_P(S3BlobStoreTest, CaptureForABackupIsRefusedBeforeAnythingRuns) {
  ASSERT_OK(store_->Put("k", "v"));
  bool at_point_ran = false;
  Result<std::unique_ptr<BlobCapture>> capture = store_->Capture([&] {
    at_point_ran = true;
    return Status::OK();
  });
  EXPECT_THAT(capture.status(), StatusIs(StatusCode::kFailedPrecondition));
  EXPECT_NE(capture.status().message().find("the bucket's own versioning or replication"),
            std::string::npos)
      << capture.status().ToString();
  EXPECT_FALSE(at_point_ran);
  EXPECT_EQ(store_->Get("k").value(), "v");
}

INSTANTIATE_TEST_SUITE_P(S3, S3BlobStoreTest,
                         ::testing::Values(testing::BlobStoreKind::kS3));

// The object store unreachable (stopped) or stalled (paused): every call fails with
// Unavailable naming the store within the request bounds, nothing half-written is
// visible afterwards, and the same store object works again once the server is back.
TEST(S3OutageTest, UnreachableOrStalledStoreIsUnavailableAndRecoversWithoutReopen) {
  testing::PrivateS3Server server;
  testing::TempDir dir;
  ManualClock clock;
  auto tables = testing::OpenTestDatabase(dir.File("tables.db"), &clock);
  S3BlobStoreOptions options;
  options.location = server.NewBucket("outage");
  auto opened = S3BlobStore::Open(options, tables.get(), &clock);
  ASSERT_OK(opened);
  std::unique_ptr<S3BlobStore> store = std::move(opened).value();
  ASSERT_OK(store->Put("before", "kept", {"", kS3AutoDelete}));

  server.Stop();
  Result<BlobInfo> refused = store->Put("during", "lost?", {"", kS3AutoDelete});
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable)
      << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("unreachable"), std::string::npos);
  EXPECT_EQ(store->Get("before").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->List({}).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->Delete("before").code(), StatusCode::kUnavailable);

  server.Restart();
  EXPECT_EQ(store->Get("before").value(), "kept");
  EXPECT_TRUE(store->Head("during").status().IsNotFound());  // nothing half-written
  EXPECT_TRUE(store->GetTags("during").status().IsNotFound());
  ASSERT_OK(store->Put("after", "works"));

  server.Pause();  // accepts connections, answers nothing: the request bound ends it
  Result<std::string> stalled = store->Get("after");
  EXPECT_EQ(stalled.status().code(), StatusCode::kUnavailable)
      << stalled.status().ToString();
  server.Resume();
  EXPECT_EQ(store->Get("after").value(), "works");
}

}  // namespace
}  // namespace sheetlog
