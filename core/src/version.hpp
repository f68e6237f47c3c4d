// version.hpp: the core library's version, for `tessera --version` and messages.
#pragma once

namespace tessera {
const char* version() noexcept;
}
