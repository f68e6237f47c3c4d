#!/usr/bin/env bash
# Runs every test: builds, fetches the model and the tokenizer test vectors,
# runs the whole CTest suite (unit and integration), then the unit tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer, then each fuzz target
# for a bounded time. `--quick` stops after the CTest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[[ ${1:-} == --quick ]] && quick=1

bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/fetch-model.sh
bash scripts/fetch-eval-text.sh
bash scripts/fetch-test-vocabs.sh

echo "== unit and integration tests (build/)"
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 900

if ((quick)); then exit 0; fi

echo "== unit tests under ASan+UBSan (build-asan/)"
bash scripts/test-sanitizers.sh

echo "== fuzzing"
bash scripts/fuzz.sh "${TESSERA_FUZZ_SECONDS:-60}"
