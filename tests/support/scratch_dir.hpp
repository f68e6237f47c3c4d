#pragma once
// A folder for one test program's files, under the system's temporary
// directory, named for the program and its process, and removed when the
// program exits: the quantize tests alone write about 4 GB of models a run,
// which filled a machine's disk when each run left its folder behind.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace tessera::test {

// The same folder for every call in a process (`program` names it on the
// first call). Never destroyed: the removal at exit still needs the path.
inline const std::filesystem::path& scratch_dir(std::string_view program) {
  static const auto* dir = [&] {
    auto* made = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                           (std::string(program) + "_" + std::to_string(::getpid())));
    std::filesystem::create_directories(*made);
    std::atexit([] {
      std::error_code ignored;  // a folder that cannot go is left, not a failed run
      std::filesystem::remove_all(scratch_dir({}), ignored);
    });
    return made;
  }();
  return *dir;
}

}  // namespace tessera::test
