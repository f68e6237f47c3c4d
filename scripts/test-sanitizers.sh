#!/usr/bin/env bash
# Builds with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ and
# runs the unit tests there (the integration tests run in the Release build).
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 with line tables only (all a sanitizer report needs: function, file and
# line) halves the compile time of -O2 -g, which had made this the longest
# stage of CI. _GLIBCXX_ASSERTIONS adds libstdc++'s own checks (operator[]
# bounds, front() of an empty container, ...). The integration tests run in
# the Release build only, so their binary is not built here.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -D_GLIBCXX_ASSERTIONS" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DTESSERA_BUILD_INTEGRATION_TESTS=OFF \
  -DTESSERA_BUILD_BENCHMARKS=OFF -DTESSERA_CUDA=OFF -DTESSERA_PLUGIN_FILTER=
cmake --build build-asan -j "$(nproc)"
# Plugins are dlopen'ed: keep leak checking on, but the fixture that throws
# from its factory is meant to be caught, so nothing here needs suppressions.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir build-asan -j "$(nproc)" --output-on-failure -L unit --timeout 900
