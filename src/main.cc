// sheetlog: the command line. `sheetlog serve` runs the server; see `sheetlog help`.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "src/api/server.h"
#include "src/app/app.h"
#include "src/cli/cli.h"
#include "src/serve_config.h"
#include "src/version.h"

namespace sheetlog {
namespace {

const char* kUsage =
    R"(sheetlog — an event-sourced spreadsheet backend with local AWS stand-ins

Usage: sheetlog <command> [flags]

Commands:
  serve      run the HTTP server
  restore --from DIR --data-dir DIR [--json]
             restore a backup (`sheetlog backup`) into a new or empty data directory,
             checking every file against its checksum first; no server may use it
  version    print the version
  help       show this text
%s
Client commands talk to a running server: --server URL (default $SHEETLOG_URL, else
http://127.0.0.1:8787), --token TOKEN (default $SHEETLOG_TOKEN).

%s)";

using cli::Fail;

int Serve(int argc, char** argv) {
  ServeConfig config;
  Status configured = config.ApplyEnvironment(std::getenv);
  if (configured.ok()) configured = config.ParseCommandLine(argc, argv, 2);
  if (!configured.ok()) return Fail(configured.message());
  const ServeOptions& options = config.options();
  const AppOptions& app_options = options.app;
  const api::ServerOptions& server_options = options.server;
  spdlog::set_level(spdlog::level::from_str(options.log_level));

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
  if (!options.port_file.empty()) {
    // Written in place (not renamed): it may be a FIFO a test harness waits on.
    std::ofstream(options.port_file) << server.port() << "\n";
  }
  spdlog::info("sheetlog {} serving http://{}:{} data={} sync={} clock={}{}{}", Version(),
               server_options.host, server.port(),
               app_options.in_memory ? "(in memory)" : (*app)->data_dir(), options.sync,
               options.clock, server_options.token.empty() ? "" : " auth=token",
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

// Offline: writes a data directory no server uses yet (App::Restore).
int Restore(int argc, char** argv) {
  Flags flags(argc, argv, 2, {"json"});
  if (!flags.error().empty()) return Fail(flags.error());
  const std::optional<std::string> from = flags.Find("from");
  const std::optional<std::string> data_dir = flags.Find("data-dir");
  const bool as_json = flags.Bool("json");
  if (std::string unused = flags.Unused(); !unused.empty()) {
    return Fail("unknown flag --" + unused + " (see `sheetlog help`)");
  }
  if (!from || !data_dir || !flags.positional().empty()) {
    return Fail("usage: sheetlog restore --from DIR --data-dir DIR [--json]");
  }
  Result<RestoreReport> report = App::Restore(*from, *data_dir);
  if (!report.ok()) return Fail("restore refused: " + report.status().message());
  if (as_json) {
    std::printf("%s\n", report->ToJson().dump(2).c_str());
  } else {
    std::printf(
        "restored backup %s (sheetlog %s, schema %d) into %s: database %lld bytes, "
        "%lld objects (%lld bytes), every file matched its checksum\n",
        report->id.c_str(), report->app_version.c_str(), report->schema_version,
        data_dir->c_str(), static_cast<long long>(report->database_bytes),
        static_cast<long long>(report->blobs),
        static_cast<long long>(report->blob_bytes));
  }
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
  usage.replace(usage.find("%s"), 2, ServeUsage());
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
  if (command == "restore") return sheetlog::Restore(argc, argv);
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
