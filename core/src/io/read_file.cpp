#include "io/read_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace tessera {

Result<std::string> read_file(const std::filesystem::path& path, std::string_view what) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found)
    return NotFound(fmt::format("{} '{}' does not exist", what, path.string()));
  // Checked first: opening a directory succeeds on Linux, and reading it then
  // fails with nothing read, which would look like an empty file.
  if (status.type() == std::filesystem::file_type::directory)
    return InvalidArgument(fmt::format("{} '{}' is a directory", what, path.string()));
  const auto unreadable = [&] {
    return InvalidArgument(fmt::format("{} '{}' cannot be read: {}", what, path.string(), std::strerror(errno)));
  };
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return unreadable();
  // read(), not `out << in.rdbuf()`: that form reports a failed read as an
  // empty or cut-short file, while read() sets badbit on `in`.
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) text.append(chunk, static_cast<size_t>(in.gcount()));
  if (in.bad()) return unreadable();
  return text;
}

}  // namespace tessera
