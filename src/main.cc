// sheetlog: the command line. `sheetlog serve` runs the server; see `sheetlog help`.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/table/request_units.h"
#include "src/api/server.h"
#include "src/app/app.h"
#include "src/app/seed.h"
#include "src/cli/cli.h"
#include "src/log/event_log.h"
#include "src/log_output.h"
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
  version [--json]
             print the version; --json: {"version", "license"} as JSON
  help       show this text; `sheetlog COMMAND --help` (or -h): that command's usage
%s
Client commands talk to a running server: --server URL (default $SHEETLOG_URL, else
http://127.0.0.1:8787), --token TOKEN (default $SHEETLOG_TOKEN).

%s)";

using cli::Fail;
using cli::Flags;

// The token of --token-file: the file's first line, trimmed. The file must be
// readable by its owner only (the service user), so no other local user can read it.
Result<std::string> ReadTokenFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return InvalidArgument("--token-file " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument("--token-file " + path + " can be read by other users (mode " +
                           mode + "): chmod 0400 it, owned by the user sheetlog runs as");
  }
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return InvalidArgument("--token-file " + path + " cannot be read or is empty");
  }
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
    line.pop_back();
  }
  return line;
}

// The text of the configuration file `path`.
Result<std::string> ReadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return InvalidArgument("cannot read configuration file " + path + ": " +
                           std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether stdout is connected to systemd's journal: JOURNAL_STREAM, set by systemd,
// names the stream ("device:inode"), and log lines then carry their syslog priority
// (src/log_output.h).
bool StdoutIsTheJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  struct stat st;
  if (fstat(STDOUT_FILENO, &st) != 0) return false;
  const std::string own = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  return own == stream;  // not when inherited by a child whose output goes elsewhere
}

