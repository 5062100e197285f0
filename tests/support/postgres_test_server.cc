#include "tests/support/postgres_test_server.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "emulator/env/uuid.h"
#include "emulator/postgres/postgres_connection.h"
#include "emulator/table/table.h"

namespace sheetlog::testing {

namespace {

// ctest's postgres fixture runs it in <build>/postgres (CMakeLists.txt); the variable
// points elsewhere (a server started by hand with scripts/postgres start DIR).
std::string PostgresServerDir() {
  const char* from_env = std::getenv("SHEETLOG_TEST_POSTGRES_DIR");
  return from_env != nullptr && *from_env != '\0' ? from_env : SHEETLOG_TEST_POSTGRES_DIR;
}

std::string ReadConninfo(const std::string& dir) {
  std::ifstream in(dir + "/conninfo");
  std::string conninfo;
  std::getline(in, conninfo);
  return conninfo;
}

}  // namespace

bool PostgresTestServerRunning() { return !ReadConninfo(PostgresServerDir()).empty(); }

std::string PostgresTestConninfo() {
  const std::string dir = PostgresServerDir();
  const std::string conninfo = ReadConninfo(dir);
  if (conninfo.empty()) {
    ADD_FAILURE()
        << "no " << dir
        << "/conninfo: the test PostgreSQL server is not running (run "
           "Postgres* cases through ctest, whose postgres fixture starts it, or "
           "`scripts/postgres start DIR` and SHEETLOG_TEST_POSTGRES_DIR=DIR)";
  }
  return conninfo;
}

namespace {

// Creates database `name` on the server (a copy of `template_name` if given); false
// (the failure recorded) if it cannot.
bool CreateDatabase(const std::string& admin, const std::string& name,
                    const std::string& template_name = "") {
  auto conn = PostgresConnection::Open(admin, 10);
  std::string sql = "CREATE DATABASE " + name;
  if (!template_name.empty()) sql += " TEMPLATE " + template_name;
  Status created = conn.ok() ? (*conn)->Exec(sql) : conn.status();
  if (!created.ok()) {
    ADD_FAILURE() << "creating database " << name << ": " << created.ToString();
    return false;
  }
  return true;
}

// The name of `key`'s template database, made by `prepare` if no process has made it
// yet; "" (the failure recorded) if it cannot be. Under an advisory lock on the server,
// so concurrent cases (other processes) wait for the one making it; the template is
// made under another name and renamed once whole, so a crash while making it leaves
// nothing that looks finished.
std::string EnsureTemplate(const std::string& admin, const std::string& key,
                           const PrepareTemplate& prepare) {
  const std::string name = "tpl_" + key;
  auto conn = PostgresConnection::Open(admin, 10);
  if (!conn.ok()) {
    ADD_FAILURE() << "template " << name << ": " << conn.status().ToString();
    return "";
  }
  PostgresConnection& c = **conn;
  const Value lock_key(std::string("sheetlog test template " + key));
  Result<int64_t> locked =
      c.RunSql("SELECT pg_advisory_lock(hashtext(?1))", {lock_key}, nullptr);
  if (!locked.ok()) {
    ADD_FAILURE() << "locking template " << name << ": " << locked.status().ToString();
    return "";
  }
  Result<int64_t> found =
      c.RunSql("SELECT 1 FROM pg_database WHERE datname = ?1", {Value(name)}, nullptr);
  Status status = found.status();
  if (status.ok() && *found == 0) {
    const std::string building = name + "_building";
    status = c.Exec("DROP DATABASE IF EXISTS " + building + " WITH (FORCE)");
    if (status.ok()) status = c.Exec("CREATE DATABASE " + building);
    if (status.ok()) status = prepare(admin + " dbname=" + building);
    // Whatever `prepare` left connected (a listening thread's session) would keep the
    // database from being renamed and copied.
    if (status.ok()) {
      status = c.RunSql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = ?1 AND pid <> pg_backend_pid()",
                    {Value(building)}, nullptr)
                   .status();
    }
    if (status.ok()) {
      status = c.Exec("ALTER DATABASE " + building + " RENAME TO " + name);
    }
  }
  (void)c.RunSql("SELECT pg_advisory_unlock(hashtext(?1))", {lock_key}, nullptr);
  if (!status.ok()) {
    ADD_FAILURE() << "making template " << name << ": " << status.ToString();
    return "";
  }
  return name;
}

std::string DatabaseNameFor(const std::string& purpose) {
  std::string name = "t_" + purpose.substr(0, 30) + "_" + NewRandomUuid().substr(0, 8);
  for (char& c : name) {
    c = std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '_';
  }
  return name;
}

}  // namespace

std::string NewPostgresTestDatabase(const std::string& purpose) {
  const std::string admin = PostgresTestConninfo();
  if (admin.empty()) return "";
  const std::string name = DatabaseNameFor(purpose);
  if (!CreateDatabase(admin, name)) return "";
  // The server's conninfo names dbname=postgres last: a later keyword wins.
  return admin + " dbname=" + name;
}

std::string TemplateKey(const std::vector<std::string>& parts) {
  // FNV-1a over the parts and their lengths: stable across processes of one build.
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&hash](std::string_view bytes) {
    for (unsigned char byte : bytes) {
      hash ^= byte;
      hash *= 1099511628211ull;
    }
  };
  for (const std::string& part : parts) {
    mix(std::to_string(part.size()));
    mix(part);
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

std::string NewPostgresTestDatabaseFrom(const std::string& purpose,
                                        const std::string& template_key,
                                        const PrepareTemplate& prepare) {
  const std::string admin = PostgresTestConninfo();
  if (admin.empty()) return "";
  const std::string template_name = EnsureTemplate(admin, template_key, prepare);
  if (template_name.empty()) return "";
  const std::string name = DatabaseNameFor(purpose);
  if (!CreateDatabase(admin, name, template_name)) return "";
  return admin + " dbname=" + name;
}

PostgresTestDatabase::PostgresTestDatabase(const std::string& purpose,
                                           const std::string& template_key,
                                           const PrepareTemplate& prepare)
    : admin_(PostgresTestConninfo()) {
  if (admin_.empty()) return;
  const std::string template_name = EnsureTemplate(admin_, template_key, prepare);
  if (template_name.empty()) return;
  name_ = DatabaseNameFor(purpose);
  if (!CreateDatabase(admin_, name_, template_name)) return;
  conninfo_ = admin_ + " dbname=" + name_;
}

PostgresTestDatabase::PostgresTestDatabase(const std::string& purpose)
    : admin_(PostgresTestConninfo()) {
  if (admin_.empty()) return;
  name_ = DatabaseNameFor(purpose);
  if (!CreateDatabase(admin_, name_)) return;
  conninfo_ = admin_ + " dbname=" + name_;
}

PostgresTestDatabase::~PostgresTestDatabase() {
  if (conninfo_.empty()) return;
  auto conn = PostgresConnection::Open(admin_, 10);
  Status dropped =
      conn.ok() ? (*conn)->Exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)")
                : conn.status();
  EXPECT_TRUE(dropped.ok()) << dropped.ToString();
}

}  // namespace sheetlog::testing
