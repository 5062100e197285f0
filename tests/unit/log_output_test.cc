// How `sheetlog serve` writes its log lines (src/log_output.h): the json format is one
// JSON object a line whatever the message holds (quotes, backslashes, newlines, control
// characters, bytes that are not UTF-8), with its time, level, pid and logger; the
// journal's priority prefix leads a line of either format; text without the journal
// keeps spdlog's own formatter.
#include "src/log_output.h"

#include <gtest/gtest.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "emulator/json_text.h"

namespace sheetlog {
namespace {

// 2026-01-02T03:04:05.123456Z.
spdlog::log_clock::time_point LogTestTime() {
  return spdlog::log_clock::time_point(std::chrono::seconds(1767323045) +
                                       std::chrono::microseconds(123456));
}

// The line `formatter` makes of a message, as written (prefix and end of line
// included).
std::string FormatLine(spdlog::formatter& formatter, spdlog::level::level_enum level,
                       std::string_view payload, std::string_view logger_name = "",
                       spdlog::log_clock::time_point time = LogTestTime()) {
  const spdlog::details::log_msg msg(
      time, spdlog::source_loc{},
      spdlog::string_view_t(logger_name.data(), logger_name.size()), level,
      spdlog::string_view_t(payload.data(), payload.size()));
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  return std::string(out.data(), out.size());
}

TEST(JsonLogFormatterTest, EveryMessageIsOneLineOfValidJsonThatSaysItExactly) {
  JsonLogFormatter formatter(/*journal_priorities=*/false, /*pid=*/4242);
  const std::string hostile =
      "say \"hi\" \\ path C:\\tmp\nsecond line\r\ttab \x01\x1f\x7f {\"json\": [1]}";
  const std::string line = FormatLine(formatter, spdlog::level::info, hostile);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  // One line: the only newline ends it, and no other control character is left raw.
  const std::string object = line.substr(0, line.size() - 1);
  for (char c : object) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20) << "raw control character in " << line;
  }
  nlohmann::json parsed = ParseJsonOrDiscarded(object);
  ASSERT_TRUE(parsed.is_object()) << line;
  EXPECT_EQ(parsed["message"], hostile) << line;
  EXPECT_EQ(parsed["time"], "2026-01-02T03:04:05.123456Z");
  EXPECT_EQ(parsed["level"], "info");
  EXPECT_EQ(parsed["pid"], 4242);
  EXPECT_FALSE(parsed.contains("logger")) << "the default logger has no name";
  // The fields in the order a reader scans them.
  EXPECT_EQ(object.rfind("{\"time\":", 0), 0u) << object;
}

TEST(JsonLogFormatterTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  JsonLogFormatter formatter(false, 1);
  // A lone continuation byte, a truncated sequence, then valid UTF-8 (é, 中).
  const std::string line = FormatLine(formatter, spdlog::level::warn,
                                      "bad \xff and \xe4\xb8 ok \xc3\xa9\xe4\xb8\xad");
  nlohmann::json parsed = ParseJsonOrDiscarded(line);
  ASSERT_TRUE(parsed.is_object()) << line;
  const std::string message = parsed["message"].get<std::string>();
  EXPECT_EQ(message.rfind("bad \xef\xbf\xbd and \xef\xbf\xbd", 0), 0u) << message;
  EXPECT_NE(message.find(" ok \xc3\xa9\xe4\xb8\xad"), std::string::npos) << message;
  EXPECT_EQ(parsed["level"], "warning");
}

TEST(JsonLogFormatterTest, NamedLoggersAndEveryLevelAreSaid) {
  JsonLogFormatter formatter(false, 7);
  nlohmann::json named =
      ParseJsonOrDiscarded(FormatLine(formatter, spdlog::level::err, "m", "http"));
  EXPECT_EQ(named["logger"], "http");
  EXPECT_EQ(named["level"], "error");
  for (auto [level, name] : {std::pair{spdlog::level::trace, "trace"},
                             std::pair{spdlog::level::debug, "debug"},
                             std::pair{spdlog::level::critical, "critical"}}) {
    EXPECT_EQ(ParseJsonOrDiscarded(FormatLine(formatter, level, "m"))["level"], name);
  }
}

