#!/usr/bin/env bash
# Decode cost against context (issue 19): a recurrent model's step costs the
# same at any length, a Transformer's grows with the K/V its attention reads.
# For each model, `tessera bench` decodes GEN tokens after prompts of each
# length in CONTEXTS and reports ms per decode token (median of REPEAT runs)
# and the bytes a step reads (weights, plus K/V or state).
#
# Models: .gguf paths (arguments). Pair a Mamba file with a Transformer of
# similar weight bytes, e.g. a random mamba-130m at Q4_1
# (tools/scale-model/make_mamba_gguf.py, then llama-quantize) with the
# default model (SmolLM2-135M Q4_1, whose trained context is 8192).
#
# Environment: CONTEXTS (default "128 1024 4096 8192"), GEN (32), REPEAT (3),
# THREADS (2), TESSERA (build/bin/tessera), OUT (.cache/bench/mamba-context-<date>.jsonl).
#
# Usage: bench/mamba_context.sh MODEL.gguf [MODEL.gguf...]
set -euo pipefail
cd "$(dirname "$0")/.."
(($#)) || { sed -n '2,17p' "$0"; exit 2; }

read -r -a contexts <<< "${CONTEXTS:-128 1024 4096 8192}"
gen=${GEN:-32}
repeat=${REPEAT:-3}
threads=${THREADS:-2}
tessera=${TESSERA:-${TESSERA_BUILD_DIR:-build}/bin/tessera}
out=${OUT:-.cache/bench/mamba-context-$(date +%Y%m%d-%H%M%S).jsonl}
mkdir -p "$(dirname "$out")"
: > "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

max_context=0
for c in "${contexts[@]}"; do ((c > max_context)) && max_context=$c; done

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for model in "$@"; do
  [[ -f $model ]] || { echo "error: $model is missing" >&2; exit 1; }
  pipeline="$tmp/$(basename "$model" .gguf).toml"
  cat > "$pipeline" <<TOML
[model]
path = "$(realpath "$model")"

[kvcache]
plugin = "contiguous"

[decoding]
plugin = "greedy"

[run]
prompt = "x"
context = $((max_context + gen + 16))
TOML
  for c in "${contexts[@]}"; do
    log="$tmp/run.json"
    "$tessera" bench "$pipeline" --prompt-tokens "$c" --gen-tokens "$gen" --repeat "$repeat" \
      --threads "$threads" --json -q > "$log"
    python3 - "$log" "$model" "$c" >> "$out" <<'PY'
import json, sys
log, model, ctx = sys.argv[1:]
d = json.load(open(log))
tok_s = d["decode_tokens_per_s"]["median"]
print(json.dumps({"model": model, "context": int(ctx), "decode_ms_per_token": 1000.0 / tok_s if tok_s else None,
                  "weight_bytes": d["weight_bytes"], "step_read_bytes": d["weight_bytes"] + d["kv_read_bytes"],
                  "read_bytes_per_s": d["read_bytes_per_s"]}))
PY
    tail -1 "$out"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by_model = collections.defaultdict(dict)
for r in rows:
    by_model[r["model"]][r["context"]] = r
contexts = sorted({r["context"] for r in rows})
print("\n| model | weights MiB | " + " | ".join(f"ms/token at {c}" for c in contexts) + " | last / first |")
print("|---|---|" + "---|" * len(contexts) + "---|")
for model, runs in by_model.items():
    ms = [runs[c]["decode_ms_per_token"] for c in contexts if c in runs]
    first = runs[contexts[0]]
    print(f"| {model.split('/')[-1]} | {first['weight_bytes'] / 2**20:.0f} | " +
          " | ".join(f"{m:.2f}" for m in ms) + f" | {ms[-1] / ms[0]:.2f}x |")
PY
echo "runs: $out"
