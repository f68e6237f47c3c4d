// read_file.hpp: a whole file into memory, or an error that names the file and
// says what is wrong with it (missing, a directory, unreadable). For the text
// inputs a user hands the CLI (pipeline files, --text, tokenizer.json); model
// weights are mapped, not read (model/).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "tessera/status.hpp"

namespace tessera {

// `what` names the file's role in messages, e.g. "pipeline file":
//   pipeline file 'x.toml' does not exist
//   pipeline file 'dir' is a directory
//   pipeline file 'x.toml' cannot be read: Permission denied
Result<std::string> read_file(const std::filesystem::path& path, std::string_view what);

}  // namespace tessera
