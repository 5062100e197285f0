// The settings table of `sheetlog serve` (src/serve_config.h): its defaults, ranges,
// sources and usage.
#include "src/serve_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sheetlog {
namespace {

// Runs ParseCommandLine over `args` (as after `sheetlog serve`).
Status ParseArgs(ServeConfig& config, std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return config.ParseCommandLine(static_cast<int>(argv.size()), argv.data(), 0);
}

const SettingOrigin kCommandLine{SettingOrigin::Kind::kCommandLine, "", 0};
const SettingOrigin kEnvironment{SettingOrigin::Kind::kEnvironment, "SHEETLOG_X", 0};
SettingOrigin FileLine(int line) {
  return {SettingOrigin::Kind::kFile, "/etc/sheetlog.conf", line};
}

// The table is the only place a default is written: parsing its defaults gives what the
// option structs start with, so `serve` without flags runs as a default-built App.
TEST(ServeConfigTest, DefaultsOfTheTableAreThoseOfTheOptionStructs) {
  const ServeConfig config;
  const AppOptions app;
  const api::ServerOptions server;
  const ServeOptions& got = config.options();
  EXPECT_EQ(got.app.data_dir, app.data_dir);
  EXPECT_EQ(got.app.in_memory, app.in_memory);
  EXPECT_EQ(got.app.sync, app.sync);
  EXPECT_EQ(got.app.manual_clock, app.manual_clock);
  EXPECT_EQ(got.app.enable_faults, app.enable_faults);
  EXPECT_EQ(got.app.allow_reset, app.allow_reset);
  EXPECT_EQ(got.app.inline_limit, app.inline_limit);
  EXPECT_EQ(got.app.orphan_ttl_seconds, app.orphan_ttl_seconds);
  EXPECT_EQ(got.app.retain_segments, app.retain_segments);
  EXPECT_EQ(got.app.retain_days, app.retain_days);
  EXPECT_EQ(got.app.retain_archive, app.retain_archive);
  EXPECT_EQ(got.app.retention_period_seconds, app.retention_period_seconds);
  EXPECT_EQ(got.app.batching_window_micros, app.batching_window_micros);
  EXPECT_EQ(got.server.host, server.host);
  EXPECT_EQ(got.server.port, server.port);
  EXPECT_EQ(got.server.token, server.token);
  EXPECT_EQ(got.server.max_request_bytes, server.max_request_bytes);
  EXPECT_EQ(got.server.threads, server.threads);
  EXPECT_EQ(got.server.allowed_hosts, server.allowed_hosts);
  EXPECT_EQ(got.server.http.max_connections, server.http.max_connections);
  EXPECT_EQ(got.server.http.header_timeout_ms, server.http.header_timeout_ms);
  EXPECT_EQ(got.server.http.idle_timeout_ms, server.http.idle_timeout_ms);
  EXPECT_EQ(got.server.http.body_timeout_ms, server.http.body_timeout_ms);
  EXPECT_EQ(got.server.http.write_timeout_ms, server.http.write_timeout_ms);
  EXPECT_EQ(got.server.http.body_min_rate, server.http.body_min_rate);
  EXPECT_EQ(got.server.http.response_min_rate, server.http.response_min_rate);
  EXPECT_EQ(got.server.http.shutdown_grace_ms, server.http.shutdown_grace_ms);
  EXPECT_EQ(got.clock, "system");
  EXPECT_EQ(got.sync, "normal");
  EXPECT_EQ(got.log_level, "info");
  EXPECT_EQ(got.log_format, LogFormat::kText);
  EXPECT_EQ(got.port_file, "");
  EXPECT_EQ(got.config_file, "");
  EXPECT_EQ(got.token_file, "");
  for (const ServeSetting& setting : ServeSettings()) {
    EXPECT_EQ(config.origin(setting.name).kind, SettingOrigin::Kind::kDefault)
        << setting.name;
  }
}

TEST(ServeConfigTest, EveryRowHasANameHelpAndAParserAndNamesAreUnique) {
  std::map<std::string, int> seen;
  for (const ServeSetting& setting : ServeSettings()) {
    EXPECT_FALSE(setting.name.empty());
    EXPECT_FALSE(setting.help.empty()) << setting.name;
    EXPECT_TRUE(setting.apply) << setting.name;
    EXPECT_EQ(++seen[std::string(setting.name)], 1) << setting.name;
    EXPECT_EQ(FindServeSetting(setting.name), &setting);
  }
  EXPECT_EQ(FindServeSetting("no-such-setting"), nullptr);
}

TEST(ServeConfigTest, CommandLineSetsValuesInBothForms) {
  ServeConfig config;
  ASSERT_TRUE(ParseArgs(config, {"--listen", "0.0.0.0:0", "--threads=8", "--in-memory",
                                 "--sync", "full", "--batching-window", "0",
                                 "--body-timeout", "1.5", "--allowed-host", "a,,b:80",
                                 "--clock=manual", "--retain-archive=false"})
                  .ok());
  const ServeOptions& got = config.options();
  EXPECT_EQ(got.server.host, "0.0.0.0");
  EXPECT_EQ(got.server.port, 0);
  EXPECT_EQ(got.server.threads, 8);
  EXPECT_TRUE(got.app.in_memory);
  EXPECT_EQ(got.app.sync, SyncMode::kFull);
  EXPECT_EQ(got.sync, "full");
  EXPECT_EQ(got.app.batching_window_micros, 0);
  EXPECT_EQ(got.server.http.body_timeout_ms, 1500);
  EXPECT_EQ(got.server.http.write_timeout_ms, 1500);  // responses get what bodies get
  EXPECT_EQ(got.server.allowed_hosts, (std::vector<std::string>{"a", "b:80"}));
  EXPECT_TRUE(got.app.manual_clock);
  EXPECT_FALSE(got.app.retain_archive);
  EXPECT_EQ(config.origin("threads").kind, SettingOrigin::Kind::kCommandLine);
  EXPECT_EQ(config.origin("data-dir").kind, SettingOrigin::Kind::kDefault);
}

// --log-format, SHEETLOG_LOG_FORMAT or `log-format =`, like every setting.
TEST(ServeConfigTest, LogFormatIsTextOrJsonFromAnySource) {
  ServeConfig config;
  ASSERT_TRUE(ParseArgs(config, {"--log-format", "json"}).ok());
  EXPECT_EQ(config.options().log_format, LogFormat::kJson);
  ASSERT_TRUE(ParseArgs(config, {"--log-format=text"}).ok());
  EXPECT_EQ(config.options().log_format, LogFormat::kText);

  ServeConfig from_environment;
  ASSERT_TRUE(from_environment
                  .ApplyEnvironment([](const char* name) -> const char* {
                    return std::string_view(name) == "SHEETLOG_LOG_FORMAT" ? "json"
                                                                           : nullptr;
                  })
                  .ok());
  EXPECT_EQ(from_environment.options().log_format, LogFormat::kJson);
  EXPECT_EQ(from_environment.origin("log-format").source, "SHEETLOG_LOG_FORMAT");

  ServeConfig from_file;
  ASSERT_TRUE(from_file.ApplyFile("f.conf", "log-format = json\n").ok());
  EXPECT_EQ(from_file.options().log_format, LogFormat::kJson);
  EXPECT_NE(ServeUsage().find("--log-format FORMAT"), std::string::npos) << ServeUsage();
}

TEST(ServeConfigTest, BatchingWindowIsMillisecondsStoredAsMicroseconds) {
  ServeConfig config;
  ASSERT_TRUE(ParseArgs(config, {"--batching-window", "10000"}).ok());
  EXPECT_EQ(config.options().app.batching_window_micros, 10'000'000);
}

TEST(ServeConfigTest, RefusalsNameTheFlagTheRangeAndTheValue) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--threads", "0"}, "--threads must be an integer in 1..4096, got '0'"},
      {{"--threads", "4097"}, "--threads must be an integer in 1..4096, got '4097'"},
      {{"--threads", "8x"}, "--threads must be an integer in 1..4096, got '8x'"},
      {{"--max-request", "1023"}, "--max-request must be an integer >= 1024, got '1023'"},
      {{"--inline-limit", "-1"}, "--inline-limit must be an integer >= 0, got '-1'"},
      {{"--retention-period", "0"},
       "--retention-period must be an integer >= 1, got '0'"},
      {{"--batching-window", "10001"},
       "--batching-window must be an integer in 0..10000, got '10001'"},
      {{"--sync", "fast"}, "--sync must be normal or full, got 'fast'"},
      {{"--clock", "wall"}, "--clock must be system or manual, got 'wall'"},
      {{"--listen", "8787"},
       "--listen must be HOST:PORT with a port in 0..65535, got '8787'"},
      {{"--listen", "h:65536"},
       "--listen must be HOST:PORT with a port in 0..65535, got 'h:65536'"},
      {{"--idle-timeout", "0"},
       "--idle-timeout must be a number of seconds in 0.001..86400, got '0'"},
      {{"--idle-timeout", "nan"},
       "--idle-timeout must be a number of seconds in 0.001..86400, got 'nan'"},
      {{"--in-memory=yes"}, "--in-memory must be true or false, got 'yes'"},
      {{"--log-level", "loud"},
       "--log-level must be trace, debug, info, warn, error, critical or off, got "
       "'loud'"},
      {{"--log-format", "yaml"}, "--log-format must be text or json, got 'yaml'"},
      {{"--token", " \t"},
       "--token is empty or blank: give it a secret of visible characters, or leave it "
       "unset (loopback only)"},
      {{"--prices", "nope=1"}, ""},  // Prices::Override words it; checked below
      {{"--no-such-flag", "1"}, "unknown flag --no-such-flag (see `sheetlog help`)"},
      {{"--threads"}, "flag --threads needs a value"},
      {{"stray"}, "unexpected argument 'stray'"},
  };
  for (const Case& c : cases) {
    ServeConfig config;
    const Status status = ParseArgs(config, c.args);
    ASSERT_FALSE(status.ok()) << c.args.front();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    if (!c.message.empty()) {
      EXPECT_EQ(status.message(), c.message);
    } else {
      EXPECT_EQ(status.message().rfind("--prices ", 0), 0u) << status.message();
    }
  }
}

