#!/usr/bin/env bash
# Real English text for perplexity: the Jargon File from Debian's jargon-text
# package (installed by scripts/install-deps.sh), unpacked to .cache/eval/jargon.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
source=/usr/share/doc/jargon-text/jargon.txt.gz
target=.cache/eval/jargon.txt
if [[ -s $target ]]; then
  echo "fetch-eval-text: $target present"
  exit 0
fi
if [[ ! -f $source ]]; then
  echo "fetch-eval-text: $source is missing; install the Debian package jargon-text (scripts/install-deps.sh)" >&2
  exit 1
fi
mkdir -p "$(dirname "$target")"
zcat "$source" >"$target.tmp"
mv "$target.tmp" "$target"
echo "fetch-eval-text: wrote $target ($(wc -c <"$target") bytes)"
