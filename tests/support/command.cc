#include "tests/support/command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sheetlog::testing {

namespace {

std::string ReadAndRemove(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  ::unlink(path.c_str());
  return text.str();
}

}  // namespace

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

CommandResult RunCommand(const std::string& command_line) {
  char out_path[] = "/tmp/sheetlog-command-out-XXXXXX";
  char err_path[] = "/tmp/sheetlog-command-err-XXXXXX";
  ::close(::mkstemp(out_path));
  ::close(::mkstemp(err_path));
  const std::string command = "(" + command_line + ") >" + ShellQuote(out_path) + " 2>" +
                              ShellQuote(err_path) + " </dev/null";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.out = ReadAndRemove(out_path);
  result.err = ReadAndRemove(err_path);
  if (WIFEXITED(status)) {
    // The shell reports a child killed by signal N as exit code 128 + N.
    result.exit_code = WEXITSTATUS(status);
    if (result.exit_code > 128) {
      result.signal = result.exit_code - 128;
      result.exit_code = -1;
    }
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace sheetlog::testing
