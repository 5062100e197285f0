#include "emulator/blob/blob_presigner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "emulator/env/clock.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

constexpr int64_t kStart = 1767225600;  // ManualClock's default start, in seconds

std::unique_ptr<BlobPresigner> Load(const testing::TempDir& dir, Clock* clock) {
  auto signer = BlobPresigner::LoadOrCreate(dir.File("secret"), clock);
  EXPECT_OK(signer);
  return std::move(signer).value();
}

TEST(BlobPresignerTest, ValidBeforeExpiryAndNotAtOrAfter) {
  testing::TempDir dir;
  ManualClock clock;
  auto signer = Load(dir, &clock);
  const int64_t expires = kStart + 900;
  std::string sig = signer->Sign("PUT", "uploads/s1/body", expires);
  EXPECT_EQ(sig.size(), 64u);
  EXPECT_OK(signer->Verify("PUT", "uploads/s1/body", expires, sig));
  clock.AdvanceSeconds(899);
  clock.Advance(999999);  // the last microsecond before expiry
  EXPECT_OK(signer->Verify("PUT", "uploads/s1/body", expires, sig));
  clock.Advance(1);
  Status expired = signer->Verify("PUT", "uploads/s1/body", expires, sig);
  EXPECT_EQ(expired.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(expired.message(), "presigned URL expired");
}

TEST(BlobPresignerTest, AnyChangedByteFails) {
  testing::TempDir dir;
  ManualClock clock;
  auto signer = Load(dir, &clock);
  const int64_t expires = kStart + 3600;
  const std::string key = "uploads/s1/body";
  const std::string sig = signer->Sign("PUT", key, expires);
  auto expect_mismatch = [&](std::string_view method, std::string_view k, int64_t exp,
                             std::string_view s) {
    Status status = signer->Verify(method, k, exp, s);
    EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << method << " " << k;
    EXPECT_EQ(status.message(), "signature does not match");
  };
  for (size_t i = 0; i < sig.size(); ++i) {
    std::string changed = sig;
    changed[i] = changed[i] == '0' ? '1' : '0';
    expect_mismatch("PUT", key, expires, changed);
  }
  for (size_t i = 0; i < key.size(); ++i) {
    std::string changed = key;
    changed[i] ^= 1;
    expect_mismatch("PUT", changed, expires, sig);
  }
  expect_mismatch("GET", key, expires, sig);
  expect_mismatch("put", key, expires, sig);
  expect_mismatch("PUTX", key, expires, sig);
  expect_mismatch("PUT", key, expires + 1, sig);
  expect_mismatch("PUT", key, expires, sig.substr(0, 63));
  expect_mismatch("PUT", key, expires, sig + "0");
  expect_mismatch("PUT", key, expires, std::string(64, 'g'));
  expect_mismatch("PUT", key, expires, "");
  // Field boundaries matter: moving bytes between method and key changes the MAC.
  expect_mismatch("PUT\nuploads", "s1/body", expires,
                  signer->Sign("PUT\nuploads", "s1/body", expires));
  // Upper-case hex is the same signature.
  std::string upper = sig;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_OK(signer->Verify("PUT", key, expires, upper));
}

TEST(BlobPresignerTest, ForgedSignatureIsRejectedBeforeExpiryIsRevealed) {
  testing::TempDir dir;
  ManualClock clock;
  auto signer = Load(dir, &clock);
  Status status = signer->Verify("GET", "k", kStart - 10, std::string(64, '0'));
  EXPECT_EQ(status.message(), "signature does not match");
}

TEST(BlobPresignerTest, SecretIsPrivatePersistentAndPerDirectory) {
  testing::TempDir dir;
  ManualClock clock;
  std::string sig = Load(dir, &clock)->Sign("GET", "k", kStart + 60);
  struct stat st;
  ASSERT_EQ(::stat(dir.File("secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  EXPECT_EQ(st.st_size, 32);
  EXPECT_EQ(Load(dir, &clock)->Sign("GET", "k", kStart + 60), sig);  // reloaded

  testing::TempDir other;
  EXPECT_NE(Load(other, &clock)->Sign("GET", "k", kStart + 60), sig);

  // A loose mode is tightened.
  ASSERT_EQ(::chmod(dir.File("secret").c_str(), 0644), 0);
  Load(dir, &clock);
  ASSERT_EQ(::stat(dir.File("secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
}

TEST(BlobPresignerTest, TruncatedSecretIsRefusedNotReplaced) {
  testing::TempDir dir;
  ManualClock clock;
  { std::ofstream(dir.File("secret")) << "short"; }
  auto signer = BlobPresigner::LoadOrCreate(dir.File("secret"), &clock);
  ASSERT_FALSE(signer.ok());
  EXPECT_EQ(signer.status().code(), StatusCode::kInternal);
  struct stat st;
  ASSERT_EQ(::stat(dir.File("secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 5);
}

}  // namespace
}  // namespace sheetlog
