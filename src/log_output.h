// How `sheetlog serve` writes its log lines (spdlog's default logger, on stdout):
//
//   text  spdlog's default lines ("[2026-01-01 12:00:00.123] [info] message").
//   json  one JSON object a line (--log-format json), whatever the message holds
//         (quotes, newlines, control characters, bytes that are not UTF-8):
//           {"time":"2026-01-01T12:00:00.123456Z","level":"info","pid":4242,
//            "message":"..."}
//         time: RFC 3339 in UTC with microseconds; level: spdlog's name (trace, debug,
//         info, warning, error, critical); "logger": the logger's name, only for a
//         named logger; pid: the process's. Bytes that are not UTF-8 become U+FFFD.
//
// Under systemd with stdout connected to the journal, every line of either format
// starts with its syslog priority ("<3>" for an error), which journald takes off the
// line and keeps as the entry's priority (`journalctl -p warning`); a text line then
// carries no time stamp (the journal's own is the only one), a JSON line keeps its own.
#pragma once

#include <spdlog/formatter.h>

#include <memory>
#include <string_view>

namespace sheetlog {

enum class LogFormat { kText, kJson };

// The syslog priority prefix of `level`: "<7>" (trace, debug), "<6>" (info), "<4>"
// (warning), "<3>" (error), "<2>" (critical).
std::string_view JournalPriorityPrefix(spdlog::level::level_enum level);

// Formats each message as one JSON line (the json format above). Thread-compatible
// like every spdlog formatter: each sink holds its own clone, used under its lock.
class JsonLogFormatter final : public spdlog::formatter {
 public:
  // `journal_priorities`: each line starts with JournalPriorityPrefix. `pid`: the
  // process id the lines carry.
  JsonLogFormatter(bool journal_priorities, int pid);

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  const bool journal_priorities_;
  const int pid_;
};

// The formatter of `format` for this process (its pid), or nullptr for text without
// journal priorities: spdlog's default formatter, left as it is.
std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogFormat format,
                                                    bool journal_priorities);

// Installs MakeLogFormatter(format, journal_priorities) on spdlog's default logger (and
// loggers made after it). Call once at start-up, before other threads log.
void ConfigureLogOutput(LogFormat format, bool journal_priorities);

}  // namespace sheetlog
