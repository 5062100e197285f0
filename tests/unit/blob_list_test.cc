// BlobStore::List: order, prefix/delimiter, paging with continuation tokens, compared
// against a std::set model of the same keys.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

// An item of a listing as one string: keys as-is, common prefixes marked with a '|'
// (never part of the keys used here) so both kinds compare in one sequence.
std::vector<std::string> Flatten(const BlobListResult& page) {
  std::vector<std::string> items;
  for (const auto& info : page.keys) items.push_back(info.key);
  for (const auto& prefix : page.prefixes) items.push_back(prefix + "|");
  return items;
}

// What S3 would list for `keys`, without paging.
std::vector<std::string> Model(const std::set<std::string>& keys,
                               const std::string& prefix, bool delimited) {
  std::set<std::string> items;
  for (const auto& key : keys) {
    if (!key.starts_with(prefix)) continue;
    size_t slash = delimited ? key.find('/', prefix.size()) : std::string::npos;
    items.insert(slash == std::string::npos ? key : key.substr(0, slash + 1) + "|");
  }
  // Sort by the real string (the marker sorts after '/', which is what we want: a
  // prefix "x/" compares as "x/" against other keys).
  std::vector<std::string> out(items.begin(), items.end());
  auto real = [](const std::string& s) {
    return s.ends_with("|") ? s.substr(0, s.size() - 1) : s;
  };
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return real(a) < real(b);
  });
  return out;
}

// One source for both stores (blob_fixture.h).
class BlobListTest : public testing::BlobStoreKindTest {
 protected:
  void SetUp() override {
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
  }

  void PutAll(const std::set<std::string>& keys) {
    for (const auto& key : keys) ASSERT_OK(store_->Put(key, key)) << key;
  }

  // Every page of a listing, in order; items sorted into one sequence per page.
  std::vector<std::string> ListAll(const std::string& prefix, bool delimited, int limit,
                                   int* pages = nullptr) {
    std::vector<std::string> all;
    BlobListOptions options;
    options.prefix = prefix;
    options.delimiter = delimited ? "/" : "";
    options.limit = limit;
    for (int page = 1;; ++page) {
      auto result = store_->List(options);
      EXPECT_OK(result);
      if (!result.ok()) break;
      std::vector<std::string> items = Flatten(*result);
      EXPECT_LE(items.size(), size_t(limit));
      auto real = [](const std::string& s) {
        return s.ends_with("|") ? s.substr(0, s.size() - 1) : s;
      };
      std::sort(
          items.begin(), items.end(),
          [&](const std::string& a, const std::string& b) { return real(a) < real(b); });
      all.insert(all.end(), items.begin(), items.end());
      if (pages != nullptr) *pages = page;
      if (!result->continuation) break;
      EXPECT_EQ(items.size(), size_t(limit));  // only a full page may continue
      options.continuation = *result->continuation;
      if (page > 100000) break;
    }
    return all;
  }

  std::unique_ptr<BlobStore> store_;
};
using DirectoryBlobListTest = BlobListTest;

TEST_P(BlobListTest, ByteOrderAcrossDirectoryBoundaries) {
  // '!' < '/' < '0': "a!" sorts between "a" and everything under "a/".
  std::set<std::string> keys = {"a",     "a!", "a!/x", "a/b", "a/b!",
                                "a/b/c", "a0", "b",    "~"};
  PutAll(keys);
  EXPECT_EQ(ListAll("", false, 1000), Model(keys, "", false));
  EXPECT_EQ(ListAll("", false, 1000),
            (std::vector<std::string>{"a", "a!", "a!/x", "a/b", "a/b!", "a/b/c", "a0",
                                      "b", "~"}));
  EXPECT_EQ(ListAll("", true, 1000),
            (std::vector<std::string>{"a", "a!", "a!/|", "a/|", "a0", "b", "~"}));
  EXPECT_EQ(ListAll("a/", true, 1000),
            (std::vector<std::string>{"a/b", "a/b!", "a/b/|"}));
  EXPECT_EQ(ListAll("a/b", false, 1000),
            (std::vector<std::string>{"a/b", "a/b!", "a/b/c"}));
  EXPECT_EQ(ListAll("a/b", true, 1000),
            (std::vector<std::string>{"a/b", "a/b!", "a/b/|"}));
  auto page = store_->List({"a/", "/", 1000, ""});
  ASSERT_OK(page);
  ASSERT_EQ(page->keys.size(), 2u);
  EXPECT_EQ(page->keys[0].size, 3);  // listed keys carry their metadata
  EXPECT_EQ(page->keys[0].etag.size(), 32u);
  EXPECT_EQ(page->prefixes, (std::vector<std::string>{"a/b/"}));
  EXPECT_FALSE(page->continuation.has_value());
}

