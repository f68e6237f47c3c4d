// run_command.hpp: run a shell command, capture its output and exit code (tests only).
#pragma once

#include <string>

namespace tessera::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

CommandResult run_command(const std::string& command);

}  // namespace tessera::test
