#!/usr/bin/env bash
# Rebuilds tests/data/hf-quantized with the reference packers (see make.py).
# A Python venv with PyTorch and transformers from PyPI (pinned in
# requirements.txt), the packers' sources from PyPI; about a minute once the
# venv exists.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
venv=$root/.cache/hf-quantized          # git-ignored
src=$venv/packers
py=$venv/bin/python
[[ -x $py ]] || python3 -m venv "$venv"
"$py" -m pip install -q -r tools/hf-quantized-reference/requirements.txt
if [[ ! -d $src/autoawq-0.2.9 ]]; then
  mkdir -p "$src"
  # --no-deps: only the packing code is run; its CUDA kernels are not built.
  "$py" -m pip download -q --no-deps --only-binary :all: --python-version 3.11 auto-gptq==0.7.1 -d "$src"
  "$py" -m pip download -q --no-deps --no-binary :all: autoawq==0.2.9 -d "$src"
  (cd "$src" && "$py" -m zipfile -e auto_gptq-0.7.1-*.whl . && tar xzf autoawq-0.2.9.tar.gz)
fi
PYTHONHASHSEED=0 "$py" tools/hf-quantized-reference/make.py "$src"
(cd tests/data/hf-quantized && find . -type f ! -name SHA256SUMS ! -name README.md | sort | xargs sha256sum > SHA256SUMS)