TEST_P(BlobListTest, RandomKeysMatchModelForEveryPrefixDelimiterAndPageSize) {
  std::mt19937 rng(42);
  const std::string alphabet = "ab!0~";
  std::set<std::string> keys;
  // Fewer on S3, where each of the ~900 listings of this case is a request.
  const size_t key_count = IsS3() ? 60 : 300;
  while (keys.size() < key_count) {
    std::string key;
    int parts = 1 + rng() % 3;
    for (int p = 0; p < parts; ++p) {
      if (p > 0) key += '/';
      int length = 1 + rng() % 3;
      for (int i = 0; i < length; ++i) key += alphabet[rng() % alphabet.size()];
    }
    keys.insert(key);
  }
  PutAll(keys);
  for (const std::string prefix :
       {"", "a", "a/", "ab", "b/a", "!", "0/0", "zz", "a/b/"}) {
    for (bool delimited : {false, true}) {
      std::vector<std::string> expected = Model(keys, prefix, delimited);
      for (int limit : {1, 7, 1000}) {
        SCOPED_TRACE("prefix=" + std::string(prefix) + " delimited=" +
                     std::to_string(delimited) + " limit=" + std::to_string(limit));
        EXPECT_EQ(ListAll(prefix, delimited, limit), expected);
      }
    }
  }
}

TEST_P(BlobListTest, ContinuationReturnsEveryStableKeyOnceWhileKeysChange) {
  std::set<std::string> stable;
  for (int i = 0; i < 200; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "d%d/k%03d", i % 4, i);
    stable.insert(name);
  }
  PutAll(stable);
  std::set<std::string> seen;
  std::vector<std::string> order;
  BlobListOptions options;
  options.limit = 9;
  std::mt19937 rng(7);
  int churn = 0;
  while (true) {
    auto page = store_->List(options);
    ASSERT_OK(page);
    for (const auto& info : page->keys) {
      order.push_back(info.key);
      if (stable.count(info.key)) {
        EXPECT_TRUE(seen.insert(info.key).second) << info.key;
      }
    }
    if (!page->continuation) break;
    options.continuation = *page->continuation;
    // Between pages: add keys before, after and right next to the position, and
    // delete some of the churn keys again.
    for (int i = 0; i < 5; ++i) {
      std::string key = "d" + std::to_string(rng() % 5) + "/k" +
                        std::to_string(rng() % 250) + "x" + std::to_string(churn++);
      ASSERT_OK(store_->Put(key, "new"));
      if (rng() % 2) {
        ASSERT_OK(store_->Delete(key));
      }
    }
    ASSERT_OK(store_->Put(order.back() + "!", "next to it"));
    ASSERT_TRUE(
        store_->Put("d0/" + std::string(1, char('a' + rng() % 26)), "early").ok());
  }
  EXPECT_EQ(seen, stable);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(std::adjacent_find(order.begin(), order.end()), order.end());  // no repeats
}

TEST_P(BlobListTest, ContinuationAfterCommonPrefixSkipsItsKeys) {
  PutAll({"p/1", "p/2", "p/3", "q", "r/1"});
  auto first = store_->List({"", "/", 1, ""});
  ASSERT_OK(first);
  EXPECT_EQ(first->prefixes, (std::vector<std::string>{"p/"}));
  ASSERT_TRUE(first->continuation.has_value());
  ASSERT_OK(store_->Put("p/0", "added under the returned prefix"));
  auto second = store_->List({"", "/", 1000, *first->continuation});
  ASSERT_OK(second);
  ASSERT_EQ(second->keys.size(), 1u);
  EXPECT_EQ(second->keys[0].key, "q");
  EXPECT_EQ(second->prefixes, (std::vector<std::string>{"r/"}));
  EXPECT_FALSE(second->continuation.has_value());
}

