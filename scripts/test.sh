#!/usr/bin/env bash
# Runs every test: checks that CMake's default generator configures, builds
# everything (tests and benchmarks included), fetches the model and the
# tokenizer test vectors, runs the whole CTest suite (unit and integration),
# then the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer,
# then each fuzz target for a bounded time. `--quick` stops after the CTest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ ${1:-} == --quick ]] && quick=1

# Each stage prints the seconds it took, so a slow CI run shows where the time went.
stage_start=$SECONDS
stage_done() { echo "== $1: $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }

bash scripts/install-deps.sh
stage_done "dependencies"

# scripts/build.sh uses Ninja; a user who types `cmake -S . -B build` gets
# CMake's default generator (Unix Makefiles). Configure once with it, in a
# scratch folder and without building (seconds), so a change that breaks
# configuring with Makefiles fails here.
echo "== configure with Unix Makefiles (configure only)"
makefiles_dir=$(mktemp -d)
if ! cmake -S . -B "$makefiles_dir" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DTESSERA_PLUGIN_FILTER= \
    >"$makefiles_dir.log" 2>&1; then
  cat "$makefiles_dir.log"
  echo "!! configuring with Unix Makefiles failed" >&2
  exit 1
fi
rm -rf "$makefiles_dir" "$makefiles_dir.log"
stage_done "configure with Unix Makefiles"

bash scripts/build.sh
stage_done "release build"
bash scripts/fetch-model.sh
bash scripts/fetch-eval-text.sh
bash scripts/fetch-test-vocabs.sh
stage_done "model, text and vocabularies"

echo "== unit and integration tests (build/)"
# The model was fetched just above: a test that finds it missing fails
# instead of skipping (tests/integration/model_required.hpp).
TESSERA_REQUIRE_MODEL=1 ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 900
stage_done "unit and integration tests"

if ((quick)); then exit 0; fi

echo "== unit tests under ASan+UBSan (build-asan/)"
bash scripts/test-sanitizers.sh
stage_done "sanitizer build and tests"

echo "== fuzzing"
# 30 s a target: CI on two slow cores came within two minutes of its 90-minute
# limit with 60 (2026-12-04); longer runs: TESSERA_FUZZ_SECONDS=600.
bash scripts/fuzz.sh "${TESSERA_FUZZ_SECONDS:-30}"
stage_done "fuzz build and fuzzing"
