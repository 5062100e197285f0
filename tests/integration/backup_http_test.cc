// Backup and restore with the real binary: `sheetlog backup --to DIR`
// while 16 clients append and upload and another keeps creating and deleting sheets
// (whose purge deletes objects: the race the backup must close), then `sheetlog
// restore` into an empty directory and a server on it: every entry acknowledged before
// the backup started is there with its body and payload, verify passes, and the
// restored server serves, snapshots and accepts appends. Also: a second backup into the
// same directory copies only new bodies; a damaged backup is refused and restores
// nothing; bad targets are refused.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "tests/support/api_client.h"
#include "tests/support/command.h"
#include "tests/support/s3_test_server.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// What a client was told was stored.
struct Acknowledged {
  std::string sheet;
  int64_t seq = 0;
  json body;            // the entry's body
  std::string payload;  // an upload's bytes ("" for appends)
};

class BackupHttpTest : public ::testing::Test {
 protected:
  void StartServer(const std::string& data_dir) {
    // Bodies over 256 bytes go to the blob store (entries/ objects), so appends make
    // objects too.
    server_ = std::make_unique<ServerProcess>(
        ServerOptions(data_dir, {"--inline-limit", "256", "--clock", "manual"}));
    ASSERT_TRUE(server_->Start()) << server_->error();
    client_ = std::make_unique<httplib::Client>(server_->Client());
  }

  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(server_->port());
  }

  CommandResult Sheetlog(const std::string& args) {
    return RunCommand(std::string(SHEETLOG_BINARY) + " " + args);
  }

  // `sheetlog backup --to DIR --json` against the running server.
  json Backup(const std::string& to) {
    CommandResult r =
        Sheetlog("backup --to " + ShellQuote(to) + " --json --server " + Url());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json report = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(report.is_object()) << r.out << r.err;
    return report;
  }

  // Nothing violated and nothing pending: the side effects have all run.
  bool VerifyOk(std::string* report) {
    JsonResponse r = Get(*client_, "/v1/admin/verify");
    *report = r.raw;
    return r.status == 200 && r.body["ok"] == true && r.body["pending"].empty();
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<httplib::Client> client_;
};

// One client's work: appends (every third one with a body over the inline limit) and,
// every fifth operation, an upload, each recorded once acknowledged.
void RunLoadClient(httplib::Client& client, const std::string& sheet, int id,
                   int operations, std::mutex* mu,
                   std::vector<Acknowledged>* acknowledged) {
  for (int i = 0; i < operations; ++i) {
    Acknowledged ack;
    ack.sheet = sheet;
    if (i % 5 == 4) {
      ack.body = {{"client", id}, {"op", i}};
      JsonResponse started = Post(client, "/v1/sheets/" + sheet + "/uploads",
                                  {{"type", "Attachment"}, {"body", ack.body}});
      if (started.status != 201) continue;
      ack.payload = "upload " + std::to_string(id) + "/" + std::to_string(i) + " " +
                    std::string(2000 + i, 'u');
      if (Request(client, "PUT", PathOf(started.body["url"]), ack.payload).status !=
          200) {
        continue;
      }
      JsonResponse done =
          Post(client,
               "/v1/sheets/" + sheet + "/uploads/" +
                   started.body["upload_id"].get<std::string>() + "/complete",
               json::object());
      if (done.status != 201) continue;
      ack.seq = done.body["seq"];
    } else {
      const std::string text = std::to_string(id) + "/" + std::to_string(i) +
                               (i % 3 == 0 ? std::string(400, 'x') : "");
      ack.body = {{"ref", "A" + std::to_string(id * 1000 + i + 1)}, {"value", text}};
      JsonResponse r = Post(client, "/v1/sheets/" + sheet + "/entries",
                            {{"type", "SetCell"}, {"body", ack.body}});
      if (r.status != 201) continue;
      ack.seq = r.body["seq"];
    }
    std::lock_guard<std::mutex> lock(*mu);
    acknowledged->push_back(std::move(ack));
  }
}

