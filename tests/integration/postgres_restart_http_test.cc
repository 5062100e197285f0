// The real binary with its tables on PostgreSQL while PostgreSQL crashes and restarts
// under writers (emulator/postgres/postgres_database.h: a broken connection is dropped
// and the next call connects afresh, so the process recovers by itself):
//   - while PostgreSQL is down, every append is answered 201 or 503 Unavailable (never
//     a 500, never left without an answer) and the process keeps running; /readyz
//     stays 200 and /v1/health reports the table store unavailable (docs/cluster.md,
//     "The load balancer");
//   - once PostgreSQL is back, the same server (not restarted) acknowledges appends
//     again by itself; how long that took after the restart is printed, not asserted
//     (speeds are recorded in bench/README.md);
//   - nothing acknowledged is lost: every 201 is in its sheet's log at the seq it
//     named; each log has no gaps; every entry is an append that was answered 201, or
//     503 or nothing (a commit whose outcome the crash left unknown is a 503 and may
//     have landed), and none is there twice.
//
// It starts a PostgreSQL server of its own (scripts/postgres start DIR --no-fsync)
// instead of using the shared test server of ctest's postgres fixture: it crashes that
// server (scripts/postgres crash DIR: an immediate shutdown, no shutdown checkpoint) and
// restarts it (crash recovery), which would fail the cases running on the shared one in
// parallel. So it needs no ctest fixture, and it runs once, not again on the second
// store (CMakeLists.txt): what it tests is PostgreSQL's.
//
// Real time throughout (the outage is real): every wait is bounded and ends as soon as
// what it waits for holds.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/api_client.h"
#include "tests/support/command.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

constexpr int kRestartWriters = 4;  // each with a client of its own
constexpr int kRestartSheets = 2;   // each writer appends to both in turn
constexpr int64_t kAcknowledgedBeforeCrash = 200;
// The outage lasts until every writer has had this many appends refused, or at most
// kOutageMostSeconds: long enough for each to meet it, short enough to keep the run
// short.
constexpr int64_t kRefusalsPerWriterInOutage = 5;
constexpr int kOutageMostSeconds = 10;
constexpr int64_t kAcknowledgedPerWriterAfterRestart = 20;
// Bounds each wait for the writers' progress and for the server's recovery: a hang
// fails the test, a slow machine does not.
constexpr int kPhaseMostSeconds = 60;

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// `object`'s string field `name`; "" if `object` is not an object or has none.
std::string StringField(const nlohmann::json& object, const std::string& name) {
  if (!object.is_object() || !object.contains(name) || !object[name].is_string()) {
    return "";
  }
  return object[name].get<std::string>();
}

// The last `bytes` of `text`.
std::string LastBytes(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : text.substr(text.size() - bytes);
}

// A PostgreSQL server of this test's own, driven by scripts/postgres in `dir` as an
// operator would: stopped and removed, whatever state the test left it in, when this
// is destroyed.
class PrivatePostgres {
 public:
  explicit PrivatePostgres(std::string dir) : dir_(std::move(dir)) {}
  ~PrivatePostgres() {
    if (started_) (void)Script("stop");
  }
  PrivatePostgres(const PrivatePostgres&) = delete;
  PrivatePostgres& operator=(const PrivatePostgres&) = delete;

  // scripts/postgres start DIR --no-fsync (commits reach the kernel, not the disk: a
  // crash of PostgreSQL alone loses nothing it acknowledged), then DIR/conninfo.
  ::testing::AssertionResult Start() {
    started_ = true;  // whatever part of it ran is stopped and removed at the end
    ::testing::AssertionResult started = Ran("start", "--no-fsync");
    if (!started) return started;
    std::ifstream in(dir_ + "/conninfo");
    std::getline(in, conninfo_);
    if (conninfo_.empty()) {
      return ::testing::AssertionFailure()
             << "scripts/postgres start wrote no " << dir_ << "/conninfo";
    }
    return started;
  }
  // Every server process quits at once, open sessions are cut off, the data stays.
  ::testing::AssertionResult Crash() { return Ran("crash"); }
  // Starts it again on the same data (crash recovery first); returns once it accepts
  // connections.
  ::testing::AssertionResult Restart() { return Ran("restart"); }

