// cxxopts_include.hpp: <cxxopts.hpp> for every CLI file, with GCC 12's
// -Wrestrict false positive from inside its integer parsing (std::string
// assignment inlined from the header) silenced; the header is not ours to change.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <cxxopts.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