TEST_F(BackupHttpTest, BackupUnderLoadRestoresEveryAcknowledgedEntry) {
  ASSERT_NO_FATAL_FAILURE(StartServer(dir_.File("data")));
  std::vector<std::string> sheets;
  for (int i = 0; i < 4; ++i)
    sheets.push_back(CreateSheet(*client_, /*snapshot_every=*/8));

  constexpr int kClients = 16;
  constexpr int kOperations = 40;
  std::mutex mu;
  std::vector<Acknowledged> acknowledged;
  std::vector<std::thread> clients;
  for (int id = 0; id < kClients; ++id) {
    clients.emplace_back([&, id] {
      httplib::Client client = server_->Client();
      RunLoadClient(client, sheets[id % sheets.size()], id, kOperations, &mu,
                    &acknowledged);
    });
  }
  // Deletes run during the backup: sheets with objects are created and deleted, and
  // the purge (also run by the sweep) deletes their objects.
  std::atomic<bool> stop{false};
  std::atomic<int> deleted_sheets{0};
  std::thread deleter([&] {
    httplib::Client client = server_->Client();
    while (!stop.load()) {
      JsonResponse sheet = Post(client, "/v1/sheets", {{"snapshot_every", 2}});
      if (sheet.status != 201) continue;
      const std::string id = sheet.body["id"];
      for (int i = 0; i < 3; ++i) {
        Post(client, "/v1/sheets/" + id + "/entries",
             {{"type", "SetCell"},
              {"body", {{"ref", "B1"}, {"value", std::string(500, 'd')}}}});
      }
      if (Request(client, "DELETE", "/v1/sheets/" + id).status == 204) ++deleted_sheets;
      Post(client, "/v1/admin/sweep", json::object());
    }
  });

  // The backup starts once a quarter of the work is acknowledged; what was acknowledged
  // then must be in it.
  const size_t quarter = kClients * kOperations / 4;
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return acknowledged.size() >= quarter;
  }));
  std::vector<Acknowledged> before;
  {
    std::lock_guard<std::mutex> lock(mu);
    before = acknowledged;
  }
  const std::string backup_dir = dir_.File("backup");
  json report = Backup(backup_dir);
  size_t acknowledged_during = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    acknowledged_during = acknowledged.size() - before.size();
  }
  for (std::thread& t : clients) t.join();
  stop = true;
  deleter.join();
  EXPECT_GT(report.value("blobs", 0), 0) << report.dump();
  EXPECT_GT(report["database"].value("bytes", 0), 0) << report.dump();
  EXPECT_EQ(report["incremental"], false);
  EXPECT_GT(deleted_sheets.load(), 0);
  RecordProperty("acknowledged_before_backup", static_cast<int>(before.size()));
  RecordProperty("acknowledged_during_backup", static_cast<int>(acknowledged_during));
  EXPECT_EQ(server_->Stop(), 0);

  const std::string restored = dir_.File("restored");
  CommandResult restore = Sheetlog("restore --from " + ShellQuote(backup_dir) +
                                   " --data-dir " + ShellQuote(restored) + " --json");
  ASSERT_EQ(restore.exit_code, 0) << restore.out << restore.err;
  EXPECT_EQ(json::parse(restore.out)["blobs"], report["blobs"]);

  ASSERT_NO_FATAL_FAILURE(StartServer(restored));
  std::string verify;
  // Side effects the backup's instant had not run yet (an untag, a snapshot) run now;
  // a snapshot that was building then is taken over once its claim is stale (60 s of
  // clock, as after a crash).
  EXPECT_TRUE(Eventually([&] {
    if (VerifyOk(&verify)) return true;
    AdvanceClockWhenIdle(*client_, 61);
    return false;
  })) << verify;
  for (const Acknowledged& ack : before) {
    JsonResponse entry = Get(*client_, "/v1/sheets/" + ack.sheet + "/entries/" +
                                           std::to_string(ack.seq) + "?body=inline");
    ASSERT_EQ(entry.status, 200) << ack.sheet << " seq " << ack.seq << ": " << entry.raw;
    // body=inline: an upload's payload is the body; an append's body as sent.
    EXPECT_TRUE(entry.body["body"] ==
                (ack.payload.empty() ? ack.body : json(ack.payload)))
        << ack.sheet << " seq " << ack.seq;
    if (!ack.payload.empty()) {
      JsonResponse payload =
          Request(*client_, "GET", PathOf(entry.body["external"]["url"]));
      EXPECT_EQ(payload.status, 200);
      EXPECT_EQ(payload.raw, ack.payload) << "upload at seq " << ack.seq;
    }
  }
  // The restored server accepts appends and builds snapshots.
  const std::string sheet = sheets.front();
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "Z1", 7));
  const int64_t snapshot_seq = TakeSnapshot(*client_, sheet);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(
      WaitForSnapshot(*server_, *client_, sheet, snapshot_seq, {.advance_clock_s = 61}));
  JsonResponse cell = Get(*client_, "/v1/sheets/" + sheet + "/cells?range=Z1:Z1");
  EXPECT_EQ(cell.body["rows"], json::array({json::array({7})})) << cell.raw;
  EXPECT_TRUE(VerifyOk(&verify)) << verify;
}