TEST(ServeConfigTest, ARefusedValueLeavesTheSettingAsItWas) {
  ServeConfig config;
  ASSERT_TRUE(config.Set("threads", "8", kCommandLine).ok());
  EXPECT_FALSE(config.Set("threads", "0", kCommandLine).ok());
  EXPECT_EQ(config.options().server.threads, 8);
  EXPECT_FALSE(config.Set("listen", "nohost", kCommandLine).ok());
  EXPECT_EQ(config.options().server.port, 8787);
}

// A configuration file's loader hands each line to Set: errors name the file and line.
TEST(ServeConfigTest, FileValuesAreCheckedAndNamedByFileAndLine) {
  ServeConfig config;
  const Status bad = config.Set("threads", "0", FileLine(7));
  EXPECT_EQ(bad.message(),
            "/etc/sheetlog.conf line 7: threads must be an integer in 1..4096, got '0'");
  const Status unknown = config.Set("thread", "8", FileLine(9));
  EXPECT_EQ(unknown.message(), "/etc/sheetlog.conf line 9: unknown setting 'thread'");
  ASSERT_TRUE(config.Set("threads", "8", FileLine(10)).ok());
  EXPECT_EQ(config.origin("threads").kind, SettingOrigin::Kind::kFile);
  EXPECT_EQ(config.origin("threads").line, 10);
  EXPECT_EQ(config.options().server.threads, 8);
}