TEST(JsonLogFormatterTest, TimesAreUtcWithMicrosecondsAlsoBefore1970) {
  JsonLogFormatter formatter(false, 1);
  const auto whole = spdlog::log_clock::time_point(std::chrono::seconds(1767323045));
  EXPECT_EQ(ParseJsonOrDiscarded(
                FormatLine(formatter, spdlog::level::info, "m", "", whole))["time"],
            "2026-01-02T03:04:05.000000Z");
  // Half a second before the epoch: 1969-12-31T23:59:59.500000Z, not .-500000.
  const auto before = spdlog::log_clock::time_point(std::chrono::microseconds(-500000));
  EXPECT_EQ(ParseJsonOrDiscarded(
                FormatLine(formatter, spdlog::level::info, "m", "", before))["time"],
            "1969-12-31T23:59:59.500000Z");
}

// Under the journal, a JSON line starts with its syslog priority, which journald takes
// off; the rest is the same object.
TEST(JsonLogFormatterTest, JournalPrioritiesLeadEachLine) {
  JsonLogFormatter formatter(/*journal_priorities=*/true, 1);
  const std::string error = FormatLine(formatter, spdlog::level::err, "failed \"x\"");
  ASSERT_EQ(error.rfind("<3>{", 0), 0u) << error;
  nlohmann::json parsed = ParseJsonOrDiscarded(error.substr(3));
  ASSERT_TRUE(parsed.is_object()) << error;
  EXPECT_EQ(parsed["message"], "failed \"x\"");
  EXPECT_EQ(FormatLine(formatter, spdlog::level::warn, "w").rfind("<4>{", 0), 0u);
  EXPECT_EQ(FormatLine(formatter, spdlog::level::info, "i").rfind("<6>{", 0), 0u);
  EXPECT_EQ(FormatLine(formatter, spdlog::level::debug, "d").rfind("<7>{", 0), 0u);
  EXPECT_EQ(FormatLine(formatter, spdlog::level::critical, "c").rfind("<2>{", 0), 0u);
}

TEST(LogOutputTest, TextUnderTheJournalIsThePriorityAndTheMessage) {
  std::unique_ptr<spdlog::formatter> text =
      MakeLogFormatter(LogFormat::kText, /*journal_priorities=*/true);
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(FormatLine(*text, spdlog::level::warn, "disk nearly full"),
            "<4>disk nearly full\n");
  EXPECT_EQ(FormatLine(*text, spdlog::level::err, "e"), "<3>e\n");
  // Text elsewhere: spdlog's default formatter stays (nothing to install).
  EXPECT_EQ(MakeLogFormatter(LogFormat::kText, false), nullptr);
}

// Through a logger and its sink, as the server logs: each message one parsable line,
// with this process's pid.
TEST(LogOutputTest, JsonThroughALoggerGivesOneObjectPerMessage) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("api", sink);
  logger.set_formatter(MakeLogFormatter(LogFormat::kJson, false));
  logger.info("GET {} -> {}", "/v1/sheets/\"x\"\n", 404);
  logger.error("second");
  std::istringstream lines(out.str());
  std::vector<nlohmann::json> objects;
  for (std::string line; std::getline(lines, line);) {
    objects.push_back(ParseJsonOrDiscarded(line));
    ASSERT_TRUE(objects.back().is_object()) << line;
  }
  ASSERT_EQ(objects.size(), 2u) << out.str();
  EXPECT_EQ(objects[0]["message"], "GET /v1/sheets/\"x\"\n -> 404");
  EXPECT_EQ(objects[0]["logger"], "api");
  EXPECT_EQ(objects[0]["pid"], static_cast<int>(getpid()));
  EXPECT_EQ(objects[1]["level"], "error");
}

}  // namespace
}  // namespace sheetlog
