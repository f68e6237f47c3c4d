#!/usr/bin/env bash
# `tessera quantize` against llama.cpp's quantizer on one model (issue 18):
# each of Tessera's methods and `llama-quantize` (without and with an
# importance matrix from `llama-imatrix` on the same calibration text) writes
# the same format from the same input; then every file is scored by both
# engines on the same text and windows (bench/kquant_perplexity.sh), which
# also shows that llama.cpp runs what Tessera wrote and agrees on it.
# Prints a markdown table: method, bits per weight, quantize seconds, Tessera
# and llama.cpp perplexity.
#
# Environment:
#   MODEL          input GGUF (models/SmolLM2-135M-Instruct.Q4_1.gguf)
#   FORMAT         q4_0, q4_1, q5_0, q5_1, q8_0, q4_k or q5_k (q4_0); gptq:
#                  GPTQ checkpoint groups, a Tessera file llama.cpp does not
#                  run (scored by Tessera alone), shaped by FORMAT_FLAGS
#   FORMAT_FLAGS   extra flags for every Tessera method ("--bits 3 --group-size 128")
#   LLAMA_TYPE     the type llama-quantize writes (FORMAT in capitals; for
#                  q4_k/q5_k Q4_K_S/Q5_K_S, the recipes that put the K type
#                  wherever it fits, as Tessera does: Q4_K alone means Q4_K_M,
#                  which mixes in Q6_K); none: no llama-quantize rows
#   METHODS        Tessera's methods, space-separated ("rtn gptq awq"; also
#                  int8, and awq-no-clip: AWQ's scales without its clipping search)
#   GPTQ_FLAGS     extra flags for GPTQ ("--act-order")
#   INT8_FLAGS     extra flags for int8, INT8 W8A8 ("--smooth auto"; the
#                  Hadamard rotation is tessera quantize's default, and
#                  "--rotation none" turns it off); its file is Tessera's own
#                  format, scored by Tessera alone
#   CALIBRATION    calibration text (.cache/eval/kjv.txt); SAMPLES (8) windows
#                  of SAMPLE_TOKENS (512), for Tessera and llama-imatrix alike
#   TEXT, CTX, CHUNKS, THREADS, LIMIT  as in bench/kquant_perplexity.sh
#   OUT            the folder for the files and logs (.cache/bench/quantize-<date>)
#   IMATRIX        llama-imatrix's output to use (made there when missing, so
#                  several formats' runs share one; default OUT/imatrix.dat)
#   SCORE_INPUT    1 (default): score the input file too; 0: leave it out
#                  (a run of several formats scores it once)
#
# Needs scripts/build.sh, scripts/fetch-eval-text.sh and
# tools/llama-cpp-reference/build.sh (llama-quantize, llama-imatrix,
# llama-perplexity). The default model takes about 20 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

model=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
format=${FORMAT:-q4_0}
read -r -a methods <<< "${METHODS:-rtn gptq awq}"
read -r -a gptq_flags <<< "${GPTQ_FLAGS:---act-order}"
read -r -a int8_flags <<< "${INT8_FLAGS:---smooth auto}"
read -r -a format_flags <<< "${FORMAT_FLAGS:-}"
calibration=${CALIBRATION:-.cache/eval/kjv.txt}
samples=${SAMPLES:-8}
sample_tokens=${SAMPLE_TOKENS:-512}
threads=${THREADS:-2}
tessera=${TESSERA:-${TESSERA_BUILD_DIR:-build}/bin/tessera}
llama=${LLAMA_BIN:-.cache/llama-cpp/build/bin}
out=${OUT:-.cache/bench/quantize-$(date +%Y%m%d-%H%M%S)}
imatrix=${IMATRIX:-$out/imatrix.dat}
score_input=${SCORE_INPUT:-1}
for f in "$model" "$calibration" "$tessera" "$llama/llama-quantize" "$llama/llama-imatrix"; do
  [[ -e $f ]] || { echo "error: $f is missing (scripts/build.sh, scripts/fetch-eval-text.sh," \
                        "tools/llama-cpp-reference/build.sh)" >&2; exit 1; }
done
mkdir -p "$out"
rows="$out/rows.jsonl"
: > "$rows"
name=$(basename "$model" .gguf)

