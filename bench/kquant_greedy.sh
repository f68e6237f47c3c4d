#!/usr/bin/env bash
# Greedy ids of Tessera against llama.cpp's on one GGUF file (issue 20:
# "partings only at near-ties, margins reported"): the 24 golden prompts of
# tests/integration/golden_f32_ids.inc, 64 tokens each, through
# `tessera run --prompts-file` and llama.cpp's own greedy loop
# (.cache/llama-cpp/greedy_ids, built by tools/llama-cpp-reference/build.sh),
# which prints its ids and its top-2 logit margin at every step. Per prompt:
# identical to the end, or the step where the two part and llama.cpp's margin
# there.
# Usage: bench/kquant_greedy.sh MODEL.gguf [ACTIVATIONS]
#   ACTIVATIONS: Tessera's quant.activations (q8x2 default, q8 = llama.cpp's
#   arithmetic, f32). llama.cpp takes minutes per prompt on a 1.5B file.
# Environment: PROMPTS, a JSONL file of prompts in `tessera run --prompts-file`
#   form to use instead of the golden ones (e.g. plain text for a model without
#   a chat template); PIPELINE (pipelines/quickstart.toml) to run them through.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/kquant_greedy.sh MODEL.gguf [ACTIVATIONS]}
activations=${2:-}
tessera=${TESSERA:-build/bin/tessera}
greedy_ids=${GREEDY_IDS:-.cache/llama-cpp/greedy_ids}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The golden table's prompts and chat flags as a prompts file.
if [[ -n ${PROMPTS:-} ]]; then
  cp "$PROMPTS" "$work/prompts.jsonl"
else
python3 - tests/integration/golden_f32_ids.inc > "$work/prompts.jsonl" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
for prompt, chat in re.findall(r'^\s*\{("(?:[^"\\]|\\.)*"), (true|false),\s*$', text, re.M):
    print(json.dumps({"prompt": json.loads(prompt), "chat": chat == "true", "max_tokens": 64}))
PY
fi

set_activations=()
[[ -n $activations ]] && set_activations=(--set "quant.activations=\"$activations\"")
"$tessera" run "${PIPELINE:-pipelines/quickstart.toml}" --set "model.path=\"$(realpath "$model")\"" --set run.context=512 \
  --set run.stream=false -q "${set_activations[@]}" --prompts-file "$work/prompts.jsonl" \
  --output "$work/tessera.jsonl" > /dev/null
python3 -c 'import json, sys
for o in sorted(map(json.loads, open(sys.argv[1])), key=lambda o: o["index"]): print(*o["prompt_ids"])' \
  "$work/tessera.jsonl" > "$work/prompt_ids.txt"
"$greedy_ids" "$model" 64 < "$work/prompt_ids.txt" > "$work/llama.txt" 2> "$work/llama.err"

python3 - "$work/tessera.jsonl" "$work/llama.txt" <<'PY'
import json, statistics, sys
ours = sorted(map(json.loads, open(sys.argv[1])), key=lambda o: o["index"])
lines = open(sys.argv[2]).read().split("\n")
margins_at_parting = []
for i, o in enumerate(ours):
    ids = [int(t) for t in lines[2 * i].split()]
    margins = [float(m) for m in lines[2 * i + 1].split()]
    # llama.cpp prints the end token, Tessera's token_ids leave it out.
    part = next((k for k, (a, b) in enumerate(zip(o["token_ids"], ids)) if a != b), None)
    if part is None:
        print(f"prompt {i + 1}: identical for {min(len(ids), len(o['token_ids']))} steps")
    else:
        margins_at_parting.append(margins[part])
        print(f"prompt {i + 1}: parts at step {part}, llama.cpp's margin there {margins[part]:.3f}")
n = len(ours)
print(f"{n - len(margins_at_parting)} of {n} identical to the end", end="")
if margins_at_parting:
    print(f"; partings at margins median {statistics.median(margins_at_parting):.3f}, "
          f"max {max(margins_at_parting):.3f}", end="")
print()
PY
