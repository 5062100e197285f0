#include "tests/support/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "emulator/json_text.h"
#include "emulator/postgres/postgres_connection.h"
#include "emulator/table/migrations.h"
#include "src/app/schema.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/s3_test_server.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {

namespace {
std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

ServerProcess::ServerProcess(ServerOptions options) : options_(std::move(options)) {
  static int counter = 0;
  std::string base = "/tmp/sheetlog-server-" + std::to_string(getpid()) + "-" +
                     std::to_string(++counter);
  log_path_ = base + ".log";
  port_file_ = base + ".port";
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Kill();
  unlink(log_path_.c_str());
  unlink(port_file_.c_str());
}

bool BlobsOnS3() {
  const char* blobs = std::getenv("SHEETLOG_TEST_BLOBS");
  return blobs != nullptr && std::string_view(blobs) == "s3";
}

namespace {
// A peer that closes a connection while a test still writes to it (a server refusing a
// body early) is an error for the writer to report, not a signal that ends the test
// process with every later case of its suite.
[[maybe_unused]] const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();
}  // namespace

bool StoreOnPostgres() {
  const char* store = std::getenv("SHEETLOG_TEST_STORE");
  return store != nullptr && std::string_view(store) == "postgres";
}

namespace {

// What a server's database holds before its first start: the application's and the
// emulator's migrations, the entry stream attached (OpenSheetlogPostgresDatabase).
std::string ServerTemplateKey() {
  std::vector<std::string> parts = {"sheetlog server"};
  for (const auto* list :
       {&EmulatorPostgresMigrations(), &SheetlogPostgresMigrations()}) {
    for (const Migration& migration : *list) parts.push_back(migration.sql);
  }
  return TemplateKey(parts);
}

// The PostgreSQL database of a data directory's server: made once (a copy of the
// migrated template: the server finds its schema in place), its conninfo kept in the
// directory.
std::string TestPostgresDatabaseFor(const std::string& data_dir) {
  const std::string record = data_dir.empty() ? "" : data_dir + "/test-postgres-store";
  if (!record.empty()) {
    std::ifstream in(record);
    std::string conninfo;
    if (std::getline(in, conninfo) && !conninfo.empty()) return conninfo;
  }
  std::string conninfo = NewPostgresTestDatabaseFrom(
      "server", ServerTemplateKey(), [](const std::string& template_conninfo) {
        PostgresDatabase::Options options;
        options.conninfo = template_conninfo;
        return OpenSheetlogPostgresDatabase(options).status();
      });
  if (!record.empty() && !conninfo.empty()) {
    std::filesystem::create_directories(data_dir);
    std::ofstream(record) << conninfo << "\n";
  }
  return conninfo;
}

}  // namespace

int64_t CountInTableStore(const std::string& data_dir, const std::string& sql) {
  if (StoreOnPostgres()) {
    auto conn = PostgresConnection::Open(TestPostgresDatabaseFor(data_dir), 10);
    if (!conn.ok()) {
      ADD_FAILURE() << conn.status().ToString();
      return -1;
    }
    int64_t count = -1;
    Result<int64_t> ran = (*conn)->RunSql(sql, {}, [&](const SqlRow& row) {
      count = row.Int(0);
      return false;
    });
    if (!ran.ok()) ADD_FAILURE() << sql << ": " << ran.status().ToString();
    return count;
  }
  const std::string command = "sqlite3 '" + data_dir + "/sheetlog.db' \"" + sql + "\"";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char line[64] = {0};
  const bool read = fgets(line, sizeof(line), pipe) != nullptr;
  pclose(pipe);
  if (!read) ADD_FAILURE() << command << " printed nothing";
  return read ? std::stoll(line) : -1;
}

namespace {

// The bucket of a data directory's server: made once, its name kept in the directory.
S3Location TestBucketFor(const std::string& data_dir) {
  const std::string record = data_dir.empty() ? "" : data_dir + "/test-s3-bucket";
  if (!record.empty()) {
    std::ifstream in(record);
    std::string bucket;
    if (in >> bucket && !bucket.empty()) {
      S3Location location;
      location.endpoint = S3TestEndpoint();
      location.bucket = bucket;
      return location;
    }
  }
  S3Location location = NewS3TestBucket("server");
  if (!record.empty()) {
    std::filesystem::create_directories(data_dir);
    std::ofstream(record) << location.bucket << "\n";
  }
  return location;
}

}  // namespace

bool ServerProcess::Start() {
  unlink(port_file_.c_str());
  if (mkfifo(port_file_.c_str(), 0600) != 0) {
    error_ = "mkfifo failed";
    return false;
  }
  std::vector<std::string> args = {SHEETLOG_BINARY, "serve",       "--listen",
                                   "127.0.0.1:0",   "--port-file", port_file_,
                                   "--log-level",   "warn"};
  if (options_.in_memory) {
    args.push_back("--in-memory");
  } else {
    args.push_back("--data-dir");
    args.push_back(options_.data_dir);
  }
  if (!options_.token.empty()) {
    args.push_back("--token");
    args.push_back(options_.token);
  }
  for (const auto& e : options_.extra) args.push_back(e);
  // The S3 run of the integration subset (CMakeLists.txt, "S3." cases): blobs on the
  // shared test S3 server, one bucket per data directory (so a restarted server finds
  // its objects again), unless the case chose its blob store itself.
  std::vector<std::pair<std::string, std::string>> s3_env;
  if (BlobsOnS3() && std::find(options_.extra.begin(), options_.extra.end(), "--blobs") ==
                         options_.extra.end()) {
    args.push_back("--blobs");
    args.push_back(
        S3BlobsFlag(TestBucketFor(options_.in_memory ? "" : options_.data_dir)));
    s3_env = {{"AWS_ACCESS_KEY_ID", "S3RVER"}, {"AWS_SECRET_ACCESS_KEY", "S3RVER"}};
  }
  for (const auto& kv : s3_env) options_.env.push_back(kv);
  // The PostgreSQL run likewise: tables in the data directory's database on the shared
  // test server, unless the case chose its table store itself.
  if (StoreOnPostgres() && std::find(options_.extra.begin(), options_.extra.end(),
                                     "--store") == options_.extra.end()) {
    args.push_back("--store");
    args.push_back(TestPostgresDatabaseFor(options_.in_memory ? "" : options_.data_dir));
  }
  // The environment, built before fork (the child only execs).
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [key, value] : options_.env) replaced |= key == name;
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [key, value] : options_.env) env.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) {
    error_ = "fork failed";
    return false;
  }
  if (pid == 0) {
    int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  pid_ = pid;
  // The port file is a FIFO: reading it waits for the server to announce its port, which
  // it does once it is bound and ready. poll() bounds each wait so a server that dies
  // during start-up is noticed; the whole start is bounded at 60 s of real time.
  int fd = open(port_file_.c_str(), O_RDONLY | O_NONBLOCK);
  std::string port_text;
  for (int slice = 0; slice < 600 && fd >= 0; ++slice) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0 && (p.revents & POLLIN)) {
      char buf[32];
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n > 0) port_text.append(buf, static_cast<size_t>(n));
      if (port_text.find('\n') != std::string::npos) break;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
  }
  if (fd >= 0) close(fd);
  if (pid_ <= 0) {
    error_ = "server exited during start-up: " + Log();
    return false;
  }
  if (port_text.find('\n') == std::string::npos) {
    error_ = "server did not announce its port: " + Log();
    Kill();
    return false;
  }
  port_ = std::stoi(port_text);
  httplib::Client client = Client();
  auto res = client.Get("/readyz");
  if (res && res->status == 200) return true;
  error_ = "server is not ready: " + Log();
  Kill();
  return false;
}

int ServerProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool ServerProcess::Exited() {
  if (pid_ <= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  return true;
}

bool ServerProcess::WaitForExit(int real_seconds) {
  if (pid_ <= 0) return true;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd < 0) {
    // No pidfd (a kernel before 5.3): look again and again instead.
    return static_cast<bool>(Eventually([&] { return Exited(); }, real_seconds));
  }
  pollfd exit_event{pidfd, POLLIN, 0};
  const int ready = poll(&exit_event, 1, real_seconds * 1000);
  close(pidfd);
  return ready > 0 && Exited();
}

httplib::Client ServerProcess::Client() const {
  const bool tls = !options_.tls_ca_file.empty();
  httplib::Client client((tls ? "https://127.0.0.1:" : "http://127.0.0.1:") +
                         std::to_string(port_));
  if (tls) client.set_ca_cert_path(options_.tls_ca_file.c_str());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_read_timeout(60);
  client.set_write_timeout(60);
  if (!options_.token.empty()) client.set_bearer_token_auth(options_.token.c_str());
  return client;
}

std::string ServerProcess::Log() const { return ReadFile(log_path_); }

int64_t ServerProcess::PeakRssKb() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

bool AdvanceClockWhenIdle(httplib::Client& client, int64_t seconds) {
  httplib::Result metrics = client.Get("/metrics");
  if (!metrics || metrics->status != 200) return false;
  std::istringstream lines(metrics->body);
  const std::string gauge = "sheetlog_function_running{";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(gauge, 0) != 0) continue;
    if (std::stod(line.substr(line.find_last_of(' ') + 1)) != 0) return false;
  }
  return Post(client, "/v1/admin/clock", {{"advance_s", seconds}}).status == 200;
}

