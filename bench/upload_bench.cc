// Large entries over HTTP against the real binary: the presigned PUT of an upload's
// body, streamed to the blob store, and the complete that appends the entry.
//
//   build/<dir>/upload_bench
//
// For 1 MB (20 uploads) and 50 MB (4 uploads) bodies: POST .../uploads, PUT the body to
// the presigned URL (timed: MB/s), POST .../complete (timed). The server runs with its
// defaults (blob bodies and metadata fsynced before the PUT is answered).
// Record results in bench/README.md with the date and machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Require(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "upload_bench: %s\n", what.c_str());
    std::exit(1);
  }
}

int Main() {
  TempDir dir;
  ServerProcess server{ServerOptions(dir.path())};
  Require(server.Start(), "server: " + server.error());
  httplib::Client client = server.Client();
  JsonResponse sheet = Post(client, "/v1/sheets", json::object());
  Require(sheet.status == 201, "create sheet: " + sheet.raw);
  const std::string base = "/v1/sheets/" + sheet.body["id"].get<std::string>();

  for (auto [megabytes, count] : {std::pair{1, 20}, std::pair{50, 4}}) {
    std::string body(static_cast<size_t>(megabytes) << 20, '\0');
    for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i % 23);
    std::vector<double> put_seconds, complete_ms;
    for (int i = 0; i < count; ++i) {
      JsonResponse created = Post(client, base + "/uploads", {{"type", "Attachment"}});
      Require(created.status == 201, "upload: " + created.raw);
      std::string url = created.body["url"];
      const auto put_start = Clock::now();
      auto put =
          client.Put(url.substr(url.find("/v1/")), body, "application/octet-stream");
      put_seconds.push_back(SecondsSince(put_start));
      Require(put && put->status / 100 == 2, "PUT failed");
      const auto complete_start = Clock::now();
      JsonResponse done = Post(
          client,
          base + "/uploads/" + created.body["upload_id"].get<std::string>() + "/complete",
          json::object());
      complete_ms.push_back(SecondsSince(complete_start) * 1000);
      Require(done.status == 201, "complete: " + done.raw);
    }
    std::sort(put_seconds.begin(), put_seconds.end());
    std::sort(complete_ms.begin(), complete_ms.end());
    const double median = put_seconds[put_seconds.size() / 2];
    std::printf(
        "%d MB x %d: PUT median %.1f ms = %.0f MB/s (best %.0f MB/s); complete "
        "median %.2f ms\n",
        megabytes, count, median * 1000, megabytes / median,
        megabytes / put_seconds.front(), complete_ms[complete_ms.size() / 2]);
  }
  server.Stop();
  return 0;
}

}  // namespace
}  // namespace sheetlog::testing

int main() { return sheetlog::testing::Main(); }