  // The libpq connection string of its `postgres` database.
  const std::string& conninfo() const { return conninfo_; }
  // The end of the server's own log (in the directory DIR/cluster names).
  std::string LogTail(size_t bytes) const {
    std::ifstream in(dir_ + "/cluster");
    std::string cluster;
    std::getline(in, cluster);
    if (cluster.empty()) return "(no cluster in " + dir_ + ")";
    std::stringstream log;
    log << std::ifstream(cluster + "/log").rdbuf();
    return LastBytes(log.str(), bytes);
  }

 private:
  CommandResult Script(const std::string& command, const std::string& flag = "") const {
    std::string line =
        ShellQuote(std::string(SHEETLOG_SOURCE_DIR) + "/scripts/postgres") + " " +
        command + " " + ShellQuote(dir_);
    if (!flag.empty()) line += " " + flag;
    return RunCommand(line);
  }
  ::testing::AssertionResult Ran(const std::string& command,
                                 const std::string& flag = "") const {
    const CommandResult ran = Script(command, flag);
    if (ran.exit_code == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "scripts/postgres " << command << " " << dir_ << " " << flag
           << " exited with " << ran.exit_code << " (signal " << ran.signal << "):\n"
           << ran.err << ran.out;
  }

  const std::string dir_;
  std::string conninfo_;
  bool started_ = false;
};

// One append a writer sent and what it was told.
struct SentAppend {
  std::string marker;  // its body, "w<writer>-<n>": unique
  int sheet = 0;       // which of the test's sheets
  int status = 0;      // the HTTP status; -1: no answer (then `answer` says why)
  int64_t seq = -1;    // the seq a 201 named
  // Otherwise: the response body or the transport's error, and the body's error code
  // and message if it has them.
  std::string answer;
  std::string error_code;
  std::string error_message;
};

// A writer: its thread, what it sent, and counters the test watches while it runs
// (`sent` is read only once the thread is joined).
struct RestartWriter {
  std::thread thread;
  std::vector<SentAppend> sent;
  std::atomic<int64_t> acknowledged{0};
  std::atomic<int64_t> refused{0};  // answered anything but 201, or not at all
  std::atomic<int64_t> acknowledged_after_restart{0};
};

class PostgresRestartHttpTest : public ::testing::Test {
 protected:
  void TearDown() override {
    StopWriters();
    if (!HasFailure()) return;
    if (server_ != nullptr) {
      std::printf("--- sheetlog's log (last 16 KB):\n%s\n",
                  LastBytes(server_->Log(), 16384).c_str());
    }
    std::printf("--- PostgreSQL's log (last 8 KB):\n%s\n",
                postgres_.LogTail(8192).c_str());
  }

  // PostgreSQL, then sheetlog with its tables there (its blobs in its data directory),
  // and a client of it.
  void StartPostgresAndServer() {
    ASSERT_TRUE(postgres_.Start());
    server_ = std::make_unique<ServerProcess>(
        ServerOptions(dir_.File("data"), {"--store", postgres_.conninfo()}));
    ASSERT_TRUE(server_->Start()) << server_->error();
    client_ = std::make_unique<httplib::Client>(server_->Client());
  }

  // Each writer appends a Note (its marker as the body) to the sheets in turn, as fast
  // as it is answered, until StopWriters.
  void StartWriters() {
    for (int w = 0; w < kRestartWriters; ++w) {
      writers_[w].thread = std::thread([this, w] { Write(w); });
    }
  }

  void StopWriters() {
    stop_writers_.store(true);
    for (RestartWriter& writer : writers_) {
      if (writer.thread.joinable()) writer.thread.join();
    }
  }

