#!/usr/bin/env bash
# Decode throughput of N concurrent sequences against one sequence, on the
# same pipeline: 16-token prompts, 128 generated tokens each, greedy. The
# figure is `tessera bench`'s "decode tokens/s": tokens of the steps without a
# prompt chunk over those steps' time, so the N prompts' prefill is not
# counted against the batch (nor the one prompt's against the single run).
# The two runs alternate PAIRS times and each pair gives a ratio, so a noisy
# shared machine moves both sides of a ratio together; the median is printed.
# Usage: bench/batch_scaling.sh [N] [PAIRS] [extra tessera bench flags...]
#   N      concurrent sequences, default 8
#   PAIRS  default 5
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-8}
pairs=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
tessera=${TESSERA:-build/bin/tessera}
common=(pipelines/quickstart.toml --prompt-range 16:16 --gen-range 128:128 --set run.context=512
        --set kvcache.plugin=paged --set attention.plugin=paged "$@")

throughput() {  # decode tokens/s of one bench run with $1 requests
  "$tessera" bench "${common[@]}" --requests "$1" | awk '/decode tokens\/s/ { print $3 }'
}

ratios=()
for ((i = 1; i <= pairs; ++i)); do
  one=$(throughput 1)
  many=$(throughput "$n")
  ratio=$(python3 -c "print(f'{$many / $one:.2f}')")
  ratios+=("$ratio")
  echo "pair $i: 1 sequence $one tok/s, $n sequences $many tok/s, ratio $ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END { print "median ratio " r[int((NR + 1) / 2)] " over " NR " pairs" }'