TEST_F(BackupHttpTest, SecondBackupCopiesOnlyNewBodiesAndRestores) {
  ASSERT_NO_FATAL_FAILURE(StartServer(dir_.File("data")));
  const std::string sheet = CreateSheet(*client_, 0);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Post(*client_, "/v1/sheets/" + sheet + "/entries",
                   {{"type", "SetCell"},
                    {"body",
                     {{"ref", "A" + std::to_string(i + 1)},
                      {"value", std::string(1000, 'a' + i)}}}})
                  .status,
              201);
  }
  const std::string backup_dir = dir_.File("backup");
  json first = Backup(backup_dir);
  EXPECT_EQ(first["incremental"], false);
  EXPECT_EQ(first["blobs_copied"], first["blobs"]);
  EXPECT_GE(first["blobs"].get<int>(), 5);

  ASSERT_EQ(Post(*client_, "/v1/sheets/" + sheet + "/entries",
                 {{"type", "SetCell"},
                  {"body", {{"ref", "B1"}, {"value", std::string(1000, 'z')}}}})
                .status,
            201);
  json second = Backup(backup_dir);
  EXPECT_EQ(second["incremental"], true);
  EXPECT_EQ(second["blobs"].get<int>(), first["blobs"].get<int>() + 1) << second.dump();
  EXPECT_EQ(second["blobs_copied"], 1) << second.dump();
  EXPECT_EQ(second["blobs_reused"], first["blobs"]) << second.dump();
  // The first backup's database file is gone; one backup per directory.
  int databases = 0;
  for (const auto& entry : fs::directory_iterator(backup_dir)) {
    databases += entry.path().extension() == ".sqlite";
  }
  EXPECT_EQ(databases, 1);
  EXPECT_EQ(server_->Stop(), 0);

  CommandResult restore = Sheetlog("restore --from " + ShellQuote(backup_dir) +
                                   " --data-dir " + ShellQuote(dir_.File("restored")));
  ASSERT_EQ(restore.exit_code, 0) << restore.err;
  ASSERT_NO_FATAL_FAILURE(StartServer(dir_.File("restored")));
  JsonResponse b1 = Get(*client_, "/v1/sheets/" + sheet + "/cells?range=B1:B1");
  EXPECT_EQ(b1.body["rows"], json::array({json::array({std::string(1000, 'z')})}));
  std::string verify;
  EXPECT_TRUE(VerifyOk(&verify)) << verify;
}

