#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "emulator/blob/blob_presigner.h"
#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

namespace fs = std::filesystem;

std::string Md5Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), digest, &n, EVP_md5(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

// Deterministic, non-repeating-ish bytes, so a misplaced chunk would be noticed.
std::string Pattern(size_t n, uint32_t seed) {
  std::string out(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = static_cast<char>(x >> 24);
  }
  return out;
}

// Regular files under `dir`, recursively (paths relative to it).
std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// One source for both stores (blob_fixture.h). Assertions about files on disk hold for
// the directory store only; cases whose subject is the directory store's own layout,
// recovery or locking are DirectoryBlobStoreTest's.
class BlobStoreTest : public testing::BlobStoreKindTest {};
class DirectoryBlobStoreTest : public testing::BlobStoreKindTest {};

TEST_P(BlobStoreTest, PutGetHeadDeleteRoundTrip) {
  auto store = OpenStore();
  BlobPutOptions options;
  options.content_type = "text/plain";
  auto put = store->Put("greetings/hello.txt", "hello", options);
  ASSERT_OK(put);
  EXPECT_EQ(put->size, 5);
  EXPECT_EQ(put->etag, "5d41402abc4b2a76b9719d911017c592");  // md5("hello")
  EXPECT_EQ(put->created_micros, clock_.NowMicros());

  clock_.AdvanceSeconds(10);
  BlobInfo info;
  auto body = store->Get("greetings/hello.txt", &info);
  ASSERT_OK(body);
  EXPECT_EQ(*body, "hello");
  EXPECT_EQ(info.etag, put->etag);
  auto head = store->Head("greetings/hello.txt");
  ASSERT_OK(head);
  EXPECT_EQ(head->key, "greetings/hello.txt");
  EXPECT_EQ(head->size, 5);
  EXPECT_EQ(head->content_type, "text/plain");
  // Not the read time. S3: an object without tags has no mirror row, and its created
  // time is the store's LastModified, on the store's clock (s3_blob_store.h).
  if (IsDirectory()) {
    EXPECT_EQ(head->created_micros, put->created_micros);
  }
  EXPECT_EQ(store->Stats().objects, 1);
  EXPECT_EQ(store->Stats().bytes, 5);

  // Empty body, default content type.
  auto empty = store->Put("empty", "");
  ASSERT_OK(empty);
  EXPECT_EQ(empty->etag, "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(empty->content_type, "application/octet-stream");
  EXPECT_EQ(store->Get("empty").value(), "");

  ASSERT_OK(store->Delete("greetings/hello.txt"));
  EXPECT_TRUE(store->Head("greetings/hello.txt").status().IsNotFound());
  EXPECT_TRUE(store->Get("greetings/hello.txt").status().IsNotFound());
  EXPECT_OK(store->Delete("greetings/hello.txt"));  // idempotent
  EXPECT_OK(store->Delete("never/existed"));
  EXPECT_EQ(store->Stats().objects, 1);
  EXPECT_EQ(store->Stats().bytes, 0);
  // The emptied directories are gone too.
  if (IsDirectory()) {
    EXPECT_FALSE(fs::exists(Root() + "/objects/greetings"));
  }
}

// S3's conditional writes: put-if-absent and put-if-etag, decided at the commit.
TEST_P(BlobStoreTest, ConditionalPutsStoreOnlyWhenTheConditionHolds) {
  auto store = OpenStore();
  BlobPutOptions if_absent;
  if_absent.if_none_match = true;
  auto first = store->Put("claims/1", "a", if_absent);
  ASSERT_OK(first);
  EXPECT_TRUE(store->Put("claims/1", "b", if_absent).status().IsConditionFailed());
  BlobPutOptions if_etag;
  if_etag.if_match = "0123";
  EXPECT_TRUE(store->Put("claims/1", "c", if_etag).status().IsConditionFailed());
  EXPECT_TRUE(store->Put("claims/2", "c", if_etag).status().IsConditionFailed())
      << "If-Match on no object fails";
  if_etag.if_match = first->etag;
  auto second = store->Put("claims/1", "d", if_etag);
  ASSERT_OK(second);
  // The etag moved on: the old one no longer matches.
  EXPECT_TRUE(store->Put("claims/1", "e", if_etag).status().IsConditionFailed());
  EXPECT_EQ(store->Get("claims/1").value(), "d");
  EXPECT_TRUE(store->Head("claims/2").status().IsNotFound());
  EXPECT_EQ(store->Stats().objects, 1);

  // Of puts racing for a free key, exactly one wins.
  std::atomic<int> won{0};
  std::vector<std::thread> racers;
  for (int i = 0; i < 8; ++i) {
    racers.emplace_back([&, i] {
      if (store->Put("claims/race", std::to_string(i), if_absent).ok()) ++won;
    });
  }
  for (std::thread& t : racers) t.join();
  EXPECT_EQ(won.load(), 1);
}

TEST_P(BlobStoreTest, CopyIsAnIndependentObjectOfTheVersionAsked) {
  auto store = OpenStore();
  BlobPutOptions source_options;
  source_options.tags = {{"auto-delete", "true"}};
  auto source = store->Put("uploads/a", "payload", source_options);
  ASSERT_OK(source);
  clock_.AdvanceSeconds(5);
  BlobPutOptions copy_options;
  copy_options.content_type = "text/plain";
  copy_options.tags = {{"kept", "yes"}};
  auto copy = store->Copy("uploads/a", "entries/a", copy_options, source->etag);
  ASSERT_OK(copy);
  EXPECT_EQ(copy->key, "entries/a");
  EXPECT_EQ(copy->size, 7);
  EXPECT_EQ(copy->etag, source->etag);  // same bytes, one part: the same MD5
  EXPECT_EQ(copy->created_micros, clock_.NowMicros());
  auto tags = store->GetTags("entries/a");
  ASSERT_OK(tags);
  EXPECT_EQ(*tags, (BlobTags{{"kept", "yes"}}));
  auto head = store->Head("entries/a");
  ASSERT_OK(head);
  EXPECT_EQ(head->content_type, "text/plain");

  // The source changes or goes: the copy stays as it was.
  ASSERT_OK(store->Put("uploads/a", "changed", source_options));
  ASSERT_OK(store->Delete("uploads/a"));
  auto kept = store->Get("entries/a");
  ASSERT_OK(kept);
  EXPECT_EQ(*kept, "payload");

  // Another version than the one asked for, or none: nothing is stored.
  ASSERT_OK(store->Put("uploads/b", "new", source_options));
  EXPECT_THAT(store->Copy("uploads/b", "entries/b", copy_options, source->etag),
              StatusIs(StatusCode::kConditionFailed));
  EXPECT_THAT(store->Copy("uploads/none", "entries/b", copy_options),
              StatusIs(StatusCode::kNotFound));
  EXPECT_THAT(store->Head("entries/b"), StatusIs(StatusCode::kNotFound));
  BlobPutOptions conditional = copy_options;
  conditional.if_none_match = true;
  EXPECT_THAT(store->Copy("uploads/b", "entries/b", conditional),
              StatusIs(StatusCode::kInvalidArgument));
}

TEST_P(BlobStoreTest, KeyAndItsPrefixCanBothBeObjects) {
  auto store = OpenStore();
  ASSERT_OK(store->Put("a", "parent"));
  ASSERT_OK(store->Put("a/b", "child"));
  ASSERT_OK(store->Put("a/b/c", "grandchild"));
  EXPECT_EQ(store->Get("a").value(), "parent");
  EXPECT_EQ(store->Get("a/b").value(), "child");
  EXPECT_EQ(store->Get("a/b/c").value(), "grandchild");
  ASSERT_OK(store->Delete("a/b"));
  EXPECT_TRUE(store->Head("a/b").status().IsNotFound());
  EXPECT_EQ(store->Get("a").value(), "parent");
  EXPECT_EQ(store->Get("a/b/c").value(), "grandchild");
  ASSERT_OK(store->Delete("a"));
  ASSERT_OK(store->Delete("a/b/c"));
  if (IsDirectory()) {
    EXPECT_TRUE(fs::is_empty(Root() + "/objects"));
  }
  EXPECT_TRUE(store->List({}).value().keys.empty());
  EXPECT_EQ(store->Stats().objects, 0);
}

TEST_P(DirectoryBlobStoreTest, OverwriteIsAtomicForConcurrentReaders) {
  auto store = OpenStore();
  const std::string a = Pattern(300 * 1024, 1);
  const std::string b = Pattern(200 * 1024 + 7, 2);
  const std::string etag_a = Md5Hex(a), etag_b = Md5Hex(b);
  ASSERT_OK(store->Put("doc", a));

  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, torn{0};
  auto reader = [&] {
    while (!done.load()) {
      BlobInfo info;
      auto body = store->Get("doc", &info);
      if (!body.ok()) {
        torn++;  // the object must never be missing while it is being replaced
        continue;
      }
      bool is_a = *body == a && info.etag == etag_a && info.size == int64_t(a.size());
      bool is_b = *body == b && info.etag == etag_b && info.size == int64_t(b.size());
      if (!is_a && !is_b) torn++;
      reads++;
    }
  };
  std::thread r1(reader), r2(reader);
  for (int i = 0; i < 150; ++i) {
    ASSERT_OK(store->Put("doc", i % 2 ? a : b));
  }
  // Keep writing until both readers have overlapped with some writes.
  for (int i = 0; reads.load() < 50 && i < 100000; ++i) {
    ASSERT_OK(store->Put("doc", i % 2 ? a : b));
  }
  done = true;
  r1.join();
  r2.join();
  EXPECT_GE(reads.load(), 50);
  EXPECT_EQ(torn.load(), 0);
  // Old bodies do not pile up: one body and one metadata file.
  EXPECT_EQ(FilesUnder(Root() + "/objects/doc").size(), 2u);
  EXPECT_TRUE(fs::is_empty(Root() + "/tmp"));
  EXPECT_EQ(store->Stats().objects, 1);
}

TEST_P(DirectoryBlobStoreTest, OpenReaderKeepsItsVersionAcrossOverwriteAndDelete) {
  auto store = OpenStore();
  ASSERT_OK(store->Put("k", "version one"));
  auto reader = store->OpenReader("k");
  ASSERT_OK(reader);
  ASSERT_OK(store->Put("k", "version two, longer"));
  EXPECT_EQ((*reader)->ReadAt(0, -1).value(), "version one");
  ASSERT_OK(store->Delete("k"));
  EXPECT_EQ((*reader)->ReadAt(8, 3).value(), "one");
  EXPECT_EQ((*reader)->info().size, 11);
}

TEST_P(BlobStoreTest, RangedAndChunkedReads) {
  auto store = OpenStore();
  const std::string body = Pattern(10000, 3);
  ASSERT_OK(store->Put("r", body));
  EXPECT_EQ(store->GetRange("r", 0, 10).value(), body.substr(0, 10));
  EXPECT_EQ(store->GetRange("r", 9990, 100).value(), body.substr(9990));  // clipped
  EXPECT_EQ(store->GetRange("r", 5000, -1).value(), body.substr(5000));
  EXPECT_EQ(store->GetRange("r", 10000, 5).value(), "");
  EXPECT_EQ(store->GetRange("r", 10001, 1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(store->GetRange("r", -1, 1).status().code(), StatusCode::kOutOfRange);

  auto reader = store->OpenReader("r");
  ASSERT_OK(reader);
  std::string streamed;
  int chunks = 0;
  ASSERT_TRUE((*reader)
                  ->Stream(
                      100, 5000,
                      [&](std::string_view chunk) {
                        EXPECT_LE(chunk.size(), 1024u);
                        streamed.append(chunk);
                        ++chunks;
                        return Status::OK();
                      },
                      1024)
                  .ok());
  EXPECT_EQ(streamed, body.substr(100, 5000));
  EXPECT_EQ(chunks, 5);
  // A sink error stops the stream and is returned.
  int calls = 0;
  Status stopped = (*reader)->Stream(
      0, -1,
      [&](std::string_view) {
        ++calls;
        return Unavailable("client went away");
      },
      1024);
  EXPECT_EQ(stopped.code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls, 1);
}

TEST_P(BlobStoreTest, StreamingPutOfLargeBodyIsInvisibleUntilCommit) {
  auto store = OpenStore();
  constexpr size_t kChunk = 64 * 1024;
  constexpr size_t kTotal = 20 * 1024 * 1024;
  auto writer =
      store->BeginPut("uploads/big.bin", {"application/zip", {{"auto-delete", "true"}}});
  ASSERT_OK(writer);
  EVP_MD_CTX* md5 = EVP_MD_CTX_new();
  EVP_DigestInit_ex(md5, EVP_md5(), nullptr);
  for (size_t at = 0; at < kTotal; at += kChunk) {
    std::string chunk = Pattern(kChunk, static_cast<uint32_t>(at / kChunk));
    EVP_DigestUpdate(md5, chunk.data(), chunk.size());
    ASSERT_OK((*writer)->Append(chunk));
    if (at == kTotal / 2) {
      EXPECT_TRUE(store->Head("uploads/big.bin").status().IsNotFound());
      EXPECT_TRUE(store->List({}).value().keys.empty());
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(md5, digest, &n);
  EVP_MD_CTX_free(md5);
  std::string expected_etag;
  for (unsigned int i = 0; i < n; ++i) {
    static constexpr char kHex[] = "0123456789abcdef";
    expected_etag += kHex[digest[i] >> 4];
    expected_etag += kHex[digest[i] & 15];
  }
  EXPECT_EQ((*writer)->bytes_written(), int64_t(kTotal));
  auto info = (*writer)->Commit();
  ASSERT_OK(info);
  EXPECT_EQ(info->size, int64_t(kTotal));
  // S3: a multipart object's etag is the store's own (AWS: MD5 of the parts' MD5s).
  if (IsDirectory()) {
    EXPECT_EQ(info->etag, expected_etag);
  }
  EXPECT_EQ(store->Head("uploads/big.bin").value().etag, info->etag);
  EXPECT_EQ(info->tags.at("auto-delete"), "true");
  EXPECT_EQ((*writer)->Append("more").code(), StatusCode::kFailedPrecondition);

  // Read it back in chunks and compare with the pattern.
  auto reader = store->OpenReader("uploads/big.bin");
  ASSERT_OK(reader);
  size_t at = 0;
  bool same = true;
  ASSERT_TRUE((*reader)
                  ->Stream(
                      0, -1,
                      [&](std::string_view chunk) {
                        same &=
                            chunk == Pattern(kChunk, static_cast<uint32_t>(at / kChunk));
                        at += chunk.size();
                        return Status::OK();
                      },
                      kChunk)
                  .ok());
  EXPECT_EQ(at, kTotal);
  EXPECT_TRUE(same);
  EXPECT_EQ(store->Stats().bytes, int64_t(kTotal));
}

TEST_P(BlobStoreTest, AbortedOrAbandonedWriterLeavesNothing) {
  auto store = OpenStore();
  ASSERT_OK(store->Put("keep", "old"));
  {
    auto writer = store->BeginPut("keep");
    ASSERT_OK(writer);
    ASSERT_OK((*writer)->Append(Pattern(5 << 20, 9)));
    (*writer)->Abort();
    EXPECT_EQ((*writer)->Commit().status().code(), StatusCode::kFailedPrecondition);
  }
  {
    auto writer = store->BeginPut("new/object");
    ASSERT_OK(writer);
    ASSERT_OK((*writer)->Append("partial"));
  }  // destroyed without Commit
  EXPECT_EQ(store->Get("keep").value(), "old");
  EXPECT_TRUE(store->Head("new/object").status().IsNotFound());
  if (IsDirectory()) {
    EXPECT_TRUE(fs::is_empty(Root() + "/tmp"));
    EXPECT_FALSE(fs::exists(Root() + "/objects/new"));
  }
  EXPECT_EQ(store->Stats().objects, 1);
  EXPECT_EQ(store->Stats().bytes, 3);
}

TEST_P(BlobStoreTest, OversizedPutIsRefusedAndStoresNothing) {
  auto store = OpenStore(/*max_object_bytes=*/1 << 20);
  ASSERT_OK(store->Put("exact", std::string(1 << 20, 'x')));
  ASSERT_OK(store->Put("victim", "old body"));

  auto whole = store->Put("victim", std::string((1 << 20) + 1, 'y'));
  EXPECT_EQ(whole.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(whole.status().message().find("maximum object size"), std::string::npos);

  auto writer = store->BeginPut("victim");
  ASSERT_OK(writer);
  Status status;
  int appends = 0;
  while (status.ok() && appends < 100) {
    status = (*writer)->Append(std::string(100 * 1024, 'z'));
    ++appends;
  }
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(appends, 11);  // 10 x 100 KiB fit in 1 MiB, the 11th does not
  EXPECT_EQ((*writer)->Commit().status().code(), StatusCode::kResourceExhausted);
  if (IsDirectory()) {
    EXPECT_TRUE(fs::is_empty(Root() + "/tmp"));  // gone at once
  }
  EXPECT_EQ(store->Get("victim").value(), "old body");
  EXPECT_EQ(store->Stats().objects, 2);
}

TEST_P(BlobStoreTest, InvalidKeysAreRejectedByEveryOperation) {
  auto store = OpenStore();
  const std::vector<std::string> bad = {"..",
                                        "../escape",
                                        "a/../../escape",
                                        "/abs",
                                        "/etc/passwd",
                                        std::string("nul\0byte", 8),
                                        "back\\slash",
                                        "part/" + std::string(256, 'p'),
                                        "empty//part",
                                        "trailing/",
                                        ""};
  for (const std::string& key : bad) {
    SCOPED_TRACE(QuoteForMessage(key));
    EXPECT_EQ(store->Put(key, "x").status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store->BeginPut(key).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store->Get(key).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store->Head(key).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store->Delete(key).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store->PutTags(key, {}).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store->GetTags(key).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(fs::exists(dir_.File("escape")));
  if (IsDirectory()) {
    EXPECT_FALSE(fs::exists(Root() + "/escape"));
    EXPECT_TRUE(fs::is_empty(Root() + "/objects"));
  }
  EXPECT_TRUE(store->List({}).value().keys.empty());
}

TEST_P(BlobStoreTest, TagsPutGetDeleteKeepBodyAndCreatedTime) {
  auto store = OpenStore();
  auto put = store->Put("upload/1", "payload", {"", {{"auto-delete", "true"}}});
  ASSERT_OK(put);
  EXPECT_EQ(store->GetTags("upload/1").value(), (BlobTags{{"auto-delete", "true"}}));

  clock_.AdvanceSeconds(60);
  BlobTags replaced = {{"sheet", "s1"}, {"kind", "import"}};
  ASSERT_OK(store->PutTags("upload/1", replaced));
  EXPECT_EQ(store->GetTags("upload/1").value(), replaced);  // replaced, not merged
  ASSERT_OK(store->PutTags("upload/1", replaced));          // idempotent
  auto head = store->Head("upload/1");
  ASSERT_OK(head);
  EXPECT_EQ(head->etag, put->etag);
  EXPECT_EQ(head->created_micros, put->created_micros);
  EXPECT_EQ(store->Get("upload/1").value(), "payload");

  ASSERT_OK(store->DeleteTags("upload/1"));
  EXPECT_TRUE(store->GetTags("upload/1").value().empty());

  EXPECT_TRUE(store->GetTags("missing").status().IsNotFound());
  EXPECT_TRUE(store->PutTags("missing", replaced).IsNotFound());
  EXPECT_TRUE(store->Head("missing").status().IsNotFound());  // PutTags created nothing

  BlobTags eleven;
  for (int i = 0; i < 11; ++i) eleven["t" + std::to_string(i)] = "v";
  EXPECT_EQ(store->PutTags("upload/1", eleven).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutTags("upload/1", {{"", "v"}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutTags("upload/1", {{std::string(129, 'k'), "v"}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutTags("upload/1", {{"k", std::string(257, 'v')}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutTags("upload/1", {{"k", "line\nbreak"}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Put("x", "", {"text/plain\n", {}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      store->GetTags("upload/1").value().empty());  // failed calls changed nothing
}

TEST_P(BlobStoreTest, RestartSeesSameObjectsTagsSecretAndStats) {
  std::string signature;
  const int64_t expires = clock_.NowSeconds() + 600;
  {
    auto store = OpenStore();
    ASSERT_OK(store->Put("a/one", "1", {"text/plain", {{"auto-delete", "true"}}}));
    ASSERT_OK(store->Put("a/two", "22"));
    ASSERT_OK(store->Put("b", "333"));
    ASSERT_OK(store->PutTags("a/two", {{"x", "y"}}));
    if (IsDirectory()) {
      ASSERT_NE(store->server_presigner(), nullptr);
      signature = store->server_presigner()->Sign("PUT", "a/one", expires);
      EXPECT_OK(store->server_presigner()->Verify("PUT", "a/one", expires, signature));
    }
  }
  auto store = OpenStore();
  EXPECT_EQ(store->Get("a/one").value(), "1");
  EXPECT_EQ(store->Head("a/one").value().content_type, "text/plain");
  EXPECT_EQ(store->GetTags("a/one").value(), (BlobTags{{"auto-delete", "true"}}));
  EXPECT_EQ(store->GetTags("a/two").value(), (BlobTags{{"x", "y"}}));
  EXPECT_EQ(store->Get("b").value(), "333");
  EXPECT_EQ(store->Stats().objects, 3);
  EXPECT_EQ(store->Stats().bytes, 6);
  if (IsS3()) {
    // The store's own presigned URLs: the server has none to sign or check.
    EXPECT_EQ(store->server_presigner(), nullptr);
    EXPECT_TRUE(store->PresignedRequestsBypassServer());
    return;
  }
  const BlobPresigner* presigner = store->server_presigner();
  ASSERT_NE(presigner, nullptr);
  EXPECT_FALSE(store->PresignedRequestsBypassServer());
  EXPECT_EQ(presigner->Sign("PUT", "a/one", expires), signature);
  EXPECT_OK(presigner->Verify("PUT", "a/one", expires, signature));
  EXPECT_EQ(presigner->Verify("PUT", "a/two", expires, signature).message(),
            "signature does not match");
  clock_.AdvanceSeconds(600);
  EXPECT_EQ(presigner->Verify("PUT", "a/one", expires, signature).message(),
            "presigned URL expired");
  EXPECT_EQ(store->Stats().objects, 3);
  EXPECT_EQ(store->Stats().bytes, 6);
}

TEST_P(DirectoryBlobStoreTest, SecondOpenOfSameDirectoryIsRefused) {
  auto store = OpenStore();
  BlobStoreOptions options;
  options.root = Root();
  auto second = DirectoryBlobStore::Open(options, &clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  store.reset();
  EXPECT_OK(DirectoryBlobStore::Open(options, &clock_));  // the lock died with the store
}

TEST_P(DirectoryBlobStoreTest,
       CrashBetweenBodyAndCommitLeavesOldObjectAndDebrisIsRemoved) {
  auto store = OpenStore();
  ASSERT_OK(store->Put("doc", "old"));
  faults_.Arm(FaultPoint::kBlobPutAfterBody, FaultSpec{});
  auto failed = store->Put("doc", "new body");
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->Get("doc").value(), "old");
  EXPECT_EQ(store->Stats().bytes, 3);
  // The uncommitted body sits beside the committed one, as after a crash.
  EXPECT_EQ(FilesUnder(Root() + "/objects/doc").size(), 3u);

  // A put to a key that never existed, interrupted the same way, shows nothing.
  faults_.Arm(FaultPoint::kBlobPutAfterBody, FaultSpec{});
  EXPECT_FALSE(store->Put("fresh/key", "never committed").ok());
  EXPECT_TRUE(store->Head("fresh/key").status().IsNotFound());
  EXPECT_TRUE(store->List({}).value().keys.size() == 1);

  // Leftovers of a crashed process in tmp/.
  { std::ofstream(Root() + "/tmp/0123.body") << "half a body"; }
  store.reset();
  store = OpenStore();  // recovery
  EXPECT_EQ(store->Get("doc").value(), "old");
  EXPECT_EQ(FilesUnder(Root() + "/objects/doc").size(), 2u);
  EXPECT_FALSE(fs::exists(Root() + "/objects/fresh"));
  EXPECT_TRUE(fs::is_empty(Root() + "/tmp"));
  EXPECT_EQ(store->Stats().objects, 1);
  EXPECT_EQ(store->Stats().bytes, 3);
}

TEST_P(DirectoryBlobStoreTest, CrashAfterCommitKeepsNewObjectAndOldBodyIsRemoved) {
  auto store = OpenStore();
  ASSERT_OK(store->Put("doc", "old"));
  faults_.Arm(FaultPoint::kBlobPutAfterCommit, FaultSpec{});
  EXPECT_FALSE(store->Put("doc", "new").ok());  // the client saw an error...
  EXPECT_EQ(store->Get("doc").value(), "new");  // ...but the put had committed
  EXPECT_EQ(FilesUnder(Root() + "/objects/doc").size(), 3u);
  store.reset();
  store = OpenStore();
  EXPECT_EQ(store->Get("doc").value(), "new");
  EXPECT_EQ(FilesUnder(Root() + "/objects/doc").size(), 2u);
  EXPECT_EQ(store->Stats().bytes, 3);
}

TEST_P(DirectoryBlobStoreTest, UnreadableMetadataIsReportedNotGuessed) {
  auto store = OpenStore();
  ASSERT_OK(store->Put("damaged", "body", {"", {{"auto-delete", "true"}}}));
  ASSERT_OK(store->Put("fine", "ok"));
  { std::ofstream(Root() + "/objects/damaged/\\meta", std::ios::trunc) << "{\"v\":1,"; }
  EXPECT_EQ(store->Head("damaged").status().code(), StatusCode::kInternal);
  EXPECT_EQ(store->Get("damaged").status().code(), StatusCode::kInternal);
  EXPECT_EQ(store->PutTags("damaged", {}).code(), StatusCode::kInternal);
  auto list = store->List({});
  ASSERT_OK(list);
  ASSERT_EQ(list->keys.size(), 2u);
  EXPECT_EQ(list->keys[0].key, "damaged");
  EXPECT_EQ(list->keys[0].size, -1);
  EXPECT_EQ(list->keys[1].size, 2);
  ASSERT_OK(store->Delete("damaged"));  // an explicit delete still works
  EXPECT_TRUE(store->Head("damaged").status().IsNotFound());
  EXPECT_FALSE(fs::exists(Root() + "/objects/damaged"));
}

TEST_P(DirectoryBlobStoreTest, OpenRejectsBadOptions) {
  BlobStoreOptions options;
  EXPECT_EQ(DirectoryBlobStore::Open(options, &clock_).status().code(),
            StatusCode::kInvalidArgument);
  options.root = Root();
  options.max_object_bytes = 0;
  EXPECT_EQ(DirectoryBlobStore::Open(options, &clock_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(BlobStoreTest, FaultPointsFailWithoutChangingAnything) {
  auto store = OpenStore();
  ASSERT_OK(store->Put("k", "v", {"", {{"a", "b"}}}));
  faults_.Arm(FaultPoint::kBlobPut, FaultSpec{});
  EXPECT_EQ(store->Put("k", "w").status().code(), StatusCode::kUnavailable);
  faults_.Arm(FaultPoint::kBlobDelete, FaultSpec{});
  EXPECT_EQ(store->Delete("k").code(), StatusCode::kUnavailable);
  faults_.Arm(FaultPoint::kBlobPutTags, FaultSpec{});
  EXPECT_EQ(store->PutTags("k", {}).code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->Get("k").value(), "v");
  EXPECT_EQ(store->GetTags("k").value(), (BlobTags{{"a", "b"}}));
  if (IsDirectory()) {
    EXPECT_TRUE(fs::is_empty(Root() + "/tmp"));
  }
}

TEST_P(DirectoryBlobStoreTest, SyncedStoreWorksTheSame) {
  BlobStoreOptions options;
  options.root = Root();
  options.sync = true;
  auto store = DirectoryBlobStore::Open(options, &clock_);
  ASSERT_OK(store);
  ASSERT_OK((*store)->Put("deep/er/key", "durable"));
  ASSERT_OK((*store)->PutTags("deep/er/key", {{"t", "1"}}));
  EXPECT_EQ((*store)->Get("deep/er/key").value(), "durable");
  ASSERT_OK((*store)->Delete("deep/er/key"));
  EXPECT_TRUE((*store)->Head("deep/er/key").status().IsNotFound());
}

INSTANTIATE_TEST_SUITE_P(Directory, BlobStoreTest,
                         ::testing::Values(testing::BlobStoreKind::kDirectory));
INSTANTIATE_TEST_SUITE_P(S3, BlobStoreTest,
                         ::testing::Values(testing::BlobStoreKind::kS3));
INSTANTIATE_TEST_SUITE_P(Directory, DirectoryBlobStoreTest,
                         ::testing::Values(testing::BlobStoreKind::kDirectory));

}  // namespace
}  // namespace sheetlog
