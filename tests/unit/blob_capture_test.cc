// BlobStore::Capture (emulator/blob/blob_store.h), the blob half of a backup's one
// instant: the capture holds every object as it was at the instant, however it is
// deleted or overwritten afterwards and while the walk runs.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

namespace fs = std::filesystem;

std::string FileText(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

class BlobCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BlobStoreOptions options;
    options.root = dir_.File("blobs");
    options.sync = false;
    auto store = DirectoryBlobStore::Open(options, &clock_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  void Put(const std::string& key, const std::string& body, BlobTags tags = {}) {
    BlobPutOptions options;
    options.tags = std::move(tags);
    ASSERT_TRUE(store_->Put(key, body, options).ok());
  }

  // Captured key -> body read through its link.
  std::map<std::string, std::string> Bodies(const BlobCapture& capture) {
    std::map<std::string, std::string> out;
    for (const CapturedBlob& blob : capture.objects()) {
      out[blob.info.key] = FileText(blob.body_path);
    }
    return out;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<BlobStore> store_;
};

TEST_F(BlobCaptureTest, HoldsEachObjectAsItWasAtTheInstant) {
  Put("a", "a at the instant");
  Put("b", "b at the instant");
  Put("c", "c at the instant");
  Put("d", "d tagged", {{"auto-delete", "true"}});
  int at_point_runs = 0;
  auto capture = store_->Capture([&] {
    ++at_point_runs;
    return Status::OK();
  });
  ASSERT_TRUE(capture.ok()) << capture.status().ToString();
  EXPECT_EQ(at_point_runs, 1);

  ASSERT_TRUE(store_->Delete("a").ok());
  Put("b", "b overwritten once");
  Put("b", "b overwritten twice");
  ASSERT_TRUE(store_->DeleteTags("d").ok());
  ASSERT_TRUE((*capture)->Walk().ok());

  std::map<std::string, std::string> bodies = Bodies(**capture);
  EXPECT_EQ(bodies["a"], "a at the instant");
  EXPECT_EQ(bodies["b"], "b at the instant");
  EXPECT_EQ(bodies["c"], "c at the instant");
  EXPECT_EQ(bodies["d"], "d tagged");
  for (const CapturedBlob& blob : (*capture)->objects()) {
    if (blob.info.key == "d") {
      EXPECT_TRUE(blob.info.tags.empty()) << "the tags it has now";
    } else if (blob.info.key == "b") {
      EXPECT_EQ(blob.info.size, 16);
    }
  }
  // Changes after the walk are not captured, and the store itself moved on.
  ASSERT_TRUE(store_->Delete("c").ok());
  EXPECT_EQ(Bodies(**capture)["c"], "c at the instant");
  EXPECT_EQ(*store_->Get("b"), "b overwritten twice");
  EXPECT_TRUE(store_->Get("a").status().IsNotFound());

  const std::string links = dir_.File("blobs/capture");
  EXPECT_FALSE(fs::is_empty(links));
  capture->reset();
  EXPECT_TRUE(fs::is_empty(links)) << "the capture's links go with it";
}

TEST_F(BlobCaptureTest, OneAtATimeAndAtPointErrorsAreReturned) {
  auto first = store_->Capture([] { return Status::OK(); });
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(store_->Capture([] { return Status::OK(); }).status(),
              StatusIs(StatusCode::kFailedPrecondition));
  first->reset();
  EXPECT_THAT(store_->Capture([] { return Unavailable("no snapshot"); }).status(),
              StatusIs(StatusCode::kUnavailable));
  EXPECT_TRUE(store_->Capture([] { return Status::OK(); }).ok()) << "nothing left held";
}

// Writers overwrite and delete while the capture is taken and walked. The instant's
// contents are read inside at_point, where every change is held off: the capture must
// hold exactly those, for every key that existed then.
TEST_F(BlobCaptureTest, ConcurrentChangesNeverReplaceTheInstantsVersion) {
  constexpr int kKeys = 60;
  for (int k = 0; k < kKeys; ++k)
    Put("k" + std::to_string(k), "v0 of " + std::to_string(k));
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      for (int round = 1; !stop.load(); ++round) {
        for (int k = w; k < kKeys; k += 3) {
          const std::string key = "k" + std::to_string(k);
          if ((k + round) % 4 == 0) {
            (void)store_->Delete(key);
          } else {
            (void)store_->Put(key,
                              "v" + std::to_string(round) + " of " + std::to_string(k));
          }
        }
      }
    });
  }
  std::map<std::string, std::string> at_instant;
  auto capture = store_->Capture([&] {
    for (int k = 0; k < kKeys; ++k) {
      const std::string key = "k" + std::to_string(k);
      Result<std::string> body = store_->Get(key);
      if (body.ok()) at_instant[key] = *body;
    }
    return Status::OK();
  });
  ASSERT_TRUE(capture.ok());
  Status walked = (*capture)->Walk();
  stop = true;
  for (std::thread& t : writers) t.join();
  ASSERT_TRUE(walked.ok()) << walked.ToString();
  std::map<std::string, std::string> bodies = Bodies(**capture);
  ASSERT_FALSE(at_instant.empty());
  for (const auto& [key, body] : at_instant) {
    EXPECT_EQ(bodies[key], body) << key;
  }
}

TEST_F(BlobCaptureTest, LinksLeftByACrashAreRemovedByOpen) {
  Put("a", "kept");
  store_.reset();
  // What a process that died during a backup leaves: a capture's directory of links.
  const std::string links = dir_.File("blobs/capture");
  fs::create_directories(links + "/0123456789abcdef");
  std::ofstream(links + "/0123456789abcdef/0") << "a linked body";
  SetUp();
  EXPECT_FALSE(fs::exists(links));
  EXPECT_EQ(*store_->Get("a"), "kept");
}

}  // namespace
}  // namespace sheetlog
