#!/usr/bin/env bash
# Makes K-quant versions of the default model for the K-quant benchmarks
# (issue 20; bench/kquant.sh, bench/kquant_perplexity.sh):
#
#   models/SmolLM2-135M-Instruct.Q4_K_M.gguf
#   models/SmolLM2-135M-Instruct.Q5_K_M.gguf
#   models/SmolLM2-135M-Instruct.Q6_K.gguf
#
# with llama.cpp's llama-quantize, built by tools/llama-cpp-reference/build.sh
# (LLAMA_BIN, default .cache/llama-cpp/build/bin, as in bench/speculative.sh).
#
# Why --allow-requantize: the source is the Q4_1 file of scripts/fetch-model.sh.
# No float checkpoint of SmolLM2-135M-Instruct can be fetched offline, so each
# K-quant is made from the Q4_1 values (dequantized, then quantized again).
# The files are K-quant GGUFs as llama.cpp writes them, with its tensor mix;
# their quality is below that of a K-quant made from the float weights, which
# the speed and perplexity comparisons do not need. On a model of this width
# most tensors fall back to legacy formats (rows of 576 are not whole
# 256-element super-blocks; only the down projections, rows of 1536, become
# K-quants): measured 2026-12-02, Q4_K_M is Q5_0 + Q8_0 + 16 Q4_K + 14 Q6_K
# tensors, Q5_K_M is Q5_1 + Q8_0 + 16 Q5_K + 14 Q6_K, Q6_K is Q8_0 + 30 Q6_K.
#
# A file already in models/ is kept. Each is written under a temporary name
# and moved into place, so an interrupted run leaves no partial file behind.
# THREADS (default: the number of cores) goes to llama-quantize.
# Usage: scripts/make-kquant-models.sh [TYPE...]   (default: Q4_K_M Q5_K_M Q6_K)
set -euo pipefail
cd "$(dirname "$0")/.."

llama=${LLAMA_BIN:-.cache/llama-cpp/build/bin}
quantize="$llama/llama-quantize"
source_model=models/SmolLM2-135M-Instruct.Q4_1.gguf
threads=${THREADS:-$(nproc)}
types=("$@")
((${#types[@]})) || types=(Q4_K_M Q5_K_M Q6_K)

[[ -x $quantize ]] || { echo "error: $quantize is missing: run tools/llama-cpp-reference/build.sh" >&2; exit 1; }
[[ -f $source_model ]] || { echo "error: $source_model is missing: run scripts/fetch-model.sh" >&2; exit 1; }

made=() kept=()
for type in "${types[@]}"; do
  out="models/SmolLM2-135M-Instruct.$type.gguf"
  if [[ -f $out ]]; then
    kept+=("$out")
    continue
  fi
  echo "quantizing $source_model to $type ..."
  log=$(mktemp)
  if ! "$quantize" --allow-requantize "$source_model" "$out.part" "$type" "$threads" > "$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log" "$out.part"
    echo "error: llama-quantize failed for $type" >&2
    exit 1
  fi
  rm -f "$log"
  mv "$out.part" "$out"
  made+=("$out")
done

for f in "${made[@]}"; do echo "made: $f ($(( $(stat -c %s "$f") / 1000000 )) MB)"; done
for f in "${kept[@]}"; do echo "present: $f (kept)"; done
