#include "src/serve_config.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <system_error>

namespace sheetlog {
namespace {

using Apply = std::function<Status(std::string_view, ServeOptions&)>;

// "Outside the range": the caller words the refusal from the table's range.
Status OutsideRange() { return InvalidArgument(""); }

bool ParseInt64(std::string_view text, int64_t* out) {
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, *out);
  return !text.empty() && error == std::errc() && ptr == end;
}

// What a value may be, in words, and the parser that checks and stores it.
struct Rule {
  std::string range;
  Apply apply;
};

std::string IntegerRange(int64_t min, int64_t max) {
  if (max == INT64_MAX) return "an integer >= " + std::to_string(min);
  return "an integer in " + std::to_string(min) + ".." + std::to_string(max);
}

// An integer in [min, max] (max = INT64_MAX: no upper bound), stored times `scale`.
template <typename T>
Rule Integer(int64_t min, int64_t max, T& (*field)(ServeOptions&), int64_t scale = 1) {
  return {IntegerRange(min, max), [=](std::string_view text, ServeOptions& options) {
            int64_t value = 0;
            if (!ParseInt64(text, &value) || value < min || value > max)
              return OutsideRange();
            field(options) = static_cast<T>(value * scale);
            return Status::OK();
          }};
}

// Seconds with a fraction, in 0.001..86400, stored in milliseconds (in `also_ms` too
// when given).
Rule Seconds(int64_t& (*field_ms)(ServeOptions&),
             int64_t& (*also_ms)(ServeOptions&) = nullptr) {
  return {"a number of seconds in 0.001..86400",
          [=](std::string_view text, ServeOptions& options) {
            const std::string copy(text);
            char* end = nullptr;
            const double seconds = std::strtod(copy.c_str(), &end);
            if (copy.empty() || *end != '\0' || !(seconds >= 0.001) || seconds > 86400) {
              return OutsideRange();
            }
            field_ms(options) = static_cast<int64_t>(seconds * 1000);
            if (also_ms != nullptr) also_ms(options) = field_ms(options);
            return Status::OK();
          }};
}

// A switch: `true` or `false` (the command line's bare `--name` means true).
Rule Switch(bool& (*field)(ServeOptions&)) {
  return {"true or false", [=](std::string_view text, ServeOptions& options) {
            if (text != "true" && text != "false") return OutsideRange();
            field(options) = text == "true";
            return Status::OK();
          }};
}

// Free text.
Rule Text(std::string& (*field)(ServeOptions&)) {
  return {"", [=](std::string_view text, ServeOptions& options) {
            field(options) = std::string(text);
            return Status::OK();
          }};
}

// `--blobs`: checked in full here (the URL, and that credentials are there), so a bad
// value is refused before anything opens.
Status ApplyBlobs(std::string_view text, ServeOptions& options) {
  if (text.empty()) {
    options.app.s3_blobs.reset();
    return Status::OK();
  }
  Result<S3Location> location = ParseS3Url(text);
  if (!location.ok())
    return InvalidArgument("is refused: " + location.status().message());
  options.app.s3_blobs = *location;
  return Status::OK();
}

// `--store`: a PostgreSQL URI or libpq keyword string, checked here (it parses, and
// holds no password) so a bad value is refused before anything opens.
Status ApplyStore(std::string_view text, ServeOptions& options) {
  if (text.empty() || text == "sqlite") {
    options.app.postgres_store.clear();
    return Status::OK();
  }
  Result<std::string> where = DescribePostgresConninfo(std::string(text));
  if (!where.ok()) return InvalidArgument("is refused: " + where.status().message());
  options.app.postgres_store = std::string(text);
  return Status::OK();
}

Status ApplyListen(std::string_view text, ServeOptions& options) {
  const size_t colon = text.rfind(':');
  int64_t port = 0;
  if (colon == std::string_view::npos || !ParseInt64(text.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return OutsideRange();
  }
  options.server.host = std::string(text.substr(0, colon));
  options.server.port = static_cast<int>(port);
  return Status::OK();
}

Status ApplyToken(std::string_view text, ServeOptions& options) {
  if (text.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos) {
    return InvalidArgument(
        "is empty or blank: give it a secret of visible characters, or leave it unset "
        "(loopback only)");
  }
  options.server.token = std::string(text);
  return Status::OK();
}

Status ApplyAllowedHosts(std::string_view hosts, ServeOptions& options) {
  options.server.allowed_hosts.clear();
  while (!hosts.empty()) {
    const size_t comma = hosts.find(',');
    std::string host(hosts.substr(0, comma));
    if (!host.empty()) options.server.allowed_hosts.push_back(host);
    if (comma == std::string_view::npos) break;
    hosts.remove_prefix(comma + 1);
  }
  return Status::OK();
}

Status ApplySync(std::string_view text, ServeOptions& options) {
  if (text == "normal") {
    options.app.sync = SyncMode::kNormal;
  } else if (text == "full") {
    options.app.sync = SyncMode::kFull;
  } else {
    return OutsideRange();
  }
  options.sync = std::string(text);
  return Status::OK();
}

Status ApplyClock(std::string_view text, ServeOptions& options) {
  if (text != "system" && text != "manual") return OutsideRange();
  options.app.manual_clock = text == "manual";
  options.clock = std::string(text);
  return Status::OK();
}

Status ApplyPrices(std::string_view text, ServeOptions& options) {
  Prices prices;  // from seed 001's defaults each time: the last source wins whole
  if (Status s = prices.Override(std::string(text)); !s.ok()) {
    return InvalidArgument(s.message());
  }
  options.app.prices = prices;
  return Status::OK();
}

Status ApplyLogLevel(std::string_view text, ServeOptions& options) {
  // spdlog maps a name it does not know to "off"; only "off" itself may mean that.
  const std::string name(text);
  if (spdlog::level::from_str(name) == spdlog::level::off && name != "off") {
    return OutsideRange();
  }
  options.log_level = name;
  return Status::OK();
}

Status ApplyLogFormat(std::string_view text, ServeOptions& options) {
  if (text == "text") {
    options.log_format = LogFormat::kText;
  } else if (text == "json") {
    options.log_format = LogFormat::kJson;
  } else {
    return OutsideRange();
  }
  return Status::OK();
}

// A row: what a value may be (`range`) and how it is parsed come together from the
// helpers above, so the words and the check cannot disagree.
ServeSetting Row(std::string_view name, std::string_view value_name,
                 std::string_view default_value, std::string_view help, Rule rule,
                 std::string_view env = "") {
  return {name, value_name, default_value,        std::move(rule.range),
          help, env,        std::move(rule.apply)};
}

std::vector<ServeSetting> BuildTable() {
  constexpr int64_t kNoMax = INT64_MAX;
  using O = ServeOptions;
  return {
      Row("data-dir", "DIR", "./data", "data directory",
          Text([](O& o) -> std::string& { return o.app.data_dir; })),
      Row("store", "URL", "sqlite",
          "where tables, queues, the change feed and the execution history live: "
          "sqlite = sheetlog.db under the data directory; "
          "postgres://USER@HOST[:PORT]/DATABASE[?sslmode=...] (or libpq's "
          "'host=... dbname=...') = a PostgreSQL database that several sheetlog "
          "processes may share (the password from PGPASSWORD or a PGPASSFILE, never in "
          "the URL)",
          {"sqlite, or postgres://USER@HOST[:PORT]/DATABASE[?...]", ApplyStore}),
      Row("blobs", "URL", "",
          "where blobs live: unset = the directory store under the data directory; "
          "s3://BUCKET?endpoint=http://HOST:PORT&region=REGION = an S3-compatible store "
          "(credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
          "credentials_file=PATH; never on the command line)",
          {"unset, or s3://BUCKET?endpoint=URL[&region=R&...]", ApplyBlobs}),
      Row("listen", "HOST:PORT", "127.0.0.1:8787",
          "listen address (port 0 = any free port)",
          {"HOST:PORT with a port in 0..65535", ApplyListen}),
      Row("in-memory", "", "false", "temporary data directory removed at exit, no syncs",
          Switch([](O& o) -> bool& { return o.app.in_memory; })),
      Row("seed", "DIR", "",
          "fill an empty store from DIR at start, before listening: a `sheetlog backup` "
          "(SQLite only), or NAME.csv / NAME.xlsx files (one sheet each, named NAME) "
          "with optional NAME.entries.json arrays of {type, body} entries appended "
          "after the cells; every file is checked first and a bad one refuses the "
          "start naming it; a store that already holds data is left alone",
          Text([](O& o) -> std::string& { return o.seed; }), "SHEETLOG_SEED"),
      Row("config", "FILE", "",
          "read settings from FILE: `name = value` lines, names as below without the "
          "dashes ('#' starts a comment line); the environment and then the command "
          "line override it; an unknown name is an error",
          Text([](O& o) -> std::string& { return o.config_file; })),
      Row("token", "TOKEN", "",
          "bearer token required on /v1/*; not blank (needed off loopback)",
          {"", ApplyToken}, "SHEETLOG_TOKEN"),
      Row("token-file", "FILE", "",
          "the token from FILE's first line (not with --token); FILE must be readable by "
          "its owner only (mode 0400 or 0600)",
          Text([](O& o) -> std::string& { return o.token_file; })),
      Row("tls-cert", "FILE", "",
          "serve HTTPS (TLS 1.2 or later) with this PEM certificate chain (with "
          "--tls-key); both files are read again on SIGHUP",
          Text([](O& o) -> std::string& { return o.server.tls_cert_file; })),
      Row("tls-key", "FILE", "", "the PEM private key of --tls-cert",
          Text([](O& o) -> std::string& { return o.server.tls_key_file; })),
      Row("allowed-host", "H,...", "",
          "host names (or name:port) accepted in the Host header besides IP addresses "
          "and "
          "localhost (a guard against DNS rebinding)",
          {"", ApplyAllowedHosts}),
      Row("sync", "MODE", "normal",
          "durability: normal survives kill -9, full also power loss",
          {"normal or full", ApplySync}),
      Row("max-request", "BYTES", "1048576", "largest JSON request body",
          Integer<int64_t>(1024, kNoMax,
                           [](O& o) -> int64_t& { return o.server.max_request_bytes; })),
      Row("inline-limit", "BYTES", "16384", "larger entry bodies go to the blob store",
          Integer<int64_t>(0, kNoMax,
                           [](O& o) -> int64_t& { return o.app.inline_limit; })),
      Row("orphan-ttl", "SECONDS", "259200",
          "uploads never completed are swept after this",
          Integer<int64_t>(0, kNoMax,
                           [](O& o) -> int64_t& { return o.app.orphan_ttl_seconds; })),
      Row("clock", "MODE", "system",
          "manual: time moves only through POST /v1/admin/clock",
          {"system or manual", ApplyClock}),
      Row("enable-faults", "", "false",
          "allow arming fault points through /v1/admin/faults",
          Switch([](O& o) -> bool& { return o.app.enable_faults; })),
      Row("allow-reset", "", "false", "allow POST /v1/admin/reset",
          Switch([](O& o) -> bool& { return o.app.allow_reset; })),
      Row("retain-segments", "N", "0", "keep the newest N segments of each log (0 = all)",
          Integer<int64_t>(0, kNoMax,
                           [](O& o) -> int64_t& { return o.app.retain_segments; })),
      Row("retain-days", "D", "0",
          "keep segments with entries from the last D days (0 = all)",
          Integer<int64_t>(0, kNoMax,
                           [](O& o) -> int64_t& { return o.app.retain_days; })),
      Row("retain-archive", "", "false",
          "archive dropped segments to the blob store first",
          Switch([](O& o) -> bool& { return o.app.retain_archive; })),
      Row("retention-period", "SECONDS", "3600",
          "seconds of the clock between retention runs",
          Integer<int64_t>(
              1, kNoMax,
              [](O& o) -> int64_t& { return o.app.retention_period_seconds; })),
      Row("heal-period", "SECONDS", "600",
          "seconds of the clock between runs of the pipeline's self-healing, which "
          "gives a job again to every Snapshot entry older than 5 minutes that is not "
          "complete and has none (lost, or dropped by a queue's retention); it also "
          "runs at start (0 = off)",
          Integer<int64_t>(0, kNoMax,
                           [](O& o) -> int64_t& { return o.app.heal_period_seconds; })),
      Row("batching-window", "MS", "5",
          "side effects of appends (snapshots, upload untags) wait up to MS milliseconds "
          "to "
          "be handled together (0 = each commit at once)",
          Integer<int64_t>(
              0, 10000, [](O& o) -> int64_t& { return o.app.batching_window_micros; },
              1000)),
      Row("prices", "NAME=USD,...", "",
          "prices of GET .../cost (per million requests or units, per GB-month): "
          "dynamodb_wru, dynamodb_rru, dynamodb_gb_month, s3_put, s3_get, s3_gb_month, "
          "sqs "
          "(unset: seed 001's on-demand prices)",
          {"", ApplyPrices}),
      Row("threads", "N", "64", "HTTP worker threads",
          Integer<int>(1, 4096, [](O& o) -> int& { return o.server.threads; })),
      Row("max-connections", "N", "16384",
          "open connections; when full the oldest idle one is closed (at most the file "
          "limit - 512)",
          Integer<size_t>(1, kNoMax,
                          [](O& o) -> size_t& { return o.server.http.max_connections; })),
      Row("header-timeout", "S", "10",
          "seconds from a request head's first byte to its end",
          Seconds([](O& o) -> int64_t& { return o.server.http.header_timeout_ms; })),
      Row("idle-timeout", "S", "60",
          "seconds a keep-alive connection may wait for a request",
          Seconds([](O& o) -> int64_t& { return o.server.http.idle_timeout_ms; })),
      Row("body-timeout", "S", "30", "seconds a request body may stall; also responses",
          Seconds([](O& o) -> int64_t& { return o.server.http.body_timeout_ms; },
                  [](O& o) -> int64_t& { return o.server.http.write_timeout_ms; })),
      Row("body-min-rate", "B", "1024",
          "bytes/s a request body must average: it must be complete within "
          "--body-timeout "
          "plus 1 s per B bytes received (0 = no rate rule)",
          Integer<int64_t>(0, kNoMax,
                           [](O& o) -> int64_t& { return o.server.http.body_min_rate; })),
      Row("response-min-rate", "B", "1024",
          "bytes/s a client must read a response at on average (event streams "
          "excepted): within --body-timeout plus 1 s per B bytes sent, or it is closed "
          "(0 = no rate rule)",
          Integer<int64_t>(
              0, kNoMax,
              [](O& o) -> int64_t& { return o.server.http.response_min_rate; })),
      Row("shutdown-grace", "S", "2", "seconds in-flight requests get after SIGTERM",
          Seconds([](O& o) -> int64_t& { return o.server.http.shutdown_grace_ms; })),
      Row("port-file", "FILE", "", "write the bound port to FILE once listening",
          Text([](O& o) -> std::string& { return o.port_file; })),
      Row("log-level", "LEVEL", "info", "what the server logs",
          {"trace, debug, info, warn, error, critical or off", ApplyLogLevel}),
      Row("log-format", "FORMAT", "text",
          "how log lines are written: text = spdlog's lines; json = one JSON object a "
          "line with time (RFC 3339, UTC, microseconds), level, pid and message (and "
          "logger when named); under systemd's journal either starts with the line's "
          "syslog priority",
          {"text or json", ApplyLogFormat}),
  };
}

}  // namespace

const std::vector<ServeSetting>& ServeSettings() {
  static const std::vector<ServeSetting> table = BuildTable();
  return table;
}

const ServeSetting* FindServeSetting(std::string_view name) {
  for (const ServeSetting& setting : ServeSettings()) {
    if (setting.name == name) return &setting;
  }
  return nullptr;
}

namespace {

// Appends `words` to `out` wrapped at kWidth columns, continuation lines indented by
// kIndent (the usage's second column).
constexpr size_t kWidth = 88;
constexpr size_t kIndent = 24;
void AppendWrapped(std::string_view words, size_t column, std::string& out) {
  while (!words.empty()) {
    size_t space = words.find(' ');
    const std::string_view word = words.substr(0, space);
    if (column > kIndent && column + 1 + word.size() > kWidth) {
      out += "\n" + std::string(kIndent, ' ');
      column = kIndent;
    } else if (column > kIndent) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    words = space == std::string_view::npos ? "" : words.substr(space + 1);
  }
}

}  // namespace

std::string ServeUsage() {
  std::string out =
      "serve flags (also SHEETLOG_<NAME> in the environment, e.g. SHEETLOG_DATA_DIR, "
      "and\n"
      "`name = value` in the --config file; the command line wins over the environment,\n"
      "the environment over the file):\n";
  for (const ServeSetting& setting : ServeSettings()) {
    std::string flag = "  --" + std::string(setting.name);
    if (!setting.value_name.empty()) flag += " " + std::string(setting.value_name);
    out += flag;
    size_t column = flag.size();
    if (column + 2 > kIndent) {  // too long: the help starts on a line of its own
      out += "\n";
      column = 0;
    }
    out += std::string(kIndent - column, ' ');
    column = kIndent;
    std::string words(setting.help);
    const bool is_switch = setting.value_name.empty();
    std::string details;
    if (!is_switch && !setting.range.empty()) details = setting.range;
    if (!is_switch && !setting.default_value.empty()) {
      details += (details.empty() ? "" : "; ") + std::string("default ") +
                 std::string(setting.default_value);
    }
    if (!setting.env.empty()) {
      details +=
          (details.empty() ? "" : "; ") + std::string("or $") + std::string(setting.env);
    }
    if (!details.empty()) words += " (" + details + ")";
    AppendWrapped(words, column, out);
    out += "\n";
  }
  return out;
}

std::string ServeEnvironmentVariable(std::string_view name) {
  std::string variable = "SHEETLOG_";
  for (char c : name) {
    variable +=
        c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return variable;
}

ServeConfig::ServeConfig() : origins_(ServeSettings().size()) {
  for (const ServeSetting& setting : ServeSettings()) {
    if (setting.default_value.empty()) continue;
    // A default outside its own range is a bug of the table (serve_config_test).
    if (Status applied = setting.apply(setting.default_value, options_); !applied.ok()) {
      spdlog::critical("default of {} refused: {}", setting.name, applied.message());
      std::abort();
    }
  }
}

std::string ServeConfig::Describe(const ServeSetting& setting,
                                  const SettingOrigin& origin) {
  switch (origin.kind) {
    case SettingOrigin::Kind::kDefault:
      return std::string(setting.name) + " (default)";
    case SettingOrigin::Kind::kFile:
      return origin.source + " line " + std::to_string(origin.line) + ": " +
             std::string(setting.name);
    case SettingOrigin::Kind::kEnvironment:
      return origin.source;
    case SettingOrigin::Kind::kCommandLine:
      return "--" + std::string(setting.name);
  }
  return std::string(setting.name);
}

Status ServeConfig::Set(std::string_view name, std::string_view text,
                        const SettingOrigin& origin) {
  const ServeSetting* setting = FindServeSetting(name);
  if (setting == nullptr) {
    switch (origin.kind) {
      case SettingOrigin::Kind::kCommandLine:
        return InvalidArgument("unknown flag --" + std::string(name) +
                               " (see `sheetlog help`)");
      case SettingOrigin::Kind::kFile:
        return InvalidArgument(origin.source + " line " + std::to_string(origin.line) +
                               ": unknown setting '" + std::string(name) + "'");
      default:
        return InvalidArgument("unknown setting '" + std::string(name) + "'");
    }
  }
  // Parsed into a copy first: a refused value leaves the configuration as it was, and a
  // value from a weaker source is checked too.
  ServeOptions candidate = options_;
  if (Status applied = setting->apply(text, candidate); !applied.ok()) {
    const std::string where = Describe(*setting, origin);
    if (!applied.message().empty())
      return InvalidArgument(where + " " + applied.message());
    return InvalidArgument(where + " must be " + setting->range + ", got '" +
                           std::string(text) + "'");
  }
  SettingOrigin& current = origins_[setting - ServeSettings().data()];
  if (origin.kind < current.kind) return Status::OK();
  options_ = std::move(candidate);
  current = origin;
  return Status::OK();
}

Status ServeConfig::ParseCommandLine(int argc, char** argv, int first) {
  const SettingOrigin command_line{SettingOrigin::Kind::kCommandLine, "", 0};
  for (int i = first; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, 2) != "--") {
      return InvalidArgument("unexpected argument '" + std::string(arg) + "'");
    }
    std::string_view name = arg.substr(2);
    std::string_view value;
    const size_t equals = name.find('=');
    if (equals != std::string_view::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
    } else if (const ServeSetting* setting = FindServeSetting(name);
               setting != nullptr && setting->value_name.empty()) {
      value = "true";  // a bare switch
    } else if (setting == nullptr) {
      return Set(name, "", command_line);  // unknown flag: Set words the refusal
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return InvalidArgument("flag --" + std::string(name) + " needs a value");
    }
    RETURN_IF_ERROR(Set(name, value, command_line));
  }
  return Status::OK();
}

