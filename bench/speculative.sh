#!/usr/bin/env bash
# Speculative decoding on the Qwen2.5-Coder pair (docs/speculative.md,
# "Measurements"): Qwen2.5-Coder-1.5B (Q4_K_M, or f16 with --f16) as the
# target, Qwen2.5-Coder-0.5B as the draft, greedy, GEN tokens after each
# prompt, on THREADS threads. Per prompt and round, alternating:
#   Tessera: the target alone, draft model, prompt lookup, both
#            (`tessera bench --prompt`: exactly GEN tokens, one warm-up run,
#            decode tokens/s after the first token); and with sampling
#            (temperature 0.7, top-p 0.9, seed 42) alone and with both;
#   llama.cpp: the target alone (llama-bench tg), llama-speculative-simple,
#            llama-speculative, llama-lookup (their "decoded ... t/s"; they
#            stop at end-of-sequence, so they may decode fewer tokens).
# Each run's figures go to a JSON line in OUT (default
# .cache/bench/speculative-<date>.jsonl) and the raw logs beside it; the
# table of medians (tok/s, acceptance rate, mean acceptance length, speedup
# over the same engine's target alone) is printed at the end, with the
# machine's read bandwidth measured before and after. Then the exactness
# check: every method's greedy ids against the target alone's, all prompts
# in one batch (the script fails where they differ).
#
# The draft, for both engines: the pipeline's, the 0.5B in Q4_0
# (scripts/make-qwen-draft.sh), or --draft FILE (e.g. the fetched
# models/qwen2.5-coder-0.5b-instruct-q5_0.gguf, the draft before 2026-12-06).
# Needs scripts/fetch-qwen-pair.sh (the models) and
# tools/llama-cpp-reference/build.sh (llama.cpp). --f16 first converts the
# target to f16 with llama-quantize (3.1 GB, once).
# Prompts: palindrome, quicksort (code), hashtable (prose), repeat (asks for
# its input again), fix (bench/speculative-fix-prompt.txt: two Python
# functions to give back with one bug fixed; the completion copies them).
# Usage: bench/speculative.sh [--rounds N] [--gen N] [--threads N] [--f16] [--prompts code|copy|all] [--draft FILE]
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."

rounds=2 gen=128 threads=2 f16=0 which=all draft=models/qwen2.5-coder-0.5b-instruct-q4_0.gguf
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --gen) gen=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --f16) f16=1; shift ;;
    --prompts) which=$2; shift 2 ;;
    --draft) draft=$(cd "$caller" && realpath -m "$2"); shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--gen N] [--threads N] [--f16] [--prompts code|copy|all] [--draft FILE]" >&2
       exit 2 ;;
  esac
done

tessera=${TESSERA:-${TESSERA_BUILD_DIR:-build}/bin/tessera}
llama=${LLAMA_BIN:-.cache/llama-cpp/build/bin}
target=models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
export BENCH_DRAFT=$draft  # recorded in every row
for f in "$tessera" "$llama/llama-speculative-simple" "$llama/llama-speculative" "$llama/llama-lookup" \
         "$llama/llama-bench" "$target" "$draft" models/draft-vocabulary-python.txt; do
  [[ -e $f ]] || { echo "error: $f is missing (scripts/fetch-qwen-pair.sh, scripts/make-qwen-draft.sh," \
                         "tools/llama-cpp-reference/build.sh, scripts/build.sh)" >&2; exit 1; }
done
if ((f16)); then
  f16_target=models/qwen2.5-coder-1.5b-instruct-f16.gguf
  if [[ ! -f $f16_target ]]; then
    echo "converting the target to f16 (its values are the Q4_K_M file's, dequantized) ..."
    "$llama/llama-quantize" --allow-requantize "$target" "$f16_target.part" F16 "$threads" > /dev/null
    mv "$f16_target.part" "$f16_target"
  fi
  target=$f16_target
fi

out=${OUT:-.cache/bench/speculative-$(date +%Y%m%d-%H%M%S).jsonl}
logs=${out%.jsonl}-logs
mkdir -p "$(dirname "$out")" "$logs"
: > "$out"

# "repeat" asks for its text again, which the raw target does not do (it
# loops a sentence of its own); "fix" asks for code back with one bug
# fixed, and its completion copies the input: the case prompt lookup is for.
names=(palindrome quicksort hashtable repeat fix)
prompts=(
  "Write a Python function that checks whether a string is a palindrome."
  "def quicksort(arr):"
  "Explain what a hash table is."
  "Repeat the following text exactly, twice.

Memory bandwidth, not arithmetic, bounds the speed of a language model that decodes one token at a time on a CPU: every weight is read once per step, and the multiply-adds wait for the bytes. Speculative decoding spends that slack by verifying several drafted tokens in one step."
  "$(cat bench/speculative-fix-prompt.txt)"
)
[[ $which == code ]] && names=(palindrome quicksort) && prompts=("${prompts[@]:0:2}")
[[ $which == copy ]] && names=(repeat fix) && prompts=("${prompts[@]:3:2}")