// A token minted for one listing used with another prefix silently answered
// an empty last page; it is refused, and still works where it belongs.
TEST_P(BlobListTest, ContinuationIsBoundToItsPrefixAndDelimiter) {
  PutAll({"a/1", "a/2", "a/3", "b/1", "b/2", "b/3"});
  auto first_a = store_->List({"a/", "/", 1, ""});
  ASSERT_OK(first_a);
  ASSERT_TRUE(first_a->continuation.has_value());

  auto wrong_prefix = store_->List({"b/", "/", 1000, *first_a->continuation});
  EXPECT_EQ(wrong_prefix.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_prefix.status().message().find("another listing"), std::string::npos)
      << wrong_prefix.status().ToString();
  auto wrong_delimiter = store_->List({"a/", "", 1000, *first_a->continuation});
  EXPECT_EQ(wrong_delimiter.status().code(), StatusCode::kInvalidArgument);

  auto rest_a = store_->List({"a/", "/", 1000, *first_a->continuation});
  ASSERT_OK(rest_a);
  ASSERT_EQ(rest_a->keys.size(), 2u);
  EXPECT_EQ(rest_a->keys[0].key, "a/2");
  // Repeatable: the same token gives the same page again.
  auto again = store_->List({"a/", "/", 1000, *first_a->continuation});
  ASSERT_OK(again);
  EXPECT_EQ(again->keys.size(), 2u);
}

TEST_P(BlobListTest, ManyObjectsInOneDirectoryPageExactly) {
  std::set<std::string> keys;
  for (int i = 0; i < 1100; ++i) keys.insert("flat/" + std::to_string(i * 7919 % 100003));
  PutAll(keys);
  int pages = 0;
  std::vector<std::string> all = ListAll("flat/", true, 500, &pages);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(all, std::vector<std::string>(keys.begin(), keys.end()));
}

TEST_P(DirectoryBlobListTest, EmptyDirectoriesAndDebrisAreNotPrefixes) {
  PutAll({"gone/deep/key", "kept/key"});
  ASSERT_OK(store_->Delete("gone/deep/key"));
  // A directory tree with no object in it (as a crash between unlink and rmdir leaves).
  std::filesystem::create_directories(dir_.File("blobs/objects/hollow/inner"));
  EXPECT_EQ(ListAll("", true, 1000), (std::vector<std::string>{"kept/|"}));
  EXPECT_EQ(ListAll("", false, 1000), (std::vector<std::string>{"kept/key"}));
}

TEST_P(BlobListTest, BadArgumentsAndHostilePrefixes) {
  PutAll({"a/b"});
  EXPECT_EQ(store_->List({"", "", 0, ""}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->List({"", "", 1001, ""}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->List({"", ",", 10, ""}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->List({"", "", 10, "not base64!"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->List({"", "", 10, "eGE"}).status().code(),  // "xa": bad kind
            StatusCode::kInvalidArgument);
  // Prefixes no key can have list nothing (and are never used as paths).
  for (const std::string prefix : {"../", "../../etc/", "/", "a//", "a/../a/", "a\\"}) {
    auto result = store_->List({prefix, "", 10, ""});
    ASSERT_OK(result) << prefix;
    EXPECT_TRUE(result->keys.empty()) << prefix;
    EXPECT_TRUE(result->prefixes.empty()) << prefix;
  }
}

INSTANTIATE_TEST_SUITE_P(Directory, BlobListTest,
                         ::testing::Values(testing::BlobStoreKind::kDirectory));
INSTANTIATE_TEST_SUITE_P(S3, BlobListTest,
                         ::testing::Values(testing::BlobStoreKind::kS3));
INSTANTIATE_TEST_SUITE_P(Directory, DirectoryBlobListTest,
                         ::testing::Values(testing::BlobStoreKind::kDirectory));

}  // namespace
}  // namespace sheetlog
