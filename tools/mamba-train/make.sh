#!/usr/bin/env bash
# Rebuilds tests/data/mamba from nothing: Python venv, KJV text, tokenizer,
# Mamba-1 and Mamba-2 training, HF folders, GGUF conversion, reference data.
# About 20 minutes on 2 cores.  See README.md beside this file.
#
#   bash tools/mamba-train/make.sh               # everything
#   bash tools/mamba-train/make.sh --keep-models # reuse the trained HF folders;
#                                                # redo conversion + reference data
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
tool=$root/tools/mamba-train
venv=$root/.cache/mamba-train           # git-ignored (.cache)
work=$venv/work                         # corpus split + tokenizer
data=$root/tests/data/mamba
llama=$root/.cache/llama-cpp/src/vendor/llama.cpp
py=$venv/bin/python
keep_models=0
[[ ${1:-} == --keep-models ]] && keep_models=1

export OMP_WAIT_POLICY=PASSIVE          # see common.py
export PYTHONHASHSEED=0

# 1. Debian's KJV text and its reader, bible(1).
if ! command -v bible >/dev/null || ! dpkg -s bible-kjv-text >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bible-kjv bible-kjv-text
fi

# 2. Python environment, pinned versions.
if [[ ! -x $py ]]; then
  python3 -m venv "$venv"
fi
pins_ok() {
  "$py" - "$tool/requirements.txt" <<'PY'
import importlib.metadata as md, sys
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, version = line.split("==")
        try:
            assert md.version(name) == version
        except (md.PackageNotFoundError, AssertionError):
            sys.exit(1)
PY
}
if ! pins_ok; then
  "$py" -m pip install -q --upgrade pip
  "$py" -m pip install -q -r "$tool/requirements.txt"
fi

# 3. llama.cpp's converter: the source tree tools/llama-cpp-reference/build.sh
#    unpacks (llama-cpp-python 0.3.36 sdist from PyPI); unpacked here if absent.
if [[ ! -f $llama/convert_hf_to_gguf.py ]]; then
  cache=$root/.cache/llama-cpp
  mkdir -p "$cache"
  [[ -f $cache/llama_cpp_python-0.3.36.tar.gz ]] ||
    python3 -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$cache"
  mkdir -p "$cache/src" && tar xzf "$cache/llama_cpp_python-0.3.36.tar.gz" -C "$cache/src" --strip-components=1
fi

# 4. Corpus split and tokenizer.
mkdir -p "$work" "$data"
cd "$tool"
"$py" corpus.py --out "$work"
"$py" tokenizer.py --work "$work"

for m in mamba1 mamba2; do
  # 5. Train and save the HF folder (config.json, model.safetensors, tokenizer.model).
  if [[ $keep_models == 0 || ! -f $data/$m-hf/model.safetensors ]]; then
    rm -rf "$data/$m-hf"
    "$py" train.py --model "$m" --work "$work" --hf-out "$data/$m-hf" --info-out "$data/$m.train.json"
  fi
  # 6. GGUF with llama.cpp's own converter and gguf-py (from tokenizer.model:
  #    the converter would prefer a tokenizer.json, so that is added after).
  rm -f "$data/$m.f32.gguf" "$data/$m-hf/tokenizer.json"
  if ! PYTHONPATH=$llama/gguf-py "$py" "$llama/convert_hf_to_gguf.py" "$data/$m-hf" --outtype f32 \
       --model-name "tessera-test-$m-kjv" --outfile "$data/$m.f32.gguf" > "$work/convert-$m.log" 2>&1; then
    cat "$work/convert-$m.log"; exit 1
  fi
  grep -E "^(WARNING|ERROR)" "$work/convert-$m.log" || true
  echo "$m: wrote $data/$m.f32.gguf"
  "$py" tokenizer_json.py --hf "$data/$m-hf"
  # 7. Reference data from transformers.
  "$py" reference.py --model "$m" --hf "$data/$m-hf" --work "$work" --out-dir "$data"
done

# 8. GGUF layout, checked against the HF weights.
PYTHONPATH=$llama/gguf-py "$py" layout.py --data "$data" > "$data/GGUF-LAYOUT.md"

# 9. Optional: llama.cpp's own greedy run on the GGUF files, if it is built.
if [[ -x $root/.cache/llama-cpp/greedy_ids ]]; then
  "$py" llamacpp_check.py --greedy-ids "$root/.cache/llama-cpp/greedy_ids" --data "$data" |
    tee "$work/llamacpp-check.txt" || true
fi

cd "$data"
chmod 644 ./*.* ./*-hf/*
find . -type f ! -name SHA256SUMS ! -name README.md | sort | sed 's|^\./||' |
  xargs sha256sum > SHA256SUMS
du -sh "$data"
cat SHA256SUMS