record() {  # engine config prompt round json-fields...
  python3 - "$@" >> "$out" <<'PY'
import json, os, sys
engine, config, prompt, rnd, *fields = sys.argv[1:]
row = {"engine": engine, "config": config, "prompt": prompt, "round": int(rnd), "draft": os.environ["BENCH_DRAFT"]}
for f in fields:
    k, v = f.split("=", 1)
    try:
        row[k] = float(v)
    except ValueError:
        row[k] = v
print(json.dumps(row))
PY
}

# The pipeline's settings for one method (off, draft-model, prompt-lookup,
# both) on this run's target and draft, into the array pipeline_args.
set_pipeline_args() {
  pipeline_args=(pipelines/speculative-qwen.toml --set model.path="\"$PWD/$target\""
                 --set speculative.method="\"$1\"")
  [[ $1 == draft-model || $1 == both ]] &&
    pipeline_args+=(--set speculative.draft_model="\"$(realpath "$draft")\"")
  return 0
}

tessera_run() {  # config method prompt-name prompt round [extra tessera flags...]
  local config=$1 method=$2 name=$3 prompt=$4 round=$5 log="$logs/tessera-${1// /-}-$3-$5.json"
  shift 5
  set_pipeline_args "$method"
  "$tessera" bench "${pipeline_args[@]}" \
    --prompt "$prompt" --gen-tokens "$gen" --repeat 1 --threads "$threads" --json -q "$@" > "$log"
  python3 - "$log" "$config" "$name" "$round" >> "$out" <<'PY'
import json, os, sys
log, config, prompt, rnd = sys.argv[1:]
j = json.load(open(log))
s = j["speculation"]
print(json.dumps({"engine": "tessera", "config": config, "prompt": prompt, "round": int(rnd),
                  "draft": os.environ["BENCH_DRAFT"],
                  "tok_s": j["decode_tokens_per_s"]["median"], "decoded": j["gen_tokens"] - 1,
                  "drafted": s["drafted_tokens"], "accepted": s["accepted_tokens"],
                  "acceptance_rate": s["acceptance_rate"], "mean_acceptance_length": s["mean_acceptance_length"],
                  "turned_off": s["requests_turned_off"], "draft_ms": s["draft_ms"], "verify_ms": s["verify_ms"]}))
PY
}

llama_run() {  # tool config prompt-name prompt round
  local tool=$1 config=$2 name=$3 prompt=$4 round=$5 log="$logs/llama-$2-$3-$5.log"
  local args=(-m "$target" -p "$prompt" -n "$gen" -t "$threads" -c 4096 --temp 0 -s 42)
  case $tool in
    llama-speculative-simple) args+=(-md "$draft" -td "$threads" --spec-type draft-simple) ;;
    llama-speculative) args+=(-md "$draft" -td "$threads") ;;
  esac
  "$llama/$tool" "${args[@]}" > "$log" 2>&1 || { echo "warning: $tool failed, see $log" >&2; return 0; }
  python3 - "$log" "$config" "$name" "$round" >> "$out" <<'PY'
import json, os, re, sys
log, config, prompt, rnd = sys.argv[1:]
text = open(log, errors="replace").read()
dec = re.findall(r"decoded\s+(\d+)\s+tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", text)
row = {"engine": "llama.cpp", "config": config, "prompt": prompt, "round": int(rnd), "draft": os.environ["BENCH_DRAFT"]}
if dec:
    row["decoded"], row["tok_s"] = int(dec[-1][0]), float(dec[-1][2])
for key, name in (("n_drafted", "drafted"), ("n_accept", "accepted")):
    m = re.findall(key + r"\s*=\s*(\d+)", text)
    if m:
        row[name] = int(m[-1])
if row.get("drafted"):
    row["acceptance_rate"] = row["accepted"] / row["drafted"]
print(json.dumps(row))
PY
}

llama_alone() {  # round
  local log="$logs/llama-alone-$1.json"
  "$llama/llama-bench" -m "$target" -p 0 -n "$gen" -t "$threads" -r 1 -o json > "$log" 2>/dev/null
  local tps
  tps=$(python3 -c "import json; print(json.load(open('$log'))[0]['avg_ts'])")
  for name in "${names[@]}"; do record llama.cpp alone "$name" "$1" tok_s="$tps" decoded="$gen"; done
}

bandwidth() { "$tessera" bench pipelines/quickstart.toml --prompt-tokens 8 --gen-tokens 8 --repeat 1 --threads "$threads" --json -q \
  | python3 -c "import json,sys; print(round(json.load(sys.stdin)['read_bytes_per_s'] / 1e9, 1))"; }