  void Write(int w) {
    RestartWriter& writer = writers_[w];
    httplib::Client client = server_->Client();
    for (int64_t n = 0; !stop_writers_.load(); ++n) {
      SentAppend append;
      append.marker = "w" + std::to_string(w) + "-" + std::to_string(n);
      append.sheet = static_cast<int>((w + n) % kRestartSheets);
      const JsonResponse answer = PostEntry(client, sheets_[append.sheet],
                                            {{"type", "Note"}, {"body", append.marker}});
      const int64_t answered_at = SteadyNanos();
      append.status = answer.status;
      if (answer.status == 201) {
        append.seq = answer.body.is_object() ? answer.body.value("seq", int64_t{-1}) : -1;
        ++writer.acknowledged;
        const int64_t restarted_at = restart_returned_at_.load();
        if (restarted_at != 0 && answered_at >= restarted_at) {
          ++writer.acknowledged_after_restart;
          int64_t first = first_acknowledged_after_restart_at_.load();
          while ((first == 0 || answered_at < first) &&
                 !first_acknowledged_after_restart_at_.compare_exchange_weak(
                     first, answered_at)) {
          }
        }
      } else {
        append.answer = answer.raw;
        if (answer.body.is_object() && answer.body.contains("error")) {
          append.error_code = StringField(answer.body["error"], "code");
          append.error_message = StringField(answer.body["error"], "message");
        }
        ++writer.refused;
      }
      writer.sent.push_back(std::move(append));
    }
  }

  int64_t Acknowledged() const {
    int64_t total = 0;
    for (const RestartWriter& writer : writers_) total += writer.acknowledged.load();
    return total;
  }

  // Each writer's counters, for a wait that timed out.
  std::string Progress() const {
    std::string out;
    for (int w = 0; w < kRestartWriters; ++w) {
      const RestartWriter& writer = writers_[w];
      out += "writer " + std::to_string(w) + ": " +
             std::to_string(writer.acknowledged.load()) + " acknowledged (" +
             std::to_string(writer.acknowledged_after_restart.load()) +
             " after the restart), " + std::to_string(writer.refused.load()) +
             " refused or unanswered\n";
    }
    return out + "sheetlog " + (server_->Exited() ? "has exited" : "is running");
  }

  // GET /v1/health: 200 whatever it reports; the table store's entry of it.
  json TableStoreHealth(json* report) {
    const JsonResponse health = Get(*client_, "/v1/health");
    EXPECT_EQ(health.status, 200) << health.raw;
    *report = health.body;
    if (!health.body.is_object() || !health.body.contains("dependencies")) return nullptr;
    for (const json& dependency : health.body["dependencies"]) {
      if (StringField(dependency, "name") == "table_store") return dependency;
    }
    return nullptr;
  }

  // Members are destroyed in reverse: the client, sheetlog (killed if still running),
  // PostgreSQL (stopped and removed), then the directory.
  TempDir dir_;  // sheetlog's data directory and scripts/postgres's DIR
  PrivatePostgres postgres_{dir_.File("postgres")};
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<httplib::Client> client_;

