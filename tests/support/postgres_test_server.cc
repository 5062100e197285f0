#include "tests/support/postgres_test_server.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>

#include "emulator/env/uuid.h"
#include "emulator/postgres/postgres_connection.h"

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

// Creates database `name` on the server; false (the failure recorded) if it cannot.
bool CreateDatabase(const std::string& admin, const std::string& name) {
  auto conn = PostgresConnection::Open(admin, 10);
  Status created = conn.ok() ? (*conn)->Exec("CREATE DATABASE " + name) : conn.status();
  if (!created.ok()) {
    ADD_FAILURE() << "creating database " << name << ": " << created.ToString();
    return false;
  }
  return true;
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