// File < environment < command line, whatever order the sources are applied in; a
// value from a weaker source is still checked.
TEST(ServeConfigTest, StrongerSourcesWinInAnyOrder) {
  ServeConfig config;
  ASSERT_TRUE(config.Set("threads", "16", kCommandLine).ok());
  ASSERT_TRUE(config.Set("threads", "8", FileLine(1)).ok());
  ASSERT_TRUE(config.Set("threads", "4", kEnvironment).ok());
  EXPECT_EQ(config.options().server.threads, 16);
  EXPECT_EQ(config.origin("threads").kind, SettingOrigin::Kind::kCommandLine);
  EXPECT_FALSE(config.Set("threads", "0", FileLine(2)).ok());

  ServeConfig forward;
  ASSERT_TRUE(forward.Set("threads", "8", FileLine(1)).ok());
  ASSERT_TRUE(forward.Set("threads", "4", kEnvironment).ok());
  EXPECT_EQ(forward.options().server.threads, 4);
  ASSERT_TRUE(forward.Set("threads", "2", kEnvironment).ok());  // same source: last wins
  EXPECT_EQ(forward.options().server.threads, 2);
  ASSERT_TRUE(forward.Set("threads", "16", kCommandLine).ok());
  EXPECT_EQ(forward.options().server.threads, 16);
}

