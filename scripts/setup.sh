#!/usr/bin/env bash
# One command from a fresh Debian machine to a running quickstart: installs
# what is missing, builds what running needs (the CLI, the core and the
# plugins; scripts/test.sh builds the tests and benchmarks), fetches the
# default model, runs pipelines/quickstart.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TESSERA_BUILD_DIR:-build}  # as in scripts/build.sh

# Each stage prints the seconds it took, as scripts/test.sh does.
stage_start=$SECONDS
stage_done() { echo "== $1: $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }

# apt's output goes to a log, shown only if installing fails; the terminal gets
# install-deps' own lines (which packages are missing and being installed).
echo "== dependencies"
deps_log=$(mktemp "${TMPDIR:-/tmp}/tessera-install-deps.XXXXXX.log")
set +e
bash scripts/install-deps.sh 2>&1 | tee "$deps_log" | { grep --line-buffered '^install-deps:' || true; }
deps_status=${PIPESTATUS[0]}
set -e
if ((deps_status != 0)); then
  cat "$deps_log" >&2
  echo "setup: installing the packages failed (exit $deps_status); the log above is in $deps_log" >&2
  exit 1
fi
if grep -q '^install-deps: installing' "$deps_log"; then
  echo "install-deps: done; apt's full output is in $deps_log"
else
  rm -f "$deps_log"
fi
stage_done "dependencies"

echo "== build: the CLI, the core and the plugins (target tessera_runtime) into $build_dir/"
bash scripts/build.sh --target tessera_runtime
stage_done "build"

bash scripts/fetch-model.sh
bash scripts/fetch-eval-text.sh
stage_done "model and text"

echo "== quickstart: $build_dir/bin/tessera run pipelines/quickstart.toml"
"$build_dir/bin/tessera" run pipelines/quickstart.toml
stage_done "quickstart"