  std::vector<std::string> sheets_;
  std::array<RestartWriter, kRestartWriters> writers_;
  std::atomic<bool> stop_writers_{false};
  // SteadyNanos() when scripts/postgres restart returned (0 before), and when the first
  // append answered 201 after it was (0 before).
  std::atomic<int64_t> restart_returned_at_{0};
  std::atomic<int64_t> first_acknowledged_after_restart_at_{0};
};

TEST_F(PostgresRestartHttpTest, WritersGet201Or503AndTheSameServerRecoversLosingNothing) {
  ASSERT_NO_FATAL_FAILURE(StartPostgresAndServer());
  for (int s = 0; s < kRestartSheets; ++s) {
    // snapshot_every 0: the server appends nothing of its own, so every entry after
    // entry 0 is a writer's.
    sheets_.push_back(CreateSheet(*client_, 0));
    ASSERT_FALSE(HasFatalFailure());
  }

  StartWriters();
  ASSERT_TRUE(Eventually([&] { return Acknowledged() >= kAcknowledgedBeforeCrash; },
                         [&] { return Progress(); }, kPhaseMostSeconds));

  // The crash, while the writers keep appending.
  std::array<int64_t, kRestartWriters> refused_before_crash{};
  for (int w = 0; w < kRestartWriters; ++w) {
    refused_before_crash[w] = writers_[w].refused.load();
  }
  ASSERT_TRUE(postgres_.Crash());
  const int64_t crash_returned_at = SteadyNanos();

  // The load balancer's check does not follow the stores (docs/cluster.md); the
  // detailed report says what is wrong.
  const JsonResponse ready = Get(*client_, "/readyz");
  EXPECT_EQ(ready.status, 200) << "readiness does not follow the stores: " << ready.raw;
  json report;
  const json table_store = TableStoreHealth(&report);
  EXPECT_EQ(StringField(report, "status"), "degraded") << report.dump(2);
  EXPECT_EQ(StringField(table_store, "state"), "unavailable") << report.dump(2);

  // A bound on the outage, not an assertion: it ends once every writer has been
  // refused a few times, or after kOutageMostSeconds.
  (void)Eventually(
      [&] {
        for (int w = 0; w < kRestartWriters; ++w) {
          if (writers_[w].refused.load() - refused_before_crash[w] <
              kRefusalsPerWriterInOutage) {
            return false;
          }
        }
        return true;
      },
      kOutageMostSeconds);
  int64_t refused_in_outage = 0;
  for (int w = 0; w < kRestartWriters; ++w) {
    refused_in_outage += writers_[w].refused.load() - refused_before_crash[w];
  }
  EXPECT_GT(refused_in_outage, 0) << "no append was refused while PostgreSQL was down\n"
                                  << Progress();
  EXPECT_FALSE(server_->Exited()) << "sheetlog exited while PostgreSQL was down";

  // The restart; the same sheetlog serves again by itself.
  const int64_t restart_started_at = SteadyNanos();
  const ::testing::AssertionResult restarted = postgres_.Restart();
  restart_returned_at_.store(SteadyNanos());
  ASSERT_TRUE(restarted);
  ASSERT_TRUE(Eventually([&] { return first_acknowledged_after_restart_at_.load() != 0; },
                         [&] { return Progress(); }, kPhaseMostSeconds));
  const auto millis = [](int64_t nanos) {
    return static_cast<long long>(nanos / 1000000);
  };
  std::printf(
      "PostgreSQL down for %lld ms (crash returned to restart begun), its restart took "
      "%lld ms; the first append was acknowledged %lld ms after the restart returned\n",
      millis(restart_started_at - crash_returned_at),
      millis(restart_returned_at_.load() - restart_started_at),
      millis(first_acknowledged_after_restart_at_.load() - restart_returned_at_.load()));
  std::fflush(stdout);
  ASSERT_TRUE(Eventually(
      [&] {
        for (const RestartWriter& writer : writers_) {
          if (writer.acknowledged_after_restart.load() <
              kAcknowledgedPerWriterAfterRestart) {
            return false;
          }
        }
        return true;
      },
      [&] { return Progress(); }, kPhaseMostSeconds));
  StopWriters();
  EXPECT_FALSE(server_->Exited()) << "sheetlog exited after PostgreSQL came back";
  json recovered;
  EXPECT_TRUE(Eventually(
      [&] {
        TableStoreHealth(&recovered);
        return StringField(recovered, "status") == "ok";
      },
      [&] { return recovered.dump(2); }, kPhaseMostSeconds));

  // Every answer was 201 or 503 Unavailable.
  std::map<std::string, const SentAppend*> by_marker;
  std::vector<std::string> unexpected;
  std::map<std::string, int64_t> unavailable_messages;  // message -> how many
  int64_t acknowledged = 0, unavailable = 0;
  for (const RestartWriter& writer : writers_) {
    for (const SentAppend& append : writer.sent) {
      by_marker[append.marker] = &append;
      if (append.status == 201 && append.seq > 0) {
        ++acknowledged;
        continue;
      }
      if (append.status == 503 && append.error_code == "Unavailable") {
        ++unavailable;
        ++unavailable_messages[append.error_message];
        continue;
      }
      unexpected.push_back(append.marker + " on sheet " + std::to_string(append.sheet) +
                           ": " + std::to_string(append.status) + " " + append.answer);
    }
  }
  // The client is told the table store is unavailable, not where it is: no host,
  // socket, database or user in any answer (they go to the operator's log).
  for (const auto& [message, count] : unavailable_messages) {
    for (const char* secret : {"host=", "user=", "dbname=", "/tmp/", ".s.PGSQL"}) {
      EXPECT_EQ(message.find(secret), std::string::npos) << count << " x " << message;
    }
  }
  std::string examples;
  for (size_t i = 0; i < unexpected.size() && i < 20; ++i) {
    examples += "  " + unexpected[i] + "\n";
  }
  EXPECT_TRUE(unexpected.empty())
      << unexpected.size() << " appends were answered neither 201 (with a seq) nor 503 "
      << "Unavailable (-1: no answer), e.g.:\n"
      << examples;

  // The logs: gapless, every entry sent once on its sheet, every 201 at its seq.
  int64_t written_though_refused = 0;
  for (int s = 0; s < kRestartSheets; ++s) {
    SCOPED_TRACE("sheet " + std::to_string(s) + " " + sheets_[s]);
    const std::vector<json> entries = ReadAllEntries(*client_, sheets_[s]);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_FALSE(entries.empty());
    EXPECT_EQ(StringField(entries[0], "type"), "Snapshot") << entries[0].dump();
    std::map<std::string, int64_t> stored;  // marker -> seq
    for (size_t i = 0; i < entries.size(); ++i) {
      const json& entry = entries[i];
      ASSERT_EQ(entry.is_object() ? entry.value("seq", int64_t{-1}) : -1,
                static_cast<int64_t>(i))
          << "a gap before " << entry.dump();
      if (i == 0) continue;
      ASSERT_EQ(StringField(entry, "type"), "Note") << entry.dump();
      const std::string marker = StringField(entry, "body");
      ASSERT_FALSE(marker.empty()) << "not a writer's marker: " << entry.dump();
      const auto sent = by_marker.find(marker);
      ASSERT_NE(sent, by_marker.end()) << "an entry nobody sent: " << entry.dump();
      EXPECT_EQ(sent->second->sheet, s) << "on the wrong sheet: " << entry.dump();
      EXPECT_TRUE(stored.emplace(marker, static_cast<int64_t>(i)).second)
          << marker << " twice, at " << stored[marker] << " and " << i;
      // Not acknowledged yet written: only an append whose commit's outcome the crash
      // left unknown (answered 503) or that got no answer at all.
      const int status = sent->second->status;
      EXPECT_TRUE(status == 201 || status == 503 || status == -1)
          << "written, though answered " << status << ": " << sent->second->answer;
      if (status != 201) ++written_though_refused;
    }
    for (const RestartWriter& writer : writers_) {
      for (const SentAppend& append : writer.sent) {
        if (append.sheet != s || append.status != 201) continue;
        const auto found = stored.find(append.marker);
        EXPECT_TRUE(found != stored.end())
            << "acknowledged at seq " << append.seq << " and lost: " << append.marker;
        if (found != stored.end()) {
          EXPECT_EQ(found->second, append.seq)
              << "acknowledged at seq " << append.seq << " and stored at "
              << found->second << ": " << append.marker;
        }
      }
    }
  }

  std::printf(
      "%zu appends: %lld acknowledged, %lld answered 503, %zu otherwise; %lld of those "
      "not acknowledged were written all the same\n",
      by_marker.size(), static_cast<long long>(acknowledged),
      static_cast<long long>(unavailable), unexpected.size(),
      static_cast<long long>(written_though_refused));
  for (const auto& [message, count] : unavailable_messages) {
    std::printf("  503 x%lld: %s\n", static_cast<long long>(count), message.c_str());
  }
  std::fflush(stdout);
  EXPECT_EQ(server_->Stop(), 0) << "sheetlog's exit status after SIGTERM";
}

}  // namespace
}  // namespace sheetlog::testing
