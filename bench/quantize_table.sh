#!/usr/bin/env bash
# Issue 18's quality table on Qwen2.5-Coder-0.5B-Instruct: Tessera's
# quantizers against llama.cpp's, from one reference model, one format after
# another (bench/quantize_quality.sh for each), every file scored by both
# engines on the same Jargon File windows.
#
# No float checkpoint of the model exists offline: the reference is its GGUF
# (scripts/fetch-qwen-pair.sh; mostly Q5_0, some Q4_K/Q6_K/Q8_0) dequantized
# to f16 by llama-quantize, so every figure carries the Q5_0 rounding too.
# The calibration text is the King James Bible, the evaluation text the
# Jargon File (never the same text). GPTQ runs at tessera quantize's default
# damping (0.1 since 2026-12-06; the docs' 2026-12-05 figures were at 0.01:
# GPTQ_FLAGS="--act-order --damp 0.01" reproduces them).
#
# Rows, per format (FORMATS, space-separated; default all):
#   q4_0  Tessera rtn, gptq (act-order), awq  against llama-quantize Q4_0
#   q4_k  Tessera rtn, gptq (act-order), awq  against llama-quantize Q4_K_M
#   q3_k  Tessera rtn, gptq (act-order), awq  against llama-quantize Q3_K_S
#   q8_0  Tessera int8 (W8A8)                 against llama-quantize Q8_0
#   g128_4, g128_3  Tessera rtn, gptq (act-order), awq, awq-no-clip into GPTQ checkpoint
#         groups of 128 columns (--format gptq, 4 / 3 bits, asymmetric), a
#         Tessera file llama.cpp does not run: scored by Tessera alone, no
#         llama-quantize rows (compare with q4_0 / q3_k's)
# llama-quantize runs without and with one importance matrix (llama-imatrix
# on the calibration windows Tessera calibrates on), made once.
#
# Environment: SAMPLES (32) windows of SAMPLE_TOKENS (512) of calibration;
# CHUNKS (20) windows of 512 scored; OUT (.cache/bench/quantize-table-<date>);
# REFERENCE (the f16 file; made there when missing).
# Takes about an hour and a half on 2 cores with every format.
set -euo pipefail
cd "$(dirname "$0")/.."

source_model=${SOURCE_MODEL:-models/qwen2.5-coder-0.5b-instruct-q5_0.gguf}
reference=${REFERENCE:-.cache/models/qwen2.5-coder-0.5b-instruct.f16.gguf}
read -r -a formats <<< "${FORMATS:-q4_0 q4_k q3_k q8_0 g128_4 g128_3}"
llama=${LLAMA_BIN:-.cache/llama-cpp/build/bin}
out=${OUT:-.cache/bench/quantize-table-$(date +%Y%m%d-%H%M%S)}
export SAMPLES=${SAMPLES:-32} CHUNKS=${CHUNKS:-20}
mkdir -p "$out" "$(dirname "$reference")"

if [[ ! -s $reference ]]; then
  [[ -s $source_model ]] || { echo "error: $source_model is missing: run scripts/fetch-qwen-pair.sh" >&2; exit 1; }
  echo "reference: $source_model dequantized to f16 by llama-quantize"
  "$llama/llama-quantize" --allow-requantize "$source_model" "$reference.part" F16 2 > "$out/reference.log" 2>&1
  mv "$reference.part" "$reference"
fi

status=0
first=1
for format in "${formats[@]}"; do
  case $format in
    q4_0) methods="rtn gptq awq" llama_type=Q4_0 ;;
    q4_k) methods="rtn gptq awq" llama_type=Q4_K_M ;;
    q3_k) methods="rtn gptq awq" llama_type=Q3_K_S ;;
    q8_0) methods="int8" llama_type=Q8_0 ;;
    g128_4 | g128_3) methods="rtn gptq awq awq-no-clip" llama_type=none ;;
    *) echo "error: no rows for format $format" >&2; exit 2 ;;
  esac
  tessera_format=$format format_flags=""
  if [[ $format == g128_* ]]; then
    tessera_format=gptq format_flags="--bits ${format#g128_} --group-size 128 --asym"
  fi
  echo "== $format: Tessera $methods; llama-quantize $llama_type"
  MODEL=$reference FORMAT=$tessera_format FORMAT_FLAGS=$format_flags METHODS=$methods LLAMA_TYPE=$llama_type \
    OUT="$out/$format" \
    IMATRIX="$out/imatrix.dat" SCORE_INPUT=$first bash bench/quantize_quality.sh \
    > "$out/$format.log" 2>&1 || status=$?
  sed -n '/^| file/,/^$/p' "$out/$format.log"
  first=0
done
echo "files and logs: $out/"
exit $status
