// output_path.hpp: the checks a command makes of a file it is about to write
// whole (`tessera quantize`, `tessera convert`), before any work.
#pragma once

#include <string>

#include "tessera/status.hpp"

namespace tessera {

// invalid_argument when `path` exists and `force` is false ("PATH exists;
// pass --force to replace it"), when it is a folder, or when the folder it
// would go in does not exist. Creates nothing.
Status check_output_path(const std::string& path, bool force);

}  // namespace tessera