Status ServeConfig::ApplyEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  for (const ServeSetting& setting : ServeSettings()) {
    const std::string variable = ServeEnvironmentVariable(setting.name);
    const char* value = getenv(variable.c_str());
    if (value == nullptr) continue;
    RETURN_IF_ERROR(
        Set(setting.name, value, {SettingOrigin::Kind::kEnvironment, variable, 0}));
  }
  return Status::OK();
}

Status ServeConfig::ApplyFile(std::string_view path, std::string_view text) {
  auto trim = [](std::string_view part) {
    const size_t begin = part.find_first_not_of(" \t\r");
    if (begin == std::string_view::npos) return std::string_view();
    return part.substr(begin, part.find_last_not_of(" \t\r") - begin + 1);
  };
  std::map<std::string, int, std::less<>> first_line;  // name -> line it was set on
  int number = 0;
  while (!text.empty()) {
    ++number;
    const size_t newline = text.find('\n');
    const std::string_view line = trim(text.substr(0, newline));
    text = newline == std::string_view::npos ? "" : text.substr(newline + 1);
    if (line.empty() || line[0] == '#') continue;
    const std::string where =
        std::string(path) + " line " + std::to_string(number) + ": ";
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      return InvalidArgument(where + "expected `name = value`, got '" +
                             std::string(line) + "'");
    }
    const std::string_view name = trim(line.substr(0, equals));
    if (name.empty()) return InvalidArgument(where + "no name before '='");
    if (name == "config") {
      return InvalidArgument(where + "config cannot be set in a configuration file");
    }
    if (auto seen = first_line.find(name); seen != first_line.end()) {
      return InvalidArgument(where + "'" + std::string(name) +
                             "' is set twice (first on line " +
                             std::to_string(seen->second) + ")");
    }
    first_line.emplace(std::string(name), number);
    RETURN_IF_ERROR(Set(name, trim(line.substr(equals + 1)),
                        {SettingOrigin::Kind::kFile, std::string(path), number}));
  }
  return Status::OK();
}

const SettingOrigin& ServeConfig::origin(std::string_view name) const {
  const ServeSetting* setting = FindServeSetting(name);
  assert(setting != nullptr);
  return origins_[setting - ServeSettings().data()];
}

}  // namespace sheetlog