bw_before=$(bandwidth)
echo "target $target, draft $draft, $gen tokens, $threads threads, $rounds rounds; read bandwidth ${bw_before} GB/s"
for ((round = 1; round <= rounds; ++round)); do
  llama_alone "$round"
  for i in "${!names[@]}"; do
    name=${names[$i]} prompt=${prompts[$i]}
    echo "round $round: $name"
    tessera_run alone off "$name" "$prompt" "$round"
    llama_run llama-speculative-simple speculative-simple "$name" "$prompt" "$round"
    tessera_run draft-model draft-model "$name" "$prompt" "$round"
    llama_run llama-speculative speculative "$name" "$prompt" "$round"
    tessera_run prompt-lookup prompt-lookup "$name" "$prompt" "$round"
    llama_run llama-lookup lookup "$name" "$prompt" "$round"
    tessera_run both both "$name" "$prompt" "$round"
    # The seeds' sampling settings: the speedup and acceptance with sampling.
    # (top_k 40 and min_p 0.05 stay at their defaults, llama.cpp's too.)
    sampling=(--set decoding.plugin=sampling --set sampling.temperature=0.7 --set sampling.top_p=0.9
              --set sampling.seed=42)
    tessera_run "sampling alone" off "$name" "$prompt" "$round" "${sampling[@]}"
    tessera_run "sampling both" both "$name" "$prompt" "$round" "${sampling[@]}"
  done
done
bw_after=$(bandwidth)

python3 - "$out" "$bw_before" "$bw_after" "$target" <<'PY'
import json, statistics, sys
out, bw0, bw1, target = sys.argv[1:]
rows = [json.loads(l) for l in open(out)]
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
print(f"\n{target}; read bandwidth {bw0} GB/s before, {bw1} GB/s after; medians over rounds\n")
print("| prompt | engine | config | tok/s | acceptance rate | mean acceptance length | speedup over its target alone |")
print("|---|---|---|---|---|---|---|")
for prompt in dict.fromkeys(r["prompt"] for r in rows):
    for engine in ("tessera", "llama.cpp"):
        sel = [r for r in rows if r["prompt"] == prompt and r["engine"] == engine]
        for config in dict.fromkeys(r["config"] for r in sel):
            base = "sampling alone" if config.startswith("sampling") else "alone"
            alone = med([r.get("tok_s") for r in sel if r["config"] == base])
            rs = [r for r in sel if r["config"] == config]
            tps = med([r.get("tok_s") for r in rs])
            acc = med([r.get("acceptance_rate") for r in rs])
            mal = med([r.get("mean_acceptance_length") for r in rs])
            tps_s = f"{tps:.1f}" if tps else "-"
            acc_s = f"{100 * acc:.0f}%" if acc is not None and config != base else "-"
            mal_s = f"{mal:.2f}" if mal else "-"
            sp = f"{tps / alone:.2f}x" if tps and alone and config != base else "-"
            off = sum(1 for r in rs if r.get("turned_off"))
            note = f" (off in {off}/{len(rs)})" if off else ""
            print(f"| {prompt} | {engine} | {config} | {tps_s} | {acc_s}{note} | {mal_s} | {sp} |")
PY
echo "rows: $out; logs: $logs/"

# Exactness on the real pair: each method's greedy ids against the target
# alone's, for every prompt. The prompts run as one batch (`tessera run
# --prompts-file`), so the requests share decode steps and this also checks
# that a request's ids do not depend on what runs beside it. Rows
# {"config": "ids METHOD", "ids_match": ...} go to OUT; a mismatch fails the
# script.
requests="$logs/ids-requests.jsonl"
python3 - "$gen" "${prompts[@]}" > "$requests" <<'PY'
import json, sys
gen = int(sys.argv[1])
for prompt in sys.argv[2:]:
    print(json.dumps({"prompt": prompt, "max_tokens": gen}))
PY
for method in off draft-model prompt-lookup both; do
  set_pipeline_args "$method"
  "$tessera" run "${pipeline_args[@]}" --prompts-file "$requests" \
    --output "$logs/ids-$method.jsonl" --threads "$threads" -q > /dev/null
done
python3 - "$logs" "$out" "${names[@]}" <<'PY'
import json, os, sys
logs, out, *names = sys.argv[1:]
def ids(method):
    rows = [json.loads(l) for l in open(f"{logs}/ids-{method}.jsonl")]
    return {r["index"]: r["token_ids"] for r in rows}
alone = ids("off")
parted = []
with open(out, "a") as f:
    for method in ("draft-model", "prompt-lookup", "both"):
        got = ids(method)
        for i, name in enumerate(names):
            match = got.get(i) == alone.get(i)
            if not match:
                parted.append(f"{method} on {name}")
            f.write(json.dumps({"engine": "tessera", "config": f"ids {method}", "prompt": name,
                                "draft": os.environ["BENCH_DRAFT"], "ids_match": match,
                                "tokens": len(alone.get(i, []))}) + "\n")
if parted:
    print("greedy ids differ from the target alone's: " + ", ".join(parted))
    sys.exit(1)
print(f"greedy ids: every method's equal the target alone's on all {len(names)} prompts (one batch each)")
PY
