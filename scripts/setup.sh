#!/usr/bin/env bash
# One command from a fresh Debian machine to a running quickstart: installs
# what is missing, builds, fetches the default model, runs pipelines/quickstart.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/fetch-model.sh
bash scripts/fetch-eval-text.sh
echo "== quickstart: build/bin/tessera run pipelines/quickstart.toml"
build/bin/tessera run pipelines/quickstart.toml
