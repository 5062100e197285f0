// sheetlog: the command line. `sheetlog serve` runs the server; see `sheetlog help`.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/api/server.h"
#include "src/app/app.h"
#include "src/cli/cli.h"
#include "src/version.h"

namespace sheetlog {
namespace {

const char* kUsage =
    R"(sheetlog — an event-sourced spreadsheet backend with local AWS stand-ins

Usage: sheetlog <command> [flags]

Commands:
  serve      run the HTTP server
  version    print the version
  help       show this text
%s
Client commands talk to a running server: --server URL (default $SHEETLOG_URL, else
http://127.0.0.1:8787), --token TOKEN (default $SHEETLOG_TOKEN).

serve flags:
  --data-dir DIR        data directory (default ./data)
  --listen HOST:PORT    listen address (default 127.0.0.1:8787; port 0 = any free port)
  --in-memory           temporary data directory removed at exit, no syncs
  --token TOKEN         bearer token required on /v1/* (or SHEETLOG_TOKEN); not blank
  --allowed-host H,...  host names (or name:port) accepted in the Host header besides
                        IP addresses and localhost (a guard against DNS rebinding)
  --sync normal|full    durability: normal survives kill -9, full also power loss
  --max-request BYTES   largest JSON request body (default 1048576)
  --inline-limit BYTES  larger entry bodies go to the blob store (default 16384)
  --orphan-ttl SECONDS  uploads never completed are swept after this (default 259200)
  --clock manual        time moves only through POST /v1/admin/clock
  --enable-faults       allow arming fault points through /v1/admin/faults
  --allow-reset         allow POST /v1/admin/reset
  --retain-segments N   keep the newest N segments of each log (default 0 = all)
  --retain-days D       keep segments with entries from the last D days (default 0 = all)
  --retain-archive      archive dropped segments to the blob store first
  --retention-period S  seconds between retention runs (default 3600)
  --batching-window MS  side effects of appends (snapshots, upload untags) wait up to
                        MS milliseconds to be handled together (default 5; 0 = each
                        commit at once)
  --prices NAME=USD,...  prices of GET .../cost (per million requests or units, per
                        GB-month): dynamodb_wru, dynamodb_rru, dynamodb_gb_month, s3_put,
                        s3_get, s3_gb_month, sqs (defaults: seed 001's on-demand prices)
  --threads N           HTTP worker threads (default 64)
  --max-connections N   open connections; when full the oldest idle one is closed
                        (default 16384, at most the file limit - 512)
  --header-timeout S    seconds from a request head's first byte to its end (10)
  --idle-timeout S      seconds a keep-alive connection may wait for a request (60)
  --body-timeout S      seconds a request body may stall (30); also responses
  --body-min-rate B     bytes/s a request body must average: it must be complete
                        within --body-timeout plus 1 s per B bytes received (1024;
                        0 = no rate rule)
  --response-min-rate B bytes/s a client must read a response at on average (event
                        streams excepted): within --body-timeout plus 1 s per B
                        bytes sent, or it is closed (1024; 0 = no rate rule)
  --shutdown-grace S    seconds in-flight requests get after SIGTERM (2)
  --port-file FILE      write the bound port to FILE once listening
  --log-level LEVEL     trace|debug|info|warn|error (default info)
)";

using cli::Fail;
using cli::Flags;

bool ParseInt64(const std::string& text, int64_t* out) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') return false;
  *out = v;
  return true;
}

int Serve(int argc, char** argv) {
  Flags flags(argc, argv, 2,
              {"in-memory", "enable-faults", "allow-reset", "retain-archive"});
  if (!flags.error().empty()) return Fail(flags.error());
  if (!flags.positional().empty()) {
    return Fail("unexpected argument '" + flags.positional().front() + "'");
  }

  AppOptions app_options;
  app_options.data_dir = flags.Get("data-dir", "./data");
  app_options.in_memory = flags.Bool("in-memory");
  std::string sync = flags.Get("sync", "normal");
  if (sync == "normal") {
    app_options.sync = SyncMode::kNormal;
  } else if (sync == "full") {
    app_options.sync = SyncMode::kFull;
  } else {
    return Fail("--sync must be normal or full");
  }
  std::string clock = flags.Get("clock", "system");
  if (clock != "system" && clock != "manual")
    return Fail("--clock must be system or manual");
  app_options.manual_clock = clock == "manual";
  app_options.enable_faults = flags.Bool("enable-faults");
  app_options.allow_reset = flags.Bool("allow-reset");

  api::ServerOptions server_options;
  const char* env_token = std::getenv("SHEETLOG_TOKEN");
  std::optional<std::string> token_flag = flags.Find("token");
  if (token_flag || env_token != nullptr) {
    server_options.token = token_flag ? *token_flag : env_token;
    if (server_options.token.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
      return Fail(std::string(token_flag ? "--token" : "SHEETLOG_TOKEN") +
                  " is empty or blank: give it a secret of visible characters, or "
                  "leave it unset (loopback only)");
    }
  }
  const std::string allowed_hosts = flags.Get("allowed-host", "");
  for (std::string_view hosts = allowed_hosts; !hosts.empty();) {
    size_t comma = hosts.find(',');
    std::string host(hosts.substr(0, comma));
    if (!host.empty()) server_options.allowed_hosts.push_back(host);
    if (comma == std::string_view::npos) break;
    hosts.remove_prefix(comma + 1);
  }
  std::string listen = flags.Get("listen", "127.0.0.1:8787");
  size_t colon = listen.rfind(':');
  int64_t port = 0;
  if (colon == std::string::npos || !ParseInt64(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return Fail("--listen must be HOST:PORT, got '" + listen + "'");
  }
  server_options.host = listen.substr(0, colon);
  server_options.port = static_cast<int>(port);
  int64_t number = 0;
  if (!ParseInt64(flags.Get("max-request", "1048576"), &number) || number < 1024) {
    return Fail("--max-request must be an integer >= 1024");
  }
  server_options.max_request_bytes = number;
  if (!ParseInt64(flags.Get("inline-limit", "16384"), &number) || number < 0) {
    return Fail("--inline-limit must be a non-negative integer");
  }
  app_options.inline_limit = number;
  if (!ParseInt64(flags.Get("orphan-ttl", "259200"), &number) || number < 0) {
    return Fail("--orphan-ttl must be a non-negative integer (seconds)");
  }
  app_options.orphan_ttl_seconds = number;
  if (!ParseInt64(flags.Get("retain-segments", "0"), &number) || number < 0) {
    return Fail("--retain-segments must be a non-negative integer (0 = no limit)");
  }
  app_options.retain_segments = number;
  if (!ParseInt64(flags.Get("retain-days", "0"), &number) || number < 0) {
    return Fail("--retain-days must be a non-negative integer (0 = no limit)");
  }
  app_options.retain_days = number;
  app_options.retain_archive = flags.Bool("retain-archive");
  if (!ParseInt64(flags.Get("retention-period", "3600"), &number) || number < 1) {
    return Fail("--retention-period must be a positive integer (seconds)");
  }
  app_options.retention_period_seconds = number;
  if (!ParseInt64(flags.Get("batching-window", "5"), &number) || number < 0 ||
      number > 10000) {
    return Fail("--batching-window must be in 0..10000 (milliseconds)");
  }
  app_options.batching_window_micros = number * 1000;
  if (Status prices = app_options.prices.Override(flags.Get("prices", ""));
      !prices.ok()) {
    return Fail("--prices: " + prices.message());
  }
  if (!ParseInt64(flags.Get("threads", "64"), &number) || number < 1 || number > 4096) {
    return Fail("--threads must be in 1..4096");
  }
  server_options.threads = static_cast<int>(number);
  if (!ParseInt64(flags.Get("max-connections", "16384"), &number) || number < 1) {
    return Fail("--max-connections must be a positive integer");
  }
  server_options.http.max_connections = static_cast<size_t>(number);
  struct TimeoutFlag {
    const char* name;
    const char* fallback;
    int64_t* target_ms;
  } timeouts[] = {
      {"header-timeout", "10", &server_options.http.header_timeout_ms},
      {"idle-timeout", "60", &server_options.http.idle_timeout_ms},
      {"body-timeout", "30", &server_options.http.body_timeout_ms},
      {"shutdown-grace", "2", &server_options.http.shutdown_grace_ms},
  };
  for (const TimeoutFlag& timeout : timeouts) {
    std::string text = flags.Get(timeout.name, timeout.fallback);
    char* end = nullptr;
    double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(seconds >= 0.001) || seconds > 86400) {
      return Fail(std::string("--") + timeout.name +
                  " must be a number of seconds in 0.001..86400");
    }
    *timeout.target_ms = static_cast<int64_t>(seconds * 1000);
  }
  server_options.http.write_timeout_ms = server_options.http.body_timeout_ms;
  if (!ParseInt64(flags.Get("body-min-rate", "1024"), &number) || number < 0) {
    return Fail("--body-min-rate must be a non-negative integer (bytes/s)");
  }
  server_options.http.body_min_rate = number;
  if (!ParseInt64(flags.Get("response-min-rate", "1024"), &number) || number < 0) {
    return Fail("--response-min-rate must be a non-negative integer (bytes/s)");
  }
  server_options.http.response_min_rate = number;
  std::string port_file = flags.Get("port-file", "");
  std::string level = flags.Get("log-level", "info");
  spdlog::set_level(spdlog::level::from_str(level));
  if (std::string unused = flags.Unused(); !unused.empty()) {
    return Fail("unknown flag --" + unused + " (see `sheetlog help`)");
  }

  // Signals are taken by one thread with sigwait, so no handler runs in a random thread
  // in the middle of a request.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto app = App::Open(app_options);
  if (!app.ok()) return Fail(app.status().ToString());
  api::ApiServer server(app->get(), server_options);
  if (Status bound = server.Bind(); !bound.ok()) return Fail(bound.ToString());
  if (Status started = (*app)->Start(); !started.ok()) return Fail(started.ToString());
  if (!port_file.empty()) {
    // Written in place (not renamed): it may be a FIFO a test harness waits on.
    std::ofstream(port_file) << server.port() << "\n";
  }
  spdlog::info("sheetlog {} serving http://{}:{} data={} sync={} clock={}{}{}", Version(),
               server_options.host, server.port(),
               app_options.in_memory ? "(in memory)" : (*app)->data_dir(), sync, clock,
               server_options.token.empty() ? "" : " auth=token",
               app_options.enable_faults ? " faults=enabled" : "");

  std::thread signal_thread([&] {
    int received = 0;
    sigwait(&signals, &received);
    spdlog::info("received signal {}, shutting down", received);
    server.Stop();
  });
  server.Serve();  // returns once stopped and in-flight requests are done
  (*app)->Stop();
  // If Serve() ended on its own (not by signal), release the signal thread.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  app->reset();  // closes the database
  spdlog::info("sheetlog stopped");
  return 0;
}

}  // namespace
}  // namespace sheetlog

namespace sheetlog {
namespace {

std::vector<cli::Command> ClientCommands() {
  std::vector<cli::Command> commands = cli::OpsCommands();
  for (const cli::Command& c : cli::TransferCommands()) commands.push_back(c);
  return commands;
}

std::string Usage() {
  std::string lines;
  for (const cli::Command& c : ClientCommands())
    lines += std::string("  ") + c.usage + "\n";
  std::string usage(kUsage);
  usage.replace(usage.find("%s"), 2, lines);
  return usage;
}

}  // namespace
}  // namespace sheetlog

int main(int argc, char** argv) {
  std::string command = argc > 1 ? argv[1] : "help";
  if (command == "serve") {
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {  // every flag is in the one usage text
        std::fputs(sheetlog::Usage().c_str(), stdout);
        return 0;
      }
    }
    return sheetlog::Serve(argc, argv);
  }
  for (const sheetlog::cli::Command& c : sheetlog::ClientCommands()) {
    if (command == c.name) return c.run(argc, argv);
  }
  if (command == "version" || command == "--version") {
    std::printf("sheetlog %s\n", sheetlog::Version());
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(sheetlog::Usage().c_str(), stdout);
    return 0;
  }
  std::fprintf(stderr, "sheetlog: unknown command '%s'\n\n%s", command.c_str(),
               sheetlog::Usage().c_str());
  return 2;
}