// Every setting has its variable, SHEETLOG_<NAME>; other variables are not settings.
TEST(ServeConfigTest, EnvironmentSetsEverySettingFromItsVariable) {
  std::map<std::string, std::string> environment = {
      {"SHEETLOG_TOKEN", "s3cret"},
      {"SHEETLOG_THREADS", "3"},
      {"SHEETLOG_DATA_DIR", "/srv/sheetlog"},
      {"SHEETLOG_URL", "http://x"},
      {"THREADS", "5"}};
  auto getenv = [&](const char* name) -> const char* {
    auto it = environment.find(name);
    return it == environment.end() ? nullptr : it->second.c_str();
  };
  ServeConfig config;
  ASSERT_TRUE(config.ApplyEnvironment(getenv).ok());
  EXPECT_EQ(config.options().server.token, "s3cret");
  EXPECT_EQ(config.origin("token").kind, SettingOrigin::Kind::kEnvironment);
  EXPECT_EQ(config.origin("token").source, "SHEETLOG_TOKEN");
  EXPECT_EQ(config.options().server.threads, 3);
  EXPECT_EQ(config.origin("threads").source, "SHEETLOG_THREADS");
  EXPECT_EQ(config.options().app.data_dir, "/srv/sheetlog");
  EXPECT_EQ(ServeEnvironmentVariable("retain-archive"), "SHEETLOG_RETAIN_ARCHIVE");
  for (const ServeSetting& setting : ServeSettings()) {
    if (setting.env.empty()) continue;  // a variable the usage names is the setting's own
    EXPECT_EQ(setting.env, ServeEnvironmentVariable(setting.name)) << setting.name;
  }
  ASSERT_TRUE(ParseArgs(config, {"--token", "other"}).ok());
  EXPECT_EQ(config.options().server.token, "other");

  environment["SHEETLOG_TOKEN"] = "  ";
  ServeConfig blank;
  const Status refused = blank.ApplyEnvironment(getenv);
  EXPECT_EQ(refused.message().rfind("SHEETLOG_TOKEN is empty or blank", 0), 0u)
      << refused.message();

  environment["SHEETLOG_TOKEN"] = "s3cret";
  environment["SHEETLOG_THREADS"] = "0";
  ServeConfig out_of_range;
  EXPECT_EQ(out_of_range.ApplyEnvironment(getenv).message(),
            "SHEETLOG_THREADS must be an integer in 1..4096, got '0'");
}

// The configuration file: `name = value` lines through Set, ranked below the
// environment and the command line; every refusal names the file and the line.
TEST(ServeConfigTest, FileLinesAreSettingsNamedByFileAndLine) {
  ServeConfig config;
  ASSERT_TRUE(ParseArgs(config, {"--threads", "16"}).ok());
  ASSERT_TRUE(config
                  .ApplyFile("/etc/sheetlog.conf",
                             "# the service\n"
                             "\n"
                             "  data-dir =  /srv/sheetlog \r\n"
                             "threads=8\n"
                             "allow-reset = true\n"
                             "token-file = /etc/sheetlog/token")
                  .ok());
  EXPECT_EQ(config.options().app.data_dir, "/srv/sheetlog");
  EXPECT_EQ(config.origin("data-dir").line, 3);
  EXPECT_EQ(config.origin("data-dir").source, "/etc/sheetlog.conf");
  EXPECT_EQ(config.options().server.threads, 16);  // the command line's
  EXPECT_TRUE(config.options().app.allow_reset);
  EXPECT_EQ(config.options().token_file, "/etc/sheetlog/token");
  EXPECT_EQ(config.origin("token-file").line, 6);

  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"sync = full\nlisten\n", "f.conf line 2: expected `name = value`, got 'listen'"},
      {"= 3\n", "f.conf line 1: no name before '='"},
      {"config = other.conf\n",
       "f.conf line 1: config cannot be set in a configuration file"},
      {"threads = 2\n# again\nthreads = 3\n",
       "f.conf line 3: 'threads' is set twice (first on line 1)"},
      {"sync = full\n# fine\nthreads-per-core = 4\n",
       "f.conf line 3: unknown setting 'threads-per-core'"},
      {"sync = sometimes\n",
       "f.conf line 1: sync must be normal or full, got 'sometimes'"},
  };
  for (const Case& c : cases) {
    ServeConfig refused;
    const Status status = refused.ApplyFile("f.conf", c.text);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(status.message(), c.message) << c.text;
  }
}

TEST(ServeConfigTest, PricesOverrideSeedDefaultsWhole) {
  ServeConfig config;
  ASSERT_TRUE(config.Set("prices", "s3_put=7", FileLine(1)).ok());
  ASSERT_TRUE(config.Set("prices", "sqs=1", kCommandLine).ok());
  EXPECT_EQ(config.options().app.prices.sqs, 1);
  EXPECT_EQ(config.options().app.prices.s3_put, Prices().s3_put);
}

TEST(ServeConfigTest, UsageListsEveryFlagWithItsRangeAndDefault) {
  const std::string usage = ServeUsage();
  for (const ServeSetting& setting : ServeSettings()) {
    EXPECT_NE(usage.find("--" + std::string(setting.name) + " "), std::string::npos)
        << setting.name;
  }
  EXPECT_NE(usage.find("(an integer in 0..10000; default 5)"), std::string::npos)
      << usage;
  EXPECT_NE(usage.find("$SHEETLOG_TOKEN"), std::string::npos) << usage;
  size_t start = 0;
  while (start < usage.size()) {
    size_t end = usage.find('\n', start);
    if (end == std::string::npos) end = usage.size();
    EXPECT_LE(end - start, 88u) << usage.substr(start, end - start);
    start = end + 1;
  }
}

}  // namespace
}  // namespace sheetlog
