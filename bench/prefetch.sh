#!/usr/bin/env bash
# Software prefetch in the 8- and 16-row kernels (the ggml plugin's
# `prefetch` parameter, docs/kernels.md "Reading ahead"): decode speed with
# it off, on, and chosen while running (auto, the default), in alternating
# rounds of one sitting, with the machine's read bandwidth (plain and reading
# ahead) that `tessera bench` measures beside each run.
#
# Usage: bench/prefetch.sh [MODEL.gguf ...]
#   default models: the default model (Q4_1), Qwen2.5-Coder-0.5B as fetched
#   (mostly Q5_0) and in Q4_0 (the speculative draft; scripts/fetch-qwen-pair.sh)
#   where present.
# Environment: ROUNDS (default 3), REPEAT (runs per bench, default 2),
#   THREADS (default 2), GEN (default 128), ACTIVATIONS (default: the
#   pipeline's, q8x2), TESSERA (default build/bin/tessera).
# Output: one line per run, then per model and mode the range of the rounds'
# medians; the JSON lines go to .cache/bench/prefetch-DATE.jsonl.
set -euo pipefail
models=()
for m in "$@"; do models+=("$(realpath "$m")"); done  # before the cd: paths as the caller gave them
cd "$(dirname "$0")/.."
tessera=${TESSERA:-${TESSERA_BUILD_DIR:-build}/bin/tessera}
rounds=${ROUNDS:-3} repeat=${REPEAT:-2} threads=${THREADS:-2} gen=${GEN:-128}
[[ -x $tessera ]] || { echo "prefetch.sh: $tessera not built (scripts/build.sh)" >&2; exit 1; }
if ((${#models[@]} == 0)); then
  for m in models/SmolLM2-135M-Instruct.Q4_1.gguf models/qwen2.5-coder-0.5b-instruct-q5_0.gguf \
           models/qwen2.5-coder-0.5b-instruct-q4_0.gguf; do
    [[ -f $m ]] && models+=("$PWD/$m")
  done
fi
((${#models[@]} > 0)) || { echo "prefetch.sh: no models (scripts/fetch-model.sh, scripts/fetch-qwen-pair.sh)" >&2; exit 1; }
mkdir -p .cache/bench
out=.cache/bench/prefetch-$(date -u +%Y%m%d-%H%M%S).jsonl
extra=()
[[ -n ${ACTIVATIONS:-} ]] && extra=(--set "quant.activations=\"$ACTIVATIONS\"")
echo "prefetch.sh: ${#models[@]} models, $rounds rounds, $threads threads, $(date -u +%H:%M) UTC; JSON lines in $out"
for ((r = 1; r <= rounds; r++)); do
  for model in "${models[@]}"; do
    # Odd rounds off first, even rounds auto first: a drifting host weighs on every mode.
    modes=(off on auto)
    ((r % 2 == 0)) && modes=(auto on off)
    for mode in "${modes[@]}"; do
      json=$("$tessera" bench pipelines/quickstart.toml --set "model.path=\"$model\"" \
        --set "quant.prefetch=\"$mode\"" "${extra[@]}" --prompt-tokens 16 --gen-tokens "$gen" \
        --repeat "$repeat" --threads "$threads" --json -q)
      python3 -c '
import json, sys
d = json.loads(sys.argv[1])
with open(sys.argv[5], "a") as out:
    out.write(json.dumps({"round": int(sys.argv[2]), "model": sys.argv[3], "mode": sys.argv[4], "bench": d}) + "\n")
print("round %s  %-42s %-4s decode %6.1f tok/s  probe %.1f GB/s (plainly %.1f)" % (sys.argv[2], sys.argv[3].split("/")[-1], sys.argv[4],
      d["decode_tokens_per_s"]["median"], d["read_bytes_per_s"] / 1e9, d["plain_read_bytes_per_s"] / 1e9))
' "$json" "$r" "$model" "$mode" "$out"
    done
  done
done
python3 - "$out" <<'EOF'
import json, sys
from collections import defaultdict
runs = [json.loads(line) for line in open(sys.argv[1])]
by = defaultdict(list)
for run in runs:
    by[(run["model"], run["mode"])].append(run["bench"]["decode_tokens_per_s"]["median"])
print("\n| model | off | on | auto |\n|---|---|---|---|")
for model in dict.fromkeys(run["model"] for run in runs):
    cells = ["%.1f-%.1f" % (min(by[(model, m)]), max(by[(model, m)])) for m in ("off", "on", "auto")]
    print("| %s | %s |" % (model.split("/")[-1], " | ".join(cells)))
EOF
