// Runs a command line (through /bin/sh) and collects what it printed, for tests that
// drive the sheetlog binary's own commands (backup, restore, version) as an operator
// would.
#pragma once

#include <string>

namespace sheetlog::testing {

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal (then `signal` says which)
  int signal = 0;
  std::string out;  // stdout
  std::string err;  // stderr
};

CommandResult RunCommand(const std::string& command_line);

// A word for the shell: `text` in single quotes.
std::string ShellQuote(const std::string& text);

}  // namespace sheetlog::testing
