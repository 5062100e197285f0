// The settings of `sheetlog serve`: one table of {name, default, range, help} that
// parses every source of a setting and prints the usage, so the two cannot drift.
//
// A setting has one name: `--name VALUE` (or `--name=VALUE`; a switch is `--name`) on
// the command line, `name = VALUE` in a configuration file (--config, ApplyFile), and
// SHEETLOG_<NAME> in the environment ("data-dir": SHEETLOG_DATA_DIR; an empty variable
// counts as set). Every source goes through
// ServeConfig::Set, which checks the value against the table's range and remembers
// where it came from. Sources rank file < environment < command line: a value from a
// stronger source than the current one replaces it, one from a weaker source is checked
// and then ignored, so the sources may be applied in any order; each refusal names the
// place the bad value was written.
//
// Typical use (main.cc):
//   ServeConfig config;                       // every setting at its default
//   Status s = config.ApplyEnvironment(std::getenv);
//   if (s.ok()) s = config.ParseCommandLine(argc, argv, 2);
//   if (s.ok() && !config.options().config_file.empty())
//     s = config.ApplyFile(config.options().config_file, <the file's text>);
//   ... config.options().app, config.options().server, config.origin("listen") ...
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/status.h"
#include "src/api/server.h"
#include "src/app/app.h"
#include "src/log_output.h"

namespace sheetlog {

// What `serve` runs with: the App's options, the HTTP server's, and main's own.
struct ServeOptions {
  AppOptions app;
  api::ServerOptions server;
  // "system" or "manual" (also in app.manual_clock); kept for the start-up line.
  std::string clock;
  // "normal" or "full" (also in app.sync); kept for the start-up line.
  std::string sync;
  // Written with the bound port once listening; "" = none.
  std::string port_file;
  // A directory that fills an empty store at start (--seed; src/app/seed.h): a backup
  // or fixture files; "" = none.
  std::string seed;
  // The configuration file (--config) the caller reads and hands to ApplyFile; "" = none.
  std::string config_file;
  // A file holding the token (--token-file), read by the caller (main.cc checks that
  // only its owner may read it); "" = none. Excludes a token from another source.
  std::string token_file;
  // spdlog's level name (trace, debug, info, warn, error, critical, off).
  std::string log_level;
  // How log lines are written (src/log_output.h): text, or one JSON object a line.
  LogFormat log_format = LogFormat::kText;
};

// Where a setting's value came from.
struct SettingOrigin {
  enum class Kind { kDefault, kFile, kEnvironment, kCommandLine };
  Kind kind = Kind::kDefault;
  // kFile: the file's path; kEnvironment: the variable's name; else "".
  std::string source;
  // kFile: the line (from 1); else 0.
  int line = 0;
};

// One row of the table.
struct ServeSetting {
  // The flag without "--", and the key in a configuration file.
  std::string_view name;
  // What the value is in the usage ("BYTES", "HOST:PORT"); "" for a switch, which takes
  // no value on the command line (`--in-memory`) and `true`/`false` elsewhere.
  std::string_view value_name;
  // The value before any source sets one, as text parsed like any other (so the table
  // is the only place a default is written); "" = unset.
  std::string_view default_value;
  // What a value may be, in words ("an integer in 0..10000", "normal or full"): the
  // usage shows it and every refusal says it. "" for free text.
  std::string range;
  // One or more sentences for the usage (without the default or the range).
  std::string_view help;
  // The environment variable the usage names beside the flag; "" = none named. Every
  // setting is read from ServeEnvironmentVariable(name) whether named here or not.
  std::string_view env;
  // Parses `text` into `options`. Returns OK, or InvalidArgument with an empty message
  // when `text` is outside `range` (the caller words the refusal), or with a message
  // of its own that says more.
  std::function<Status(std::string_view text, ServeOptions& options)> apply;
};

// The table, in usage order.
const std::vector<ServeSetting>& ServeSettings();
// The row named `name`, or nullptr.
const ServeSetting* FindServeSetting(std::string_view name);
// The "serve flags:" part of `sheetlog help`, from the table.
std::string ServeUsage();
// The environment variable of a setting: SHEETLOG_ and its name in capitals with '_'
// for '-' ("data-dir": SHEETLOG_DATA_DIR).
std::string ServeEnvironmentVariable(std::string_view name);

// A configuration being assembled from its sources. Not thread-safe (used by one thread
// at start-up).
class ServeConfig {
 public:
  // Every setting at its default value (origin kDefault).
  ServeConfig();

  // Sets `name` to `text` unless its current value came from a stronger source
  // (kind, in the order of SettingOrigin::Kind; the same kind again replaces it).
  // InvalidArgument, whatever the ranks, for an unknown name ("unknown flag --x",
  // "/etc/sheetlog.conf line 7: unknown setting 'x'") and for a value outside the
  // setting's range, naming the place it was written ("--threads must be an integer in
  // 1..4096, got '0'"); the setting keeps its previous value then.
  Status Set(std::string_view name, std::string_view text, const SettingOrigin& origin);

  // `--name VALUE`, `--name=VALUE` and `--switch` from argv[first..argc). A positional
  // argument, an unknown flag or a flag without its value is InvalidArgument.
  Status ParseCommandLine(int argc, char** argv, int first);

  // Sets each setting whose variable (ServeEnvironmentVariable) `getenv` finds set.
  Status ApplyEnvironment(const std::function<const char*(const char*)>& getenv);

  // The lines of the configuration file `path` (its text: the caller reads it), each
  // `name = value` (spaces around both trimmed) or blank or a comment starting with
  // '#'. InvalidArgument naming the file and line for a line without '=', a name set
  // twice, `config` itself, an unknown name or a value outside its range.
  Status ApplyFile(std::string_view path, std::string_view text);

  const ServeOptions& options() const { return options_; }
  // Where `name`'s current value came from. REQUIRES: FindServeSetting(name).
  const SettingOrigin& origin(std::string_view name) const;
  // How `origin` names `setting` in a message: "--threads", "SHEETLOG_TOKEN",
  // "/etc/sheetlog.conf line 7: threads", "threads (default)".
  static std::string Describe(const ServeSetting& setting, const SettingOrigin& origin);

 private:
  ServeOptions options_;
  std::vector<SettingOrigin> origins_;  // one per row of ServeSettings()
};

}  // namespace sheetlog
