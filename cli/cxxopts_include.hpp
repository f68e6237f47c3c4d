// cxxopts_include.hpp: <cxxopts.hpp> for every CLI file, with GCC 12's
// -Wrestrict false positive from inside its integer parsing (std::string
// assignment inlined from the header) silenced; the header is not ours to change.
#pragma once

// Repeatable options (--set, --path) take each argument whole: cxxopts would
// split it at commas, breaking --set 'run.prompts=["a", "b"]' (a TOML array)
// and --set 'run.prompt=Hello, world'. No argument can hold a NUL.
#define CXXOPTS_VECTOR_DELIMITER '\0'

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <cxxopts.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