int Serve(int argc, char** argv) {
  // Every setting from the command line, SHEETLOG_<NAME> and the --config file
  // (src/serve_config.h ranks them whatever the order they are applied in).
  ServeConfig config;
  Status configured = config.ApplyEnvironment(std::getenv);
  if (configured.ok()) configured = config.ParseCommandLine(argc, argv, 2);
  if (configured.ok() && !config.options().config_file.empty()) {
    // A copy: ApplyFile replaces the options it would refer to.
    const std::string path = config.options().config_file;
    Result<std::string> text = ReadConfigFile(path);
    configured = text.ok() ? config.ApplyFile(path, *text) : text.status();
  }
  if (!configured.ok()) return Fail(configured.message());
  ServeOptions options = config.options();
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  ConfigureLogOutput(options.log_format, StdoutIsTheJournal());
  // From here on a refusal is a log line too, in the chosen format: with json, one
  // critical line on stdout instead of the plain "sheetlog: ..." on stderr (exit 2
  // either way; plain with --log-level off too, so a refusal is never silent).
  auto fail = [&options](const std::string& message) {
    if (options.log_format != LogFormat::kJson ||
        !spdlog::default_logger_raw()->should_log(spdlog::level::critical)) {
      return cli::Fail(message);
    }
    spdlog::critical("{}", message);
    return 2;
  };
  if (!options.token_file.empty()) {
    if (config.origin("token").kind != SettingOrigin::Kind::kDefault) {
      return fail(
          "give --token or --token-file, not both (the token came from " +
          ServeConfig::Describe(*FindServeSetting("token"), config.origin("token")) +
          ")");
    }
    Result<std::string> token = ReadTokenFile(options.token_file);
    if (!token.ok()) return fail(token.status().message());
    if (token->find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
      return fail("--token-file " + options.token_file +
                  " holds an empty or blank token: give it a secret of visible "
                  "characters, or leave it unset (loopback only)");
    }
    options.server.token = *token;
  }
  std::optional<Seeding> seeding;
  if (!options.seed.empty()) {
    seeding.emplace(options.seed);
    if (Status prepared = seeding->PrepareStore(options.app); !prepared.ok()) {
      return fail(prepared.message());
    }
  }
  const AppOptions& app_options = options.app;
  const api::ServerOptions& server_options = options.server;

  // Signals are taken by one thread with sigwait, so no handler runs in a random thread
  // in the middle of a request.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // reload the TLS certificate and key
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto app = App::Open(app_options);
  if (!app.ok()) {
    if (seeding) seeding->Undo(nullptr);
    return fail(app.status().ToString());
  }
  // Before the server binds, so nothing answers (not even /readyz) until the seed is in.
  if (seeding) {
    if (Status seeded = seeding->Load(*app); !seeded.ok()) return fail(seeded.ToString());
  }
  api::ApiServer server(app->get(), server_options);
  if (Status bound = server.Bind(); !bound.ok()) return fail(bound.ToString());
  if (Status started = (*app)->Start(); !started.ok()) return fail(started.ToString());
  if (!options.port_file.empty()) {
    // Written in place (not renamed): it may be a FIFO a test harness waits on.
    std::ofstream(options.port_file) << server.port() << "\n";
  }
  spdlog::info(
      "sheetlog {} serving {}://{}:{} data={} store={} blobs={} sync={} clock={}{}{}",
      Version(), server.tls() ? "https" : "http", server_options.host, server.port(),
      app_options.in_memory ? "(in memory)" : (*app)->data_dir(),
      (*app)->store_description(),
      app_options.s3_blobs ? "s3://" + app_options.s3_blobs->bucket + " at " +
                                 app_options.s3_blobs->endpoint
                           : std::string("directory"),
      options.sync, options.clock, server_options.token.empty() ? "" : " auth=token",
      app_options.enable_faults ? " faults=enabled" : "");

  std::thread signal_thread([&] {
    int received = 0;
    while (sigwait(&signals, &received) == 0 && received == SIGHUP) {
      if (!server.tls()) {
        spdlog::info("SIGHUP: nothing to reload (no --tls-cert)");
      } else if (Status reloaded = server.ReloadTls(); reloaded.ok()) {
        spdlog::info("SIGHUP: TLS certificate and key reloaded from {} and {}",
                     server_options.tls_cert_file, server_options.tls_key_file);
      } else {
        spdlog::error("SIGHUP: TLS reload refused, the previous certificate stays: {}",
                      reloaded.ToString());
      }
    }
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

// `sheetlog COMMAND --help` for the commands main.cc runs itself.
std::string ServeHelp() {
  return "Usage: sheetlog serve [flags]\n"
         "\n"
         "Runs the HTTP server until SIGTERM or SIGINT (SIGHUP reloads the TLS\n"
         "certificate and key).\n"
         "\n" +
         ServeUsage() + "  -h, --help         this text\n";
}

const char* kRestoreHelp =
    "Usage: sheetlog restore --from DIR --data-dir DIR [--json]\n"
    "\n"
    "Restores a backup (`sheetlog backup`) into a new or empty data directory, checking\n"
    "every file against its checksum first; no server may use the directory. Exit 2:\n"
    "a usage error or the backup refused.\n"
    "\n"
    "  --from DIR         the backup\n"
    "  --data-dir DIR     the data directory to restore into\n"
    "  --json             the report as JSON on stdout instead of a summary line\n"
    "  -h, --help         this text\n";

const char* kVersionHelp =
    "Usage: sheetlog version [--json]\n"
    "\n"
    "Prints the version: \"sheetlog\" and the release number.\n"
    "\n"
    "  --json             {\"version\", \"license\"} as JSON\n"
    "  -h, --help         this text\n";

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
  // Every command answers --help and -h with its own usage (on stdout, exit 0),
  // before its flags are parsed: `--help` is no flag awaiting a value.
  const bool help = sheetlog::cli::WantsHelp(argc, argv);
  if (command == "serve") {
    if (help) {
      std::fputs(sheetlog::ServeHelp().c_str(), stdout);
      return 0;
    }
    return sheetlog::Serve(argc, argv);
  }
  if (command == "restore") {
    if (help) {
      std::fputs(sheetlog::kRestoreHelp, stdout);
      return 0;
    }
    return sheetlog::Restore(argc, argv);
  }
  for (const sheetlog::cli::Command& c : sheetlog::ClientCommands()) {
    if (command != c.name) continue;
    if (help) {
      std::fputs(sheetlog::cli::CommandHelp(c).c_str(), stdout);
      return 0;
    }
    return c.run(argc, argv);
  }
  if ((command == "version" || command == "--version") && help) {
    std::fputs(sheetlog::kVersionHelp, stdout);
    return 0;
  }
  if (command == "version" || command == "--version") {
    // The license is LICENSE's and packaging/copyright's (scripts/check-package).
    if (argc > 2 && std::strcmp(argv[2], "--json") == 0) {
      std::printf("{\"version\":\"%s\",\"license\":\"Apache-2.0\"}\n",
                  sheetlog::Version());
    } else {
      std::printf("sheetlog %s\n", sheetlog::Version());
    }
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