::testing::AssertionResult Eventually(const std::function<bool()>& condition,
                                      int real_seconds) {
  return Eventually(condition, {}, real_seconds);
}

::testing::AssertionResult Eventually(const std::function<bool()>& condition,
                                      const std::function<std::string()>& last_seen,
                                      int real_seconds) {
  return Eventually(
      condition, last_seen, real_seconds,
      [](std::chrono::milliseconds backoff) { std::this_thread::sleep_for(backoff); });
}

::testing::AssertionResult Eventually(
    const std::function<bool()>& condition, const std::function<std::string()>& last_seen,
    int real_seconds,
    const std::function<void(std::chrono::milliseconds)>& wait_at_most) {
  constexpr std::chrono::milliseconds kFirstBackoff{1};
  constexpr std::chrono::milliseconds kMostBackoff{100};
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(real_seconds);
  std::chrono::milliseconds backoff = kFirstBackoff;
  int64_t checks = 0;
  while (true) {
    ++checks;
    if (condition()) return ::testing::AssertionSuccess();
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    wait_at_most(
        std::min(backoff, std::chrono::ceil<std::chrono::milliseconds>(deadline - now)));
    backoff = std::min(backoff * 2, kMostBackoff);
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << "the condition did not hold within " << real_seconds << " s of real time ("
          << checks << " checks over " << waited.count() << " ms)\n";
  if (last_seen) failure << "last seen: " << last_seen() << "\n";
  return failure;
}

JsonResponse Request(httplib::Client& client, const std::string& method,
                     const std::string& path, const std::string& body,
                     const httplib::Headers& headers) {
  httplib::Result res(nullptr, httplib::Error::Unknown);
  if (method == "GET") {
    res = client.Get(path.c_str(), headers);
  } else if (method == "HEAD") {
    res = client.Head(path.c_str(), headers);
  } else if (method == "POST") {
    res = client.Post(path.c_str(), headers, body, "application/json");
  } else if (method == "PUT") {
    res = client.Put(path.c_str(), headers, body, "application/octet-stream");
  } else if (method == "DELETE") {
    res = client.Delete(path.c_str(), headers);
  } else if (method == "PATCH") {
    res = client.Patch(path.c_str(), headers, body, "application/json");
  }
  JsonResponse out;
  if (!res) {
    out.status = -1;
    out.raw = httplib::to_string(res.error());
    return out;
  }
  out.status = res->status;
  out.headers = res->headers;
  out.raw = res->body;
  out.body = ParseJsonOrDiscarded(res->body);
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}

JsonResponse RequestUrl(httplib::Client& server, const std::string& method,
                        const std::string& url, const std::string& body) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return Request(server, method, url, body);
  const size_t path = url.find('/', scheme + 3);
  httplib::Client origin(url.substr(0, path));
  return Request(origin, method, path == std::string::npos ? "/" : url.substr(path),
                 body);
}

}  // namespace sheetlog::testing
