#include "src/log_output.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

namespace sheetlog {
namespace {

// The "%*" flag of the text format under the journal: the line's syslog priority.
class JournalPriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string_view priority = JournalPriorityPrefix(msg.level);
    dest.append(priority.data(), priority.data() + priority.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JournalPriorityFlag>();
  }
};

// RFC 3339 in UTC with microseconds: "2026-01-01T12:00:00.123456Z".
std::string Rfc3339Utc(spdlog::log_clock::time_point time) {
  const int64_t micros =
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch())
          .count();
  // Floor division, so a time before 1970 still gets a fraction in 0..999999.
  int64_t seconds = micros / 1000000;
  int64_t fraction = micros % 1000000;
  if (fraction < 0) {
    fraction += 1000000;
    --seconds;
  }
  const std::time_t whole = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char text[48];
  std::snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ",
                utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                utc.tm_sec, static_cast<long long>(fraction));
  return text;
}

}  // namespace

std::string_view JournalPriorityPrefix(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "<7>";
    case spdlog::level::warn:
      return "<4>";
    case spdlog::level::err:
      return "<3>";
    case spdlog::level::critical:
      return "<2>";
    case spdlog::level::info:
    default:
      return "<6>";
  }
}

JsonLogFormatter::JsonLogFormatter(bool journal_priorities, int pid)
    : journal_priorities_(journal_priorities), pid_(pid) {}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg,
                              spdlog::memory_buf_t& dest) {
  // ordered_json: the fields in the order a reader scans them.
  nlohmann::ordered_json line;
  line["time"] = Rfc3339Utc(msg.time);
  const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
  line["level"] = std::string(level.data(), level.size());
  if (msg.logger_name.size() > 0) {
    line["logger"] = std::string(msg.logger_name.data(), msg.logger_name.size());
  }
  line["pid"] = pid_;
  line["message"] = std::string(msg.payload.data(), msg.payload.size());
  // nlohmann escapes quotes, backslashes and every control character, so the object
  // stays on one line; `replace` turns bytes that are not UTF-8 into U+FFFD instead of
  // throwing.
  const std::string text = line.dump(-1, ' ', /*ensure_ascii=*/false,
                                     nlohmann::json::error_handler_t::replace);
  if (journal_priorities_) {
    const std::string_view priority = JournalPriorityPrefix(msg.level);
    dest.append(priority.data(), priority.data() + priority.size());
  }
  dest.append(text.data(), text.data() + text.size());
  dest.push_back('\n');
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  return std::make_unique<JsonLogFormatter>(journal_priorities_, pid_);
}

std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogFormat format,
                                                    bool journal_priorities) {
  if (format == LogFormat::kJson) {
    return std::make_unique<JsonLogFormatter>(journal_priorities,
                                              static_cast<int>(getpid()));
  }
  if (!journal_priorities) return nullptr;
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<JournalPriorityFlag>('*').set_pattern("%*%v");
  return formatter;
}

void ConfigureLogOutput(LogFormat format, bool journal_priorities) {
  std::unique_ptr<spdlog::formatter> formatter =
      MakeLogFormatter(format, journal_priorities);
  if (formatter != nullptr) spdlog::set_formatter(std::move(formatter));
}

}  // namespace sheetlog
