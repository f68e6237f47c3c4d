#!/usr/bin/env bash
# Real English texts from Debian packages (installed by scripts/install-deps.sh):
#   .cache/eval/jargon.txt  the Jargon File (jargon-text): perplexity
#   .cache/eval/kjv.txt     the King James Bible (bible-kjv-text, read by bible(1)
#                           without the verse references): calibration for
#                           `tessera quantize`, never scored
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache/eval

jargon_source=/usr/share/doc/jargon-text/jargon.txt.gz
jargon=.cache/eval/jargon.txt
if [[ -s $jargon ]]; then
  echo "fetch-eval-text: $jargon present"
elif [[ ! -f $jargon_source ]]; then
  echo "fetch-eval-text: $jargon_source is missing; install the Debian package jargon-text (scripts/install-deps.sh)" >&2
  exit 1
else
  zcat "$jargon_source" >"$jargon.tmp"
  mv "$jargon.tmp" "$jargon"
  echo "fetch-eval-text: wrote $jargon ($(wc -c <"$jargon") bytes)"
fi

kjv=.cache/eval/kjv.txt
if [[ -s $kjv ]]; then
  echo "fetch-eval-text: $kjv present"
elif ! command -v bible >/dev/null; then
  echo "fetch-eval-text: bible(1) is missing; install the Debian packages bible-kjv and bible-kjv-text (scripts/install-deps.sh)" >&2
  exit 1
else
  bible -f gen1:1-rev22:21 </dev/null | sed -E 's/^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ //' >"$kjv.tmp"
  mv "$kjv.tmp" "$kjv"
  echo "fetch-eval-text: wrote $kjv ($(wc -c <"$kjv") bytes)"
fi
