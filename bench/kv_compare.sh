#!/usr/bin/env bash
# Contiguous vs paged KV cache on the same batch workload and the same KV
# memory budget: throughput, latency percentiles, peak KV, waste, most
# sequences in flight. Both use the same attention kernel (ATTENTION, default
# paged, the default kernel; flash also reads both caches), so only the cache
# differs. Usage: bench/kv_compare.sh [BUDGET] [REQUESTS] [extra tessera bench flags...]
#   BUDGET   KV memory for both caches, default 512MiB
#   REQUESTS default 64 (prompts 16-512 tokens, generation 16-256 tokens, seed 1)
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-512MiB}
requests=${2:-64}
shift $(( $# > 2 ? 2 : $# ))
tessera=${TESSERA:-build/bin/tessera}
attention=${ATTENTION:-paged}
kv_dtype=${KV_DTYPE:-f32}   # f32 or f16, for both caches
element_bytes=$([ "$kv_dtype" = f16 ] && echo 2 || echo 4)
pipeline=pipelines/quickstart.toml
max_context=768   # the longest request: 512 prompt + 256 generated

# The contiguous cache reserves max_context tokens per sequence, so the budget
# buys budget / (max_context * KV bytes per token) sequences.
kv_bytes_per_token=$("$tessera" inspect models/SmolLM2-135M-Instruct.Q4_1.gguf --json | python3 -c '
import json, sys
h = json.load(sys.stdin)["hparams"]
print(2 * h["block_count"] * h["head_count_kv"] * h["head_dim"] * '"$element_bytes"')')
budget_bytes=$(python3 -c "
import re, sys
m = re.fullmatch(r'(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)?', '$budget')
scale = {'B': 1, None: 1, 'KiB': 1024, 'MiB': 1 << 20, 'GiB': 1 << 30}[m.group(2)]
print(int(float(m.group(1)) * scale))")
slots=$(( budget_bytes / (max_context * kv_bytes_per_token) ))
echo "KV budget $budget = $budget_bytes bytes; $kv_dtype, $kv_bytes_per_token bytes per token; attention $attention;" \
  "contiguous: $slots slots of $max_context tokens"

common=(--requests "$requests" --prompt-range 16:512 --gen-range 16:256 --set run.context=$max_context
        --set "kvcache.dtype=\"$kv_dtype\"" "$@")
echo; echo "== contiguous"
"$tessera" bench "$pipeline" "${common[@]}" --set kvcache.plugin=contiguous \
  --set kvcache.max_sequences=$slots --set kvcache.max_context=$max_context --set attention.plugin=$attention
echo; echo "== paged"
"$tessera" bench "$pipeline" "${common[@]}" --set kvcache.plugin=paged --set "kvcache.memory=\"$budget\"" \
  --set kvcache.block_size=16 --set attention.plugin=$attention
