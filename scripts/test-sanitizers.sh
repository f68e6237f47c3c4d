#!/usr/bin/env bash
# Builds with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ and
# runs the unit tests there (the integration tests run in the Release build).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON \
  -DTESSERA_BUILD_BENCHMARKS=OFF -DTESSERA_CUDA=OFF -DTESSERA_PLUGIN_FILTER=
cmake --build build-asan -j "$(nproc)"
# Plugins are dlopen'ed: keep leak checking on, but the fixture that throws
# from its factory is meant to be caught, so nothing here needs suppressions.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir build-asan -j "$(nproc)" --output-on-failure -L unit --timeout 900