TEST_F(BackupHttpTest, DamagedBackupIsRefusedAndRestoresNothing) {
  ASSERT_NO_FATAL_FAILURE(StartServer(dir_.File("data")));
  const std::string sheet = CreateSheet(*client_, 0);
  ASSERT_EQ(Post(*client_, "/v1/sheets/" + sheet + "/entries",
                 {{"type", "SetCell"},
                  {"body", {{"ref", "A1"}, {"value", std::string(1000, 'q')}}}})
                .status,
            201);
  const std::string backup_dir = dir_.File("backup");
  Backup(backup_dir);
  EXPECT_EQ(server_->Stop(), 0);

  // One byte of one object's body changes.
  std::string damaged;
  for (const auto& entry : fs::recursive_directory_iterator(backup_dir + "/blobs")) {
    if (entry.is_regular_file()) damaged = entry.path().string();
  }
  ASSERT_FALSE(damaged.empty());
  {
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(10);
    file.put('!');
  }
  const std::string target = dir_.File("restored");
  CommandResult refused = Sheetlog("restore --from " + ShellQuote(backup_dir) +
                                   " --data-dir " + ShellQuote(target));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("fails its checksum"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find(damaged), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(target)) << "nothing is written";

  // A changed manifest fails its own checksum.
  std::string manifest;
  {
    std::ifstream in(backup_dir + "/manifest.json");
    manifest.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = manifest.find("\"schema_version\": ");
  ASSERT_NE(at, std::string::npos);
  manifest.insert(at + 18, "1");
  std::ofstream(backup_dir + "/manifest.json") << manifest;
  refused = Sheetlog("restore --from " + ShellQuote(backup_dir) + " --data-dir " +
                     ShellQuote(target));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("manifest.json fails its checksum"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(target));

  // A non-empty data directory is never restored into.
  refused = Sheetlog("restore --from " + ShellQuote(backup_dir) + " --data-dir " +
                     ShellQuote(dir_.File("data")));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("not empty"), std::string::npos) << refused.err;
}

TEST_F(BackupHttpTest, BadTargetsAreRefused) {
  ASSERT_NO_FATAL_FAILURE(StartServer(dir_.File("data")));
  JsonResponse relative = Post(*client_, "/v1/admin/backup", {{"to", "backups/x"}});
  EXPECT_EQ(relative.status, 400) << relative.raw;
  JsonResponse inside = Post(*client_, "/v1/admin/backup", {{"to", dir_.File("data/b")}});
  EXPECT_EQ(inside.status, 400) << inside.raw;
  EXPECT_NE(inside.raw.find("overlaps the data directory"), std::string::npos);
  fs::create_directories(dir_.File("other"));
  std::ofstream(dir_.File("other/notes.txt")) << "not a backup";
  JsonResponse other = Post(*client_, "/v1/admin/backup", {{"to", dir_.File("other")}});
  EXPECT_EQ(other.status, 400) << other.raw;
  EXPECT_NE(other.raw.find("neither empty nor a sheetlog backup"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_.File("other/notes.txt")));
}

// Blobs on an S3 store (`--blobs s3://...`, the shared test S3 server): a backup is
// refused with a clear error, over HTTP and from the CLI, and writes nothing; the
// bucket's own versioning or replication is the way to back it up.
TEST(S3BackupHttpTest, BackupOfBlobsOnS3IsRefusedAndWritesNothing) {
  TempDir dir;
  ServerOptions options(dir.File("data"), {"--inline-limit", "256", "--blobs",
                                           S3BlobsFlag(NewS3TestBucket("backup-http"))});
  options.env = {{"AWS_ACCESS_KEY_ID", "S3RVER"}, {"AWS_SECRET_ACCESS_KEY", "S3RVER"}};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet =
      Post(client, "/v1/sheets", json::object()).body.value("id", "");
  ASSERT_EQ(Post(client, "/v1/sheets/" + sheet + "/entries",
                 {{"type", "Note"}, {"body", std::string(5000, 'x')}})
                .status,
            201);

  const std::string target = dir.File("backup");
  JsonResponse refused = Post(client, "/v1/admin/backup", {{"to", target}});
  EXPECT_EQ(refused.status, 409) << refused.raw;
  EXPECT_EQ(refused.body["error"]["code"], "ConflictError") << refused.raw;
  const std::string message = refused.body["error"].value("message", "");
  EXPECT_NE(message.find("backup of an S3 blob store"), std::string::npos) << message;
  EXPECT_NE(message.find("versioning or replication"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(target)) << "nothing written";

  CommandResult cli =
      RunCommand(std::string(SHEETLOG_BINARY) + " backup --to " + ShellQuote(target) +
                 " --server http://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_NE(cli.err.find("versioning or replication"), std::string::npos) << cli.err;
  EXPECT_FALSE(fs::exists(target));
  // The server is unharmed: a backup is refused, not half-started (no capture held).
  EXPECT_EQ(Post(client, "/v1/sheets/" + sheet + "/entries",
                 {{"type", "Note"}, {"body", std::string(5000, 'y')}})
                .status,
            201);
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace sheetlog::testing
