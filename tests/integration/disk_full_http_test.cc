// A full disk, for real: the server's data directory on a small tmpfs
// that the test fills. Appends, large bodies and sheet creation answer 507
// InsufficientStorage (never 413), the server keeps serving, and once space returns
// the same requests succeed with no restart and `verify` finds nothing wrong.
// Needs root to mount the tmpfs; skipped (saying so) where mounting is impossible.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class DiskFullHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_point_ = dir_.File("disk");
    ASSERT_EQ(::mkdir(mount_point_.c_str(), 0755), 0) << std::strerror(errno);
    if (::mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, "size=16m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                   << "); the fault-free unit test database_full_test still runs";
    }
    mounted_ = true;
    server_ = std::make_unique<ServerProcess>(
        ServerOptions(mount_point_ + "/data", {"--clock", "manual"}));
    ASSERT_TRUE(server_->Start()) << server_->error();
    client_ = std::make_unique<httplib::Client>(server_->Client());
  }

  void TearDown() override {
    if (server_) server_->Kill();
    server_.reset();
    if (mounted_) ::umount2(mount_point_.c_str(), MNT_DETACH);
  }

  // Fills the filesystem with one file until a write fails with ENOSPC.
  void FillDisk() {
    const std::string path = mount_point_ + "/filler";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const std::string block(64 * 1024, 'f');
    int error = 0;
    for (int i = 0; i < 100000; ++i) {
      ssize_t n = ::write(fd, block.data(), block.size());
      if (n < 0) {
        error = errno;
        break;
      }
      if (static_cast<size_t>(n) < block.size()) {
        // A short write: the next one reports why.
        continue;
      }
    }
    ::close(fd);
    ASSERT_EQ(error, ENOSPC) << std::strerror(error);
  }

  void FreeDisk() { ASSERT_EQ(::unlink((mount_point_ + "/filler").c_str()), 0); }

  JsonResponse Append(const std::string& sheet, size_t body_bytes) {
    return Post(*client_, "/v1/sheets/" + sheet + "/entries",
                {{"type", "Note"}, {"body", std::string(body_bytes, 'n')}});
  }

  static void ExpectInsufficientStorage(const JsonResponse& r) {
    EXPECT_EQ(r.status, 507) << r.raw;
    EXPECT_EQ(r.body["error"]["code"], "InsufficientStorage") << r.raw;
    const bool says_why = r.raw.find("No space left on device") != std::string::npos ||
                          r.raw.find("disk is full") != std::string::npos;
    EXPECT_TRUE(says_why) << r.raw;
  }

  TempDir dir_;
  std::string mount_point_;
  bool mounted_ = false;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(DiskFullHttpTest, WritesAnswer507WhileFullAndSucceedAgainOnceSpaceReturns) {
  const std::string sheet = CreateSheet(*client_);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(Append(sheet, 100).status, 201);

  ASSERT_NO_FATAL_FAILURE(FillDisk());
  // SQLite may still fit a few entries in pages it already has; then it fails, and
  // every failure is a 507, never 413 or 500.
  JsonResponse refused;
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    refused = Append(sheet, 8000);
    if (refused.status != 201) break;
    ++accepted;
  }
  ExpectInsufficientStorage(refused);
  ExpectInsufficientStorage(Post(*client_, "/v1/sheets", json::object()));
  // A body over the inline limit goes to the blob store: the same answer.
  ExpectInsufficientStorage(Append(sheet, 40000));
  EXPECT_EQ(Get(*client_, "/healthz").status, 200);
  const int64_t next_seq_full = Get(*client_, "/v1/sheets/" + sheet).body["next_seq"];
  EXPECT_EQ(next_seq_full, 2 + accepted);  // what was refused left nothing behind

  ASSERT_NO_FATAL_FAILURE(FreeDisk());
  EXPECT_EQ(Append(sheet, 8000).status, 201);
  EXPECT_EQ(Append(sheet, 40000).status, 201);
  EXPECT_EQ(Post(*client_, "/v1/sheets", json::object()).status, 201);
  // The untag of the new large body runs in the background: verify until it has. A
  // change-feed step that failed while the disk was full (a checkpoint write) retries
  // after a backoff on the clock, which only moves here when the test moves it.
  JsonResponse verify;
  EXPECT_TRUE(Eventually([&] {
    verify = Post(*client_, "/v1/admin/verify", json::object());
    if (verify.status == 200 && verify.body["ok"] == true &&
        verify.body["pending"].empty()) {
      return true;
    }
    AdvanceClockWhenIdle(*client_, 2);
    return false;
  })) << verify.raw;
}

// The same through fault points (`disk-full`), for machines where mounting is
// impossible: the entry write and the blob write of a large body.
TEST(DiskFullFaultTest, DiskFullFaultPointsAnswer507AndNothingIsWritten) {
  ServerProcess server(ServerOptions::InMemory({"--enable-faults"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  JsonResponse created = Post(client, "/v1/sheets", {{"snapshot_every", 0}});
  ASSERT_EQ(created.status, 201) << created.raw;
  const std::string entries =
      "/v1/sheets/" + created.body["id"].get<std::string>() + "/entries";
  // Entry 0's snapshot is built in the background and writes a blob: let it finish
  // first, so the armed blob fault meets the append's own write.
  const std::string sheet_path = "/v1/sheets/" + created.body["id"].get<std::string>();
  ASSERT_TRUE(Eventually(
      [&] { return Get(client, sheet_path).body["last_snapshot"].is_object(); }));
  for (const auto& [point, body_bytes] :
       {std::pair<std::string, size_t>{"log.add_entry.before_put", 100},
        std::pair<std::string, size_t>{"blob.put", 40000}}) {
    JsonResponse armed =
        Post(client, "/v1/admin/faults", {{"point", point}, {"kind", "disk-full"}});
    ASSERT_EQ(armed.status, 200) << armed.raw;
    JsonResponse r =
        Post(client, entries, {{"type", "Note"}, {"body", std::string(body_bytes, 'n')}});
    EXPECT_EQ(r.status, 507) << point << ": " << r.raw;
    EXPECT_EQ(r.body["error"]["code"], "InsufficientStorage") << r.raw;
  }
  JsonResponse read = Get(client, entries + "?from=start");
  ASSERT_EQ(read.status, 200);
  EXPECT_EQ(read.body["entries"].size(), 1u);  // only the sheet's Snapshot entry 0
  EXPECT_EQ(Post(client, entries, {{"type", "Note"}, {"body", 1}}).status, 201);
}

}  // namespace
}  // namespace sheetlog::testing
