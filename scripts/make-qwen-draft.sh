#!/usr/bin/env bash
# Makes the draft model of pipelines/speculative-qwen.toml:
#
#   models/qwen2.5-coder-0.5b-instruct-q4_0.gguf   (~345 MiB)
#
# and, first, the text of its head's vocabulary (scripts/make-draft-vocabulary.sh).
#
# from the Qwen2.5-Coder-0.5B file of scripts/fetch-qwen-pair.sh (mostly
# Q5_0 with some Q4_K/Q6_K, its output head Q8_0: 469 MiB) with Tessera's own quantizer: every
# Linear and both the token embedding and the output head rounded to nearest
# into Q4_0 (the values are the Q5_0/Q8_0 file's, dequantized first).
#
# Why a draft of its own: a draft token costs the bytes the draft reads, and
# on two cores the 0.5B file's Q8_0 head alone (136 M weights) is more than a
# third of them. In Q4_0 the draft reads 29% fewer bytes per token (278 MB
# against 392, the embedding row aside) and agrees with the target about as
# often (docs/speculative.md, "A Q4_0 draft"). What the
# draft proposes never changes what is generated: the target verifies every
# token (greedy: its own ids; sampling: its own distribution).
#
# TESSERA: the tessera binary (default: bin/tessera in the build folder,
# build/ or TESSERA_BUILD_DIR, as scripts/build.sh).
# A file already there is kept; tessera quantize writes a temporary file and
# renames it at the end, so an interrupted run leaves no partial file.
# Usage: scripts/make-qwen-draft.sh [--if-built]
#   --if-built: where Tessera is not built yet, say so and exit 0 (how
#   scripts/fetch-qwen-pair.sh calls it).
set -euo pipefail
if_built=0
[[ ${1-} == --if-built ]] && if_built=1
tessera=${TESSERA:+$(realpath -m "$TESSERA")}  # relative to the caller's folder
cd "$(dirname "$0")/.."
tessera=${tessera:-${TESSERA_BUILD_DIR:-build}/bin/tessera}  # relative to the repository, as in build.sh

scripts/make-draft-vocabulary.sh
source_model=models/qwen2.5-coder-0.5b-instruct-q5_0.gguf
out=models/qwen2.5-coder-0.5b-instruct-q4_0.gguf

if [[ -f $out ]]; then
  echo "ready: $out"
  exit 0
fi
if [[ ! -x $tessera ]]; then
  if ((if_built)); then
    echo "note: Tessera is not built yet; after scripts/build.sh, run scripts/make-qwen-draft.sh for the Q4_0 draft"
    exit 0
  fi
  echo "error: $tessera is missing: build Tessera first (scripts/build.sh)" >&2
  exit 1
fi
[[ -f $source_model ]] || { echo "error: $source_model is missing: run scripts/fetch-qwen-pair.sh" >&2; exit 1; }

echo "quantizing $source_model into Q4_0 (head and embedding too) ..."
"$tessera" quantize "$source_model" "$out" --method rtn --format q4_0 \
  --token-embedding-type q4_0 --output-tensor-type q4_0 -q
echo "ready: $out"
