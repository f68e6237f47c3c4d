#!/usr/bin/env bash
# Configures and builds Tessera (Release) into build/.
# Usage: build.sh [--target NAME]... [cmake configure arguments...]
# Without --target it builds everything (tests and benchmarks included);
# `--target tessera_runtime` builds only the CLI, the core and the plugins.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TESSERA_BUILD_DIR:-build}
targets=()
while (($#)); do
  case $1 in
    --target)
      (($# >= 2)) || { echo "build.sh: --target needs a name" >&2; exit 2; }
      targets+=(--target "$2"); shift 2 ;;
    --target=*) targets+=(--target "${1#--target=}"); shift ;;
    *) break ;;
  esac
done
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_PLUGIN_FILTER= "$@"
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
