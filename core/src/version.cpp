#include "version.hpp"

namespace tessera {
const char* version() noexcept { return TESSERA_VERSION; }
}  // namespace tessera
