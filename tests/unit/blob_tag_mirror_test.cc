// BlobTagMirror (emulator/blob/blob_tag_mirror.h): the S3 store's record of tags in the
// table store, on its own (the S3 store's use of it: blob_s3_test and the conformance
// suite's S3 cases). And CheckBlobPutConditions, the one check of a put's conditions
// that both stores and the API run.
#include "emulator/blob/blob_tag_mirror.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/sqlite/database.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

class BlobTagMirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenEmulatorTestDatabase(dir_.File("mirror.db"), &clock_);
    ASSERT_NE(db_, nullptr);
    mirror_ = std::make_unique<BlobTagMirror>(db_.get());
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<BlobTagMirror> mirror_;
};

TEST_F(BlobTagMirrorTest, RowsAreWrittenReadAndDeletedByKey) {
  EXPECT_EQ(mirror_->Read("a").value(), std::nullopt);
  ASSERT_OK(mirror_->Write("a", {{{"auto-delete", "true"}}, 10}));
  ASSERT_OK(mirror_->Write("b", {{}, 20}));  // a row without tags: an untagged object
  std::optional<BlobTagMirror::Row> a = mirror_->Read("a").value();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->tags, (BlobTags{{"auto-delete", "true"}}));
  EXPECT_EQ(a->created_micros, 10);
  ASSERT_OK(mirror_->Write("a", {{{"sheet", "s1"}}, 30}));  // replaces the row
  EXPECT_EQ(mirror_->Read("a").value()->tags, (BlobTags{{"sheet", "s1"}}));

  std::vector<std::optional<BlobTagMirror::Row>> rows =
      mirror_->ReadMany({"b", "missing", "a"}).value();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]->created_micros, 20);
  EXPECT_FALSE(rows[1].has_value());
  EXPECT_EQ(rows[2]->created_micros, 30);
  EXPECT_TRUE(mirror_->ReadMany({}).value().empty());

  ASSERT_OK(mirror_->Delete({"a", "missing"}));  // a key without a row is OK
  EXPECT_EQ(mirror_->Read("a").value(), std::nullopt);
  EXPECT_TRUE(mirror_->Read("b").value().has_value());
  ASSERT_OK(mirror_->Delete({}));
}

// ForEach reads a page at a time and has ended each read before visiting its rows, so a
// visitor may write the mirror (the sweep deletes rows as it goes).
TEST_F(BlobTagMirrorTest, ForEachVisitsEveryRowInKeyOrderAcrossPages) {
  constexpr int kRows = 1234;  // more than two pages
  for (int i = 0; i < kRows; ++i) {
    char key[16];
    std::snprintf(key, sizeof(key), "k%05d", i);
    ASSERT_OK(mirror_->Write(key, {{{"n", std::to_string(i)}}, i}));
  }
  std::vector<std::string> seen;
  ASSERT_OK(mirror_->ForEach([&](const std::string& key, const BlobTagMirror::Row& row) {
    EXPECT_EQ(row.tags.at("n"), std::to_string(row.created_micros));
    seen.push_back(key);
    EXPECT_OK(mirror_->Delete({key}));
    return true;
  }));
  ASSERT_EQ(seen.size(), static_cast<size_t>(kRows));
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(mirror_->DeleteAll().value(), 0) << "the visitor deleted every row";

  ASSERT_OK(mirror_->Write("x", {{}, 1}));
  ASSERT_OK(mirror_->Write("y", {{}, 2}));
  int visited = 0;
  ASSERT_OK(mirror_->ForEach([&](const std::string&, const BlobTagMirror::Row&) {
    ++visited;
    return false;  // stops at once
  }));
  EXPECT_EQ(visited, 1);
}

TEST_F(BlobTagMirrorTest, DeleteAllEmptiesTheTable) {
  ASSERT_OK(mirror_->Write("uploads/s1/u1", {{{"auto-delete", "true"}}, 1}));
  ASSERT_OK(mirror_->Write("uploads/s1/u2", {{{"auto-delete", "true"}}, 2}));
  EXPECT_EQ(mirror_->DeleteAll().value(), 2);
  EXPECT_EQ(mirror_->Read("uploads/s1/u1").value(), std::nullopt);
  EXPECT_EQ(mirror_->DeleteAll().value(), 0);
}

TEST(BlobPutConditionsTest, OneCheckJudgesBothConditionsAgainstTheCurrentEtag) {
  BlobPutOptions none;
  EXPECT_FALSE(HasBlobPutConditions(none));
  EXPECT_OK(CheckBlobPutConditions("k", none, std::nullopt));
  EXPECT_OK(CheckBlobPutConditions("k", none, "e1"));

  BlobPutOptions if_absent;
  if_absent.if_none_match = true;
  EXPECT_TRUE(HasBlobPutConditions(if_absent));
  EXPECT_OK(CheckBlobPutConditions("k", if_absent, std::nullopt));
  Status exists = CheckBlobPutConditions("k", if_absent, "e1");
  EXPECT_TRUE(exists.IsConditionFailed());
  EXPECT_EQ(exists.message(), "put on k: an object exists (If-None-Match: *)");

  BlobPutOptions if_etag;
  if_etag.if_match = "e1";
  EXPECT_TRUE(HasBlobPutConditions(if_etag));
  EXPECT_OK(CheckBlobPutConditions("k", if_etag, "e1"));
  Status other = CheckBlobPutConditions("k", if_etag, "e2");
  EXPECT_TRUE(other.IsConditionFailed());
  EXPECT_EQ(other.message(), "put on k: the object's etag is not e1 (If-Match)");
  EXPECT_TRUE(CheckBlobPutConditions("k", if_etag, std::nullopt).IsConditionFailed())
      << "If-Match on no object fails";
}

}  // namespace
}  // namespace sheetlog
