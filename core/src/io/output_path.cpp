#include "io/output_path.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace tessera {

Status check_output_path(const std::string& path, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (!force) return InvalidArgument(fmt::format("{} exists; pass --force to replace it", path));
    if (fs::is_directory(path, ec)) return InvalidArgument(fmt::format("{} is a directory", path));
  }
  const fs::path parent = fs::absolute(path, ec).parent_path();
  if (!fs::is_directory(parent, ec))
    return InvalidArgument(fmt::format("{}: the folder {} does not exist", path, parent.string()));
  return Status::Ok();
}

}  // namespace tessera
