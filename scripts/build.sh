#!/usr/bin/env bash
# Configures and builds Tessera (Release) into build/. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TESSERA_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_PLUGIN_FILTER= "$@"
cmake --build "$build_dir" -j "$(nproc)"