record() {  # method file seconds
  python3 - "$@" >> "$rows" <<'PY'
import json, sys
method, path, seconds = sys.argv[1:]
print(json.dumps({"method": method, "file": path, "seconds": float(seconds)}))
PY
}

tessera_only=()
for method in "${methods[@]}"; do
  file="$out/$name.tessera-$method.$format.gguf"
  flags=()
  [[ $method != rtn ]] && flags=(--calibration "$calibration" --samples "$samples" --sample-tokens "$sample_tokens")
  [[ $method == gptq ]] && flags+=("${gptq_flags[@]}")
  if [[ $method == int8 ]]; then
    flags+=("${int8_flags[@]}")
    file="$out/$name.tessera-int8.gguf"
    tessera_only+=("$file")
  else
    flags+=(--format "$format" "${format_flags[@]}")
    [[ $format == gptq ]] && tessera_only+=("$file")
  fi
  tessera_method=$method
  [[ $method == awq-no-clip ]] && tessera_method=awq flags+=(--awq-no-clip)
  echo "tessera quantize --method $tessera_method ${flags[*]}"
  start=$SECONDS
  "$tessera" quantize "$model" "$file" --method "$tessera_method" --threads "$threads" --force --json \
    "${flags[@]}" > "$out/tessera-$method.json"
  record "tessera $method" "$file" "$((SECONDS - start))"
done

# llama.cpp's quantizer from the same input: the type name it takes.
case $format in
  q4_k | q5_k) default_type=${format^^}_S ;;
  *) default_type=${format^^} ;;
esac
type=${LLAMA_TYPE:-$default_type}
if [[ $type != none ]]; then
file="$out/$name.llama-quantize.$format.gguf"
echo "llama-quantize --allow-requantize $type"
start=$SECONDS
"$llama/llama-quantize" --allow-requantize "$model" "$file" "$type" "$threads" > "$out/llama-quantize.log" 2>&1
record "llama-quantize" "$file" "$((SECONDS - start))"

start=$SECONDS
if [[ ! -s $imatrix ]]; then
  echo "llama-imatrix on $samples windows of $sample_tokens tokens of $calibration"
  "$llama/llama-imatrix" -m "$model" -f "$calibration" -c "$sample_tokens" --chunks "$samples" -t "$threads" \
    -o "$imatrix" > "$out/llama-imatrix.log" 2>&1
fi
file="$out/$name.llama-quantize-imatrix.$format.gguf"
"$llama/llama-quantize" --allow-requantize --imatrix "$imatrix" "$model" "$file" "$type" "$threads" \
  > "$out/llama-quantize-imatrix.log" 2>&1
record "llama-quantize + imatrix" "$file" "$((SECONDS - start))"
fi

files=()
[[ $score_input == 1 ]] && files+=("$model")
while read -r f; do files+=("$f"); done < <(python3 -c 'import json,sys; [print(json.loads(l)["file"]) for l in open(sys.argv[1])]' "$rows")
status=0
TESSERA_ONLY="${tessera_only[*]}" OUT="$out/perplexity.jsonl" bash bench/kquant_perplexity.sh "${files[@]}" | tee "$out/perplexity.md" || status=$?

python3 - "$rows" "$out/perplexity.jsonl" "$model" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ppl = [json.loads(l) for l in open(sys.argv[2])]
def score(path, engine):
    r = next((p for p in ppl if p["model"] == path and p["engine"] == engine), None)
    return f"{r['ppl']:.3f} ± {r['uncertainty']:.3f}" if r else "-"
size = lambda p: os.path.getsize(p) / 2**20
print("\n| file | method | MiB | quantize s | Tessera ppl | llama.cpp ppl |")
print("|---|---|---|---|---|---|")
if any(p["model"] == sys.argv[3] for p in ppl):
    print(f"| {os.path.basename(sys.argv[3])} | input | {size(sys.argv[3]):.1f} | | {score(sys.argv[3], 'tessera')} | {score(sys.argv[3], 'llama.cpp')} |")
for r in rows:
    print(f"| {os.path.basename(r['file'])} | {r['method']} | {size(r['file']):.1f} | {r['seconds']:.0f} |"
          f" {score(r['file'], 'tessera')} | {score(r['file'], 'llama.cpp')} |")
PY
echo "files and logs: $out/"
exit $status
