// The client side of the command line: commands other than `serve` talk to a running
// server over HTTP (like any other client), so they work the same against a local data
// dir or a remote install, and never race the server for the SQLite file.
//
// Each command is registered in a table (OpsCommands, TransferCommands); main.cc
// dispatches on the first argument and prints their usage lines.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sheetlog::cli {

// --name value / --name=value / --flag for the listed booleans, and positional
// arguments (anything not starting with "--"). Unknown flags are reported by Unused().
class Flags {
 public:
  Flags(int argc, char** argv, int first, const std::vector<std::string>& booleans);

  const std::string& error() const { return error_; }
  std::string Get(const std::string& name, const std::string& fallback);
  std::optional<std::string> Find(const std::string& name);
  bool Bool(const std::string& name) { return Get(name, "false") == "true"; }
  const std::vector<std::string>& positional() const { return positional_; }
  // The first flag given but never asked for, or "".
  std::string Unused() const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> used_;
  std::vector<std::string> positional_;
  std::string error_;
};

// Prints "sheetlog: <message>" to stderr; returns 2 (the exit code for usage errors
// and failures to reach the server).
int Fail(const std::string& message);

// A connection to the server named by --server (default $SHEETLOG_URL, else
// http://127.0.0.1:8787) with the token of --token (default $SHEETLOG_TOKEN).
class Client {
 public:
  explicit Client(Flags& flags);

  struct Response {
    int status = 0;       // 0: no answer (connection refused, timeout)
    nlohmann::json body;  // parsed JSON; null if the body is not JSON
    std::string raw;
    std::string error;  // why there was no answer, or the server's error message
  };
  Response Get(const std::string& path);
  Response Post(const std::string& path, const nlohmann::json& body);
  Response Send(const std::string& method, const std::string& path,
                const std::string& body, const std::string& content_type);
  // For streaming transfers (presigned PUTs, exports).
  httplib::Client& http() { return *http_; }
  const std::string& base_url() const { return base_url_; }

 private:
  Response Finish(const httplib::Result& result);

  std::string base_url_;
  std::unique_ptr<httplib::Client> http_;
};

// A progress line on stderr when stderr is a terminal ("label  42% 12.3 MB"), nothing
// otherwise. Update as often as you like: it redraws at most ten times a second.
class Progress {
 public:
  Progress(std::string label, int64_t total /* 0 = unknown */);
  ~Progress();  // ends the line
  void Update(int64_t done);

 private:
  std::string label_;
  int64_t total_;
  bool enabled_;
  int64_t last_draw_micros_ = 0;
};

struct Command {
  const char* name;
  const char* usage;                  // one line: "name ARGS   what it does"
  int (*run)(int argc, char** argv);  // argv[1] is the command name
  // `sheetlog NAME --help`: "Usage: sheetlog NAME ARGS" and a line per argument and
  // flag of its own (CommandHelp adds --server and --token).
  const char* help;
};

// True if an argument after the command name (argv[2...]) is --help or -h: the command
// answers with its own usage, runs nothing and exits 0, whatever else was given.
bool WantsHelp(int argc, char** argv);

// What `sheetlog NAME --help` prints for a client command: its help and the flags every
// client command takes.
std::string CommandHelp(const Command& command);

// The operations commands: reprocess, verify, rebuild-snapshots, ... (cli_ops.cc).
std::vector<Command> OpsCommands();
// The file transfers: import, export (cli_transfer.cc).
std::vector<Command> TransferCommands();

}  // namespace sheetlog::cli
