#!/usr/bin/env bash
# K-quant GGUFs against llama.cpp (issue 20): decode and prefill speed of
# Tessera and llama.cpp on the same files and cores, in alternating rounds of
# one sitting, with the machine's read bandwidth measured beside each round.
#
# Models (arguments, or the env MODELS, space-separated; default all five):
#   1.5b    models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf  (scripts/fetch-qwen-pair.sh)
#   0.5b    models/qwen2.5-coder-0.5b-instruct-q5_0.gguf    (Q5_0 with Q4_K/Q6_K/Q8_0 tensors)
#   q4_k_m  models/SmolLM2-135M-Instruct.Q4_K_M.gguf        (scripts/make-kquant-models.sh)
#   q5_k_m  models/SmolLM2-135M-Instruct.Q5_K_M.gguf
#   q6_k    models/SmolLM2-135M-Instruct.Q6_K.gguf
#   or the path of any other .gguf file.
#
# Each round runs, for every model in turn (Tessera first in odd rounds,
# llama.cpp first in even ones):
#   Tessera decode:  tessera bench P --prompt-tokens 16 --gen-tokens 128 --repeat R --json
#                    (decode tokens/s after the first token; the read bandwidth
#                    bench measures right after its runs, and the bytes a decode
#                    step reads, give decode's share of that bandwidth)
#   Tessera prefill: tessera bench P --prompt-tokens 512 --gen-tokens 0 --repeat R --json
#   llama.cpp:       llama-bench -m FILE -t THREADS -p 512 -n 128 -r R -o json (pp512, tg128)
# where P is a pipeline written to a temporary directory for the model
# (contiguous KV cache, paged attention, greedy; the pipelines/quickstart.toml
# settings). A round's figure is the median of Tessera's R runs and the median
# of llama-bench's R samples; the tables give the range over the rounds and
# the ratio of the two engines within each round (min-max and median), so a
# noisy shared host moves both sides of a ratio together.
#
# Environment:
#   ROUNDS       rounds (default 3)
#   REPEAT       runs per engine and test in a round (default 3)
#   THREADS      threads for both engines (default 2)
#   ACTIVATIONS  Tessera's activation formats, space-separated, one Tessera
#                column each (q8x2, q8, f32: --set quant.activations=...);
#                default: the pipeline's default (q8x2) only
#   GEN, DECODE_PROMPT, PREFILL   token counts (defaults 128, 16, 512)
#   TESSERA (default ${TESSERA_BUILD_DIR:-build}/bin/tessera),
#   LLAMA_BIN (default .cache/llama-cpp/build/bin, tools/llama-cpp-reference/build.sh)
#   LLAMA_MODEL  a file llama.cpp runs in place of the (one) model Tessera runs: a
#                format llama.cpp lacks against its nearest, e.g. Tessera's INT8
#                W8A8 file against a Q8_0 of the same weights (default: the same file)
#   OUT          the JSON lines of every run (default .cache/bench/kquant-<date>.jsonl),
#                and the raw outputs in the folder beside it (-logs for .jsonl)
#
# Usage: bench/kquant.sh [MODEL...]
#   ROUNDS=3 bench/kquant.sh                      # all five models
#   ROUNDS=1 REPEAT=1 GEN=32 PREFILL=128 bench/kquant.sh q4_k_m q5_k_m q6_k
#   ACTIVATIONS="q8x2 q8" bench/kquant.sh 1.5b
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-3}
repeat=${REPEAT:-3}
threads=${THREADS:-2}
gen=${GEN:-128}
decode_prompt=${DECODE_PROMPT:-16}
prefill=${PREFILL:-512}
source bench/kquant_models.sh  # models, activations, tessera, llama
if [[ -n ${LLAMA_MODEL:-} && ${#models[@]} -ne 1 ]]; then
  echo "error: LLAMA_MODEL stands in for one model; ${#models[@]} were given" >&2; exit 2
fi
for f in "$tessera" "$llama/llama-bench" "${models[@]}" ${LLAMA_MODEL:+"$LLAMA_MODEL"}; do
  [[ -e $f ]] || { echo "error: $f is missing (scripts/build.sh, tools/llama-cpp-reference/build.sh," \
                        "scripts/fetch-qwen-pair.sh, scripts/make-kquant-models.sh)" >&2; exit 1; }
done
for a in "${activations[@]}"; do
  case $a in default | q8x2 | q8 | f32) ;; *) echo "error: unknown activation format '$a'" >&2; exit 2 ;; esac
done

out=${OUT:-.cache/bench/kquant-$(date +%Y%m%d-%H%M%S).jsonl}
logs=${out%.jsonl}-logs
mkdir -p "$(dirname "$out")" "$logs"
: > "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A pipeline per model; the context holds the longer of the two workloads.
pipeline_of() {  # model -> path of its pipeline
  local p="$tmp/$(basename "$1" .gguf).toml"
  if [[ ! -f $p ]]; then
    cat > "$p" <<EOF
[model]
path = "$(realpath "$1")"

[kvcache]
plugin = "contiguous"

[attention]
plugin = "paged"

[decoding]
plugin = "greedy"

[run]
prompt = "x"
max_tokens = 16
context = $(( (prefill > decode_prompt + gen ? prefill : decode_prompt + gen) + 16 ))
EOF
  fi
  echo "$p"
}

tessera_round() {  # model round
  local model=$1 round=$2 name
  name=$(basename "$model" .gguf)
  for act in "${activations[@]}"; do
    local set=()
    [[ $act != default ]] && set=(--set "quant.activations=\"$act\"")
    local dlog="$logs/tessera-$name-$act-decode-$round.json" plog="$logs/tessera-$name-$act-prefill-$round.json"
    "$tessera" bench "$(pipeline_of "$model")" --prompt-tokens "$decode_prompt" --gen-tokens "$gen" \
      --repeat "$repeat" --threads "$threads" --json -q "${set[@]}" > "$dlog"
    "$tessera" bench "$(pipeline_of "$model")" --prompt-tokens "$prefill" --gen-tokens 0 \
      --repeat "$repeat" --threads "$threads" --json -q "${set[@]}" > "$plog"
    python3 - "$dlog" "$plog" "$model" "$act" "$round" >> "$out" <<'PY'
import json, sys
dlog, plog, model, act, rnd = sys.argv[1:]
d, p = json.load(open(dlog)), json.load(open(plog))
tok_s = d["decode_tokens_per_s"]["median"]
step_bytes = d["weight_bytes"] + d["kv_read_bytes"]
bw = d["read_bytes_per_s"]
base = {"engine": "tessera", "config": act, "model": model, "round": int(rnd)}
print(json.dumps({**base, "test": "decode", "tok_s": tok_s, "step_bytes": step_bytes, "read_bytes_per_s": bw,
                  "share": tok_s * step_bytes / bw if bw else None, "huge_page_bytes": d["huge_page_bytes"]}))
print(json.dumps({**base, "test": "prefill", "tok_s": p["prefill_tokens_per_s"]["median"]}))
PY
  done
}

llama_round() {  # model round
  local model=$1 round=$2 log
  log="$logs/llama-$(basename "$model" .gguf)-$round.json"
  "$llama/llama-bench" -m "${LLAMA_MODEL:-$model}" -t "$threads" -p "$prefill" -n "$gen" -r "$repeat" -o json > "$log" 2> "${log%.json}.err"
  python3 - "$log" "$model" "$round" >> "$out" <<'PY'
import json, statistics, sys
log, model, rnd = sys.argv[1:]
for t in json.load(open(log)):
    test = "prefill" if t["n_prompt"] else "decode"
    print(json.dumps({"engine": "llama.cpp", "config": "llama.cpp", "model": model, "round": int(rnd), "test": test,
                      "tok_s": statistics.median(t["samples_ts"]), "build": t["build_commit"]}))
PY
}

# Both engines spin on their cores: another process on the same cores moves
# llama.cpp's decode by several times (docs/kernels.md, "OpenMP on a shared
# machine"), so the load average is printed before and after (which counts
# the benchmark's own two threads), with a warning when it was above 0.5 before.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "K-quant benchmark: ${models[*]}"
echo "load average before: $load_before"
echo "$rounds round(s); $threads threads; Tessera ${activations[*]}; decode $gen tokens after $decode_prompt," \
  "prefill $prefill; $repeat runs per engine and test in a round"
for ((round = 1; round <= rounds; ++round)); do
  for model in "${models[@]}"; do
    echo "round $round/$rounds: $(basename "$model")"
    if ((round % 2)); then
      tessera_round "$model" "$round"; llama_round "$model" "$round"
    else
      llama_round "$model" "$round"; tessera_round "$model" "$round"
    fi
  done
done

python3 - "$out" "$gen" "$decode_prompt" "$prefill" "$threads" "$repeat" "$load_before" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "${models[@]}" <<'PY'
import json, os, statistics, sys
out, gen, decode_prompt, prefill, threads, repeat, load_before, load_after, *models = sys.argv[1:]
rows = [json.loads(l) for l in open(out)]

def span(xs, fmt):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    lo, hi = fmt(min(xs)), fmt(max(xs))
    return lo if lo == hi else f"{lo}-{hi}"

def target(model, test):  # issue 20's figures
    name = os.path.basename(model).lower()
    if test == "share":
        return ">= 80%" if "1.5b" in name else "-"
    if test == "prefill":
        return ">= 2x"
    return ">= 1.3x" if "1.5b" in name else ">= 1.5x"

builds = sorted({r["build"] for r in rows if r.get("build")})
print(f"\nllama.cpp build {', '.join(builds) or '?'}; {threads} threads; figures: the median of {repeat} runs"
      " in a round, the range over rounds; ratio: Tessera / llama.cpp within each round;"
      f" load average {load_before} before, {load_after} after (with this benchmark's own load)")
if float(load_before.split()[0]) > 0.5:  # the one after counts this script's own runs
    print("warning: other processes were running on this machine; the figures are not comparable", file=sys.stderr)
for model in models:
    sel = [r for r in rows if r["model"] == model]
    configs = list(dict.fromkeys(r["config"] for r in sel if r["engine"] == "tessera"))
    rounds = sorted({r["round"] for r in sel})
    def values(config, test, key="tok_s"):
        return {r["round"]: r.get(key) for r in sel if r["config"] == config and r["test"] == test}
    label = lambda c: "Tessera" + ("" if c == "default" else f" {c}")
    size = os.path.getsize(model) / 1e6
    hp = [r.get("huge_page_bytes") for r in sel if r["test"] == "decode" and r.get("huge_page_bytes") is not None]
    print(f"\n### {os.path.basename(model)} ({size:.0f} MB; {len(rounds)} round{'s' if len(rounds) != 1 else ''};"
          f" Tessera's weights on huge pages: {span([h / 2**20 for h in hp], lambda x: f'{x:.0f}')} MiB)\n")
    if os.environ.get("LLAMA_MODEL"):
        stand_in = os.environ["LLAMA_MODEL"]
        print(f"llama.cpp ran {os.path.basename(stand_in)} ({os.path.getsize(stand_in) / 1e6:.0f} MB) in its place\n")
    head = [label(c) for c in configs] + ["llama.cpp"] + [f"{label(c)} / llama.cpp" for c in configs] + ["issue 20"]
    print("| | " + " | ".join(head) + " |")
    print("|---" * (len(head) + 1) + "|")
    for test, what in (("decode", f"decode tok/s, {gen} tokens after {decode_prompt}"),
                       ("prefill", f"prefill tok/s, {prefill} tokens")):
        ll = values("llama.cpp", test)
        cells = [span(values(c, test).values(), lambda x: f"{x:.1f}") for c in configs]
        cells.append(span(ll.values(), lambda x: f"{x:.1f}"))
        for c in configs:
            ts = values(c, test)
            ratios = [ts[r] / ll[r] for r in rounds if ts.get(r) and ll.get(r)]
            cell = span(ratios, lambda x: f"{x:.2f}")
            cell += "x" if ratios else ""
            if len(ratios) > 2:
                cell += f" (median {statistics.median(ratios):.2f}x)"
            cells.append(cell)
        cells.append(target(model, test))
        print(f"| {what} | " + " | ".join(cells) + " |")
    cells = [span(values(c, "decode", "share").values(), lambda x: f"{100 * x:.0f}%") for c in configs]
    print("| decode's share of the read bandwidth | " + " | ".join(cells + ["-"] * (len(configs) + 1))
          + f" | {target(model, 'share')} |")
    cells = [span([b / 1e9 for b in values(c, "decode", "read_bytes_per_s").values() if b], lambda x: f"{x:.1f}")
             for c in configs]
    print("| read bandwidth, GB/s (measured after each decode run) | " + " | ".join(cells + ["-"] * (len(configs) + 2))
          + " |")
PY
echo
echo "rows: $out; raw outputs: $logs/"
